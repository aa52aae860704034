"""A reader's second visit in Debian's chromium: the service worker (offline.js) keeps the
build's runtime files in the cache of the build's revision and the worker keeps its start
(worker.js: Python's memory after boot, the installed packages with the imports' bytecode), so
the revisit's first result asks the server for none of the runtime's files, and gives the same
numbers; a rebuilt site (a new revision) is served fresh and drops the old cache.

Requests to any other host fail: chromium resolves none (Playwright's request interception,
which the other browser tests use, would bypass the service worker)."""

from __future__ import annotations

import json
import re
import shutil
import threading

import pytest

from docs_build.runtime import lock as runtime_lock
from docs_build.runtime import site as runtime_site
from docs_build.text.languages import LANGUAGES
from docs_build.text.ui import load_ui
from tests import hosts
from tests.conftest import CHROMIUM_ARGS, QuietHandler, serve_directory
from tests.docs_build.runtime.test_browser import LOAD_TIMEOUT, PROMPT, ROOT

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(hosts.HOST != "mkdocs", reason="runs once, under MkDocs")]

OFFLINE_ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
PAGE = "steps/embed/"
# what a page gets from the server at every visit: which build it is of (build.js, read by
# glassllm.js), the page's stylesheet, and the service worker's module, which the browser
# fetches to see whether the site has a new service worker (a refusal keeps the one it has)
ALWAYS_FRESH = ("/assets/runtime/build.js", "/assets/runtime/glassllm.js",
                "/assets/runtime/runtime.css", "/assets/runtime/offline.js")
RUN = """async (text) => {
  const { tokens, records, timing } = await glassllm.run(text);
  const info = await glassllm.load();
  return { tokens, last: Array.from(records[records.length - 1].values), kept: info.timing.kept,
           wheels: info.timing.wheels, revision: window.glassllmRuntime.revision };
}"""
# what a revisit restored from the kept memory must still do as the first visit did: generate
# (the KV cache), and modules the load never imported (glassllm.recording, and numpy.random's
# compiled modules for sampling: loaded after the kept ones were linked again)
LATER = """async (text) => {
  const greedy = await glassllm.generate(text, 4, { greedy: true });
  const sampled = await glassllm.record(text, 3, { greedy: false, seed: 1 });
  return { greedy: greedy.steps.map((step) => step.token), sampled: sampled.generated,
           events: sampled.events };
}"""
# the "cached" event of glassllm.js, noted from the start of every page
CACHED = """document.addEventListener("DOMContentLoaded", () => {
  glassllm.addEventListener("cached", (event) => { window.glassllmCached = event.detail; });
});"""
# the origin's caches once the page's revision is kept: {cache name: [path from the root]};
# kept means the service worker of this revision answered the page ("cached") and the runtime's
# worker stored its start. Page.evaluate has no timeout: past KEPT_WAIT ms it throws what it saw.
KEPT_WAIT = 120_000
KEPT = """async ([revision, wait]) => {
  const name = "glassllm-runtime-" + revision;
  const until = Date.now() + wait;
  for (;;) {
    const names = await caches.keys();
    const urls = names.includes(name)
      ? (await (await caches.open(name)).keys()).map((request) => request.url) : [];
    const cached = window.glassllmCached;
    if (cached && cached.revision === revision && !cached.stale && !cached.error
        && urls.some((url) => url.endsWith("/python-memory"))
        && urls.some((url) => url.endsWith("/site-packages"))) break;
    if (Date.now() > until) {
      const estimate = navigator.storage ? await navigator.storage.estimate() : null;
      throw new Error("not kept in " + wait + " ms: " + JSON.stringify({ cached, names,
        kept: urls.filter((url) => url.includes("glassllm-start")), estimate }));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const out = {};
  for (const key of await caches.keys()) {
    out[key] = (await (await caches.open(key)).keys()).map((request) => new URL(request.url).pathname);
  }
  return out;
}"""
KEPT_BYTES = """async ([revision, path]) => {
  const response = await (await caches.open("glassllm-runtime-" + revision)).match(new URL(path, location.href).href);
  return response ? Array.from(new Uint8Array(await response.arrayBuffer())) : null;
}"""


class Server(QuietHandler):
    """Notes the runtime's requests; while ``down``, refuses them (503) but ALWAYS_FRESH."""

    requests: list[str] = []
    down = threading.Event()

    def send_head(self):
        path = self.path.split("?")[0]
        if "/assets/runtime/" in path:
            self.requests.append(path)
            if self.down.is_set() and path not in ALWAYS_FRESH:
                self.send_error(503, "the server is down for this test")
                return None
        return super().send_head()

    def end_headers(self):
        # every response revalidated: what the browser's HTTP cache keeps is not under test
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()


@pytest.fixture(scope="module")
def offline_browser(browser):
    """A chromium that resolves no host but 127.0.0.1 (the session's, relaunched)."""
    launched = browser.browser_type.launch(executable_path=browser_executable(),
                                           args=CHROMIUM_ARGS + OFFLINE_ARGS)
    yield launched
    launched.close()


def browser_executable() -> str:
    from tests.conftest import CHROMIUM

    return CHROMIUM if shutil.os.path.exists(CHROMIUM) else shutil.which("chromium")


def kept(page, revision: str, console: list[str]) -> dict:
    """KEPT on ``page``; its failure carries the page's console messages (the runtime's worker
    says there why it kept nothing)."""
    try:
        return page.evaluate(KEPT, [revision, KEPT_WAIT])
    except Exception as error:
        raise AssertionError(f"{error}; console: {console}") from None


def build_data(site_dir) -> dict:
    text = (site_dir / runtime_site.RUNTIME_DIR / "build.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("{"):text.rindex(";")])


def rebuild_runtime(site_dir) -> None:
    """The runtime's files of another build, written over the site's: the docs build's own
    runtime_files with one worked-numbers string changed (it goes into worked.zip, so into the
    revision)."""
    ui = {lang.code: load_ui(ROOT / "docs", lang) for lang in LANGUAGES}
    key = next(key for key in sorted(ui["en"]) if key.startswith("worked."))
    ui["en"][key] += " (rebuilt)"
    files = runtime_site.runtime_files(runtime_lock.pyodide_sources(ROOT), ROOT / "glassllm", ui,
                                       {lang.html_lang: lang.code for lang in LANGUAGES})
    for uri, content in files.items():
        (site_dir / uri).parent.mkdir(parents=True, exist_ok=True)
        (site_dir / uri).write_bytes(content)


def test_a_revisit_starts_from_the_kept_runtime_and_a_new_build_is_served_fresh(
        offline_browser, site, tmp_path):
    served = tmp_path / "site"
    shutil.copytree(site.dir, served)
    first_revision = build_data(served)["revision"]
    del Server.requests[:]
    Server.down.clear()
    with serve_directory(served, Server) as url:
        context = offline_browser.new_context(viewport={"width": 390, "height": 844})
        context.set_default_timeout(LOAD_TIMEOUT)
        outside, errors = [], []
        origin = re.match(r"https?://[^/]+", url).group(0)
        context.on("request", lambda r: r.url.startswith((origin, "data:", "blob:"))
                   or outside.append(r.url))
        try:
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            console = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.add_init_script(CACHED)
            page.goto(url + PAGE)

            # first visit: from the server; then the revision's cache holds every listed file
            # (bytes checked against the build's sha256) and the worker's start
            first = page.evaluate(RUN, PROMPT)
            assert first["revision"] == first_revision
            assert first["kept"] == {"memory": False, "packages": False}
            later = page.evaluate(LATER, PROMPT)
            caches = kept(page, first_revision, console)
            assert list(caches) == [f"glassllm-runtime-{first_revision}"]
            cached = page.evaluate("() => window.glassllmCached")
            assert cached["revision"] == first_revision and cached["refused"] == []
            sw = (served / runtime_site.SERVICE_WORKER).read_text(encoding="utf-8")
            listed = json.loads(sw[sw.index("serviceWorker(self, ") + 20:sw.rindex(");")])["files"]
            held = set(caches[f"glassllm-runtime-{first_revision}"])
            assert {f"/{path}" for path in listed} <= held

            # revisit, the server refusing every runtime file: the same numbers, from the kept
            # start, without asking the server for any of them
            Server.down.set()
            del Server.requests[:]
            page.reload()
            again = page.evaluate(RUN, PROMPT)
            assert [path for path in Server.requests if path not in ALWAYS_FRESH] == []
            assert again["kept"] == {"memory": True, "packages": True}
            assert again["tokens"] == first["tokens"] and again["last"] == first["last"]
            assert page.evaluate(LATER, PROMPT) == later
            # another page of the site, the same
            other = context.new_page()
            other.goto(url + "pt/")
            assert other.evaluate(RUN, PROMPT)["last"] == first["last"]
            assert [path for path in Server.requests if path not in ALWAYS_FRESH] == []
            other.close()

            # a rebuilt site: the page of the new build gets its files from the server, starts
            # from scratch, and once kept, the new revision's cache is the only one, with the
            # new build's bytes
            Server.down.clear()
            rebuild_runtime(served)
            second_revision = build_data(served)["revision"]
            assert second_revision != first_revision
            del Server.requests[:]
            page.reload()
            fresh = page.evaluate(RUN, PROMPT)
            assert fresh["revision"] == second_revision
            assert fresh["kept"] == {"memory": False, "packages": False}
            assert fresh["last"] == first["last"]
            asked = set(Server.requests)
            assert {"/assets/runtime/pyodide/pyodide.asm.wasm",
                    "/assets/runtime/lock.json", "/assets/runtime/bridge.py"} <= asked
            caches = kept(page, second_revision, console)
            assert list(caches) == [f"glassllm-runtime-{second_revision}"]
            worked = f"{runtime_site.RUNTIME_DIR}/{runtime_site.WORKED_FILE}"
            assert bytes(page.evaluate(KEPT_BYTES, [second_revision, "/" + worked])) \
                == (served / worked).read_bytes()
            assert outside == [] and errors == []
        finally:
            context.close()


# the kept packages of a revision replaced by bytes that are no kept packages
SPOIL_PACKAGES = """async (revision) => {
  const cache = await caches.open("glassllm-runtime-" + revision);
  const key = (await cache.keys()).find((request) => request.url.endsWith("/site-packages"));
  await cache.put(key, new Response(new Uint8Array([9, 0, 0, 0, 1, 2, 3])));
}"""


def test_kept_packages_that_do_not_unpack_are_dropped_and_the_wheels_installed_again(
        offline_browser, site):
    """A revisit whose kept packages are broken (a browser that lost part of its storage)
    starts from scratch: the worker fetches the lock's wheels and unzips them itself, as on a
    first visit, with the same numbers, and keeps a new start."""
    with serve_directory(site.dir, Server) as url:
        context = offline_browser.new_context()
        context.set_default_timeout(LOAD_TIMEOUT)
        try:
            page = context.new_page()
            console = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.add_init_script(CACHED)
            page.goto(url + PAGE)
            first = page.evaluate(RUN, PROMPT)
            assert first["wheels"] == "wheels.js"
            kept(page, first["revision"], console)
            page.evaluate(SPOIL_PACKAGES, first["revision"])
            page.reload()
            again = page.evaluate(RUN, PROMPT)
            assert again["kept"] == {"memory": False, "packages": False}
            assert again["wheels"] == "wheels.js"  # the wheels of the service worker's cache
            assert again["last"] == first["last"] and again["tokens"] == first["tokens"]
            assert any("did not restore" in line for line in console), console
        finally:
            context.close()
