"""The browser runtime in Debian's chromium, on the session's built site, every request to
another host aborted: the documented model runs in the page's worker with the native run's
numbers, loads nothing until asked, can be cancelled, refuses bytes that are not the build's,
shows the engine's own errors, and says on a page opened from disk to serve the folder."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from docs_build.text.languages import LANGUAGES
from docs_build.text.ui import load_ui
from docs_build.runtime import wheel as runtime_wheel
from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer, lessons, load_tokenizer
from tests import hosts
from tests.conftest import PageWatch, serve_directory
from tests.docs_build.test_phone import PHONE, WIDEST

# the demo's own tokens (its tokenizer.json), and the labels its chips show
TOKENIZER = load_tokenizer(DEMO_CHECKPOINT)
encode = TOKENIZER.encode


def token_label(token: int) -> str:
    return TOKENIZER.labels([token])[0]


# The runtime's files are the same bytes under either docs host (test_site_files checks the
# session's build holds them), so the browser runs them once, on the MkDocs build.
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(hosts.HOST != "mkdocs", reason="runs once, under MkDocs")]

ROOT = Path(__file__).resolve().parents[3]
PROMPT = "The cat sat"
LOAD_TIMEOUT = 180_000  # ms: Pyodide's first start on a loaded 2-core machine takes seconds
# what a page loads before anyone asks: the runtime's entry and data, and where the page has
# a run panel, its code (panel.js, which imports records.js) and style
RUNTIME_FILES = re.compile(r"/assets/runtime/(?!(build|glassllm|panel|records)\.js$|runtime\.css$)")
UI = {lang.code: load_ui(ROOT / "docs", lang) for lang in LANGUAGES}

# the page's records as plain lists (Playwright carries -Infinity; typed arrays it does not)
RUN = """async (text) => {
  const { tokens, records } = await glassllm.run(text);
  return { tokens, records: records.map((r) => ({ id: r.id, layer: r.layer, head: r.head,
    shape: r.shape, values: Array.from(r.values), typed: r.values instanceof Float32Array })) };
}"""
REFUSAL = """async (text) => {
  try { await glassllm.run(text); return null; }
  catch (error) { return { kind: error.kind, name: error.name, message: error.message }; }
}"""


class Watched(PageWatch):
    """A PageWatch that also lists the runtime's requests (the worker's too)."""

    def __init__(self, page, origin: str):
        super().__init__(page, origin)
        self.requests: list[str] = []
        page.context.on("request", lambda request: self.requests.append(request.url))

    def runtime_requests(self) -> list[str]:
        return [url for url in self.requests if RUNTIME_FILES.search(url.split("?")[0])]


def open_watched(browser, url: str, width: int = 1280) -> Watched:
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.set_default_timeout(LOAD_TIMEOUT)
    watch = Watched(context.new_page(), re.match(r"https?://[^/]+", url).group(0))
    context.route("**/*", watch._route)  # the worker's requests too
    watch.page.goto(url)
    return watch


@pytest.fixture(scope="module")
def warm(browser, base_url):
    """A step page (any page has window.glassllm) whose runtime has loaded once."""
    watch = open_watched(browser, base_url + "steps/attn.softmax/")
    info = watch.page.evaluate("() => glassllm.load()")
    assert watch.page.evaluate("() => glassllm.state") == "ready"
    watch.info = info
    yield watch
    watch.assert_clean()
    watch.page.context.close()


def native_run(text: str) -> list:
    trace = Tracer()
    GlassLM.from_pretrained(DEMO_CHECKPOINT).forward(encode(text), trace)
    return trace.records


def native_error(call) -> dict:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - whatever the engine raises
        return {"kind": "engine", "name": type(error).__name__, "message": str(error)}
    raise AssertionError("the engine accepted it")


def test_nothing_loads_until_a_page_or_a_script_asks(browser, base_url):
    for path in ("browser/", "steps/embed/", "pt/"):
        watch = open_watched(browser, base_url + path)
        try:
            page = watch.page
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(500)
            assert page.evaluate("() => typeof glassllm.run") == "function", path
            assert page.evaluate("() => glassllm.state") == "idle", path
            assert watch.runtime_requests() == [], path
            watch.assert_clean()
        finally:
            watch.page.context.close()


def test_pointing_at_the_run_box_starts_the_runtime_and_the_click_still_runs(browser, base_url):
    """The reader's intent is asking (glassllm.js): the pointer on a run panel starts the load,
    nothing runs, the button stays there to click, and Cancel stops the load."""
    watch = open_watched(browser, base_url + "browser/", PHONE)
    try:
        page = watch.page
        page.locator(".glassllm-run .glr-run").wait_for()
        assert page.evaluate("() => glassllm.state") == "idle"
        page.hover(".glassllm-run .glr-text")
        page.wait_for_function("() => glassllm.state === 'loading'")
        assert page.locator(".glassllm-run .glr-run").is_enabled()
        assert watch.runtime_requests()
        assert page.evaluate("() => glassllm.cancel()") is True
        assert page.evaluate("() => glassllm.state") == "cancelled"
        watch.assert_clean()
    finally:
        watch.page.context.close()


def test_the_wheels_are_asked_for_once_the_boot_has_its_files(browser, base_url):
    """The boot waits for Pyodide's wasm and standard library; on a reader's line the wheels
    would share it with them (benchmarks.md, "Over a reader's line": about 3 s later at
    10 Mbit/s), so the worker asks for the wheels only once those two have arrived. No service
    worker here, so that every request is the worker's own."""
    context = browser.new_context(service_workers="block")
    context.set_default_timeout(LOAD_TIMEOUT)
    events: list[tuple[str, str]] = []  # in the order chromium reports them
    context.on("request", lambda r: events.append(("asked", r.url.split("?")[0])))
    context.on("requestfinished", lambda r: events.append(("arrived", r.url.split("?")[0])))
    try:
        page = context.new_page()
        page.goto(base_url + "steps/embed/")
        page.evaluate("() => glassllm.load()")

        def at(kind: str, ending: str) -> list[int]:
            return [i for i, (k, url) in enumerate(events) if k == kind and url.endswith(ending)]
        wheels = at("asked", ".whl")
        booted = at("arrived", "/pyodide.asm.wasm") + at("arrived", "/python_stdlib.zip")
        assert len(wheels) == 2 and len(booted) == 2, events
        assert min(wheels) > max(booted), [events[i] for i in sorted(wheels + booted)]
    finally:
        context.close()


def test_the_browsers_records_are_the_native_runs(warm):
    got = warm.page.evaluate(RUN, PROMPT)
    records = native_run(PROMPT)
    assert got["tokens"] == encode(PROMPT)
    assert [(r["id"], r["layer"], r["head"], tuple(r["shape"])) for r in got["records"]] == [
        (r.id, r.layer, r.head, r.value.shape) for r in records]
    assert all(r["typed"] for r in got["records"])
    worst = 0.0
    for mine, theirs in zip(got["records"], records):
        values = np.array(mine["values"], dtype=np.float64).reshape(mine["shape"])
        native = theirs.value.astype(np.float64)
        finite = np.isfinite(native)
        np.testing.assert_array_equal(values[~finite], native[~finite], err_msg=mine["id"])
        scale = np.abs(native[finite]).max(initial=0.0) or 1.0
        worst = max(worst, float(np.abs(values[finite] - native[finite]).max(initial=0.0) / scale))
    assert worst <= 1e-3, f"largest difference relative to a record's scale: {worst:.2e}"


def test_a_greedy_generation_makes_the_native_tokens(warm):
    got = warm.page.evaluate("""async (text) => {
      const { tokens, steps } = await glassllm.generate(text, 12, { greedy: true });
      return { tokens, steps: steps.map((s) => ({ token: s.token, probs: Array.from(s.probs) })) };
    }""", PROMPT)
    steps = list(GlassLM.from_pretrained(DEMO_CHECKPOINT).generate(encode(PROMPT), 12, greedy=True))
    assert got["tokens"] == encode(PROMPT)
    assert [s["token"] for s in got["steps"]] == [s.token for s in steps]
    for mine, theirs in zip(got["steps"], steps):
        np.testing.assert_allclose(mine["probs"], theirs.probs, atol=1e-5)


@pytest.mark.parametrize("text", ["", "x" * 500])
def test_the_engines_refusal_arrives_as_its_own_type_and_message(warm, text):
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    assert warm.page.evaluate(REFUSAL, text) == native_error(lambda: model.forward(encode(text)))
    assert warm.page.evaluate("() => glassllm.state") == "ready"  # and it stays loaded


def test_text_that_is_no_unicode_is_refused_by_the_engines_encode(warm):
    """A JavaScript string may hold a lone surrogate, which has no UTF-8 bytes: encode says so
    as it would in Python."""
    refused = warm.page.evaluate(
        f"() => ({REFUSAL})('a' + String.fromCharCode(0xD800) + 'b')")
    assert refused == native_error(lambda: encode("a\ud800b"))
    assert refused["name"] == "ValueError" and "lone surrogate" in refused["message"]


def test_load_reports_the_build_and_the_label_of_each_token(warm):
    assert warm.info["build"] == runtime_wheel.build_info(ROOT / "glassllm").as_dict()
    assert warm.info["labels"] == TOKENIZER.labels(range(TOKENIZER.vocab_size))
    assert len(warm.info["labels"]) == warm.info["config"]["vocab_size"] > 256  # subwords


def test_a_first_visit_installs_the_wheels_as_wheels_js_reads_them(warm):
    """The worker unzips the wheels itself (wheels.js, inflated by Python's zlib); Pyodide's
    installer, about twice as slow here, is only its fallback ("pyodide")."""
    assert warm.info["timing"]["kept"] == {"memory": False, "packages": False}  # a first visit
    assert warm.info["timing"]["wheels"] == "wheels.js"


def test_a_worker_request_to_another_host_is_aborted_and_seen(warm):
    """The offline check sees the worker's requests, not only the page's."""
    warm.page.evaluate("""() => new Promise((resolve) => {
      const code = "fetch('http://example.invalid/probe').catch(() => {}).finally(() => postMessage(1))";
      const worker = new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
      worker.onmessage = () => { worker.terminate(); resolve(); };
    })""")
    assert warm.outside == ["http://example.invalid/probe"]
    warm.outside.clear()


def js_blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.findall(r"^```js\n(.*?)^```$", text, re.S | re.M)


@pytest.mark.parametrize("page", ["browser.md", "pt/browser.md"])
def test_the_pages_script_examples_run_and_print_what_their_comments_say(warm, page):
    blocks = js_blocks(page)
    assert len(blocks) == 2
    logged = []
    for block in blocks:
        logged.append(warm.page.evaluate(
            "async () => { const logged = []; const console = { log: (...a) => logged.push(a) };\n"
            + textwrap.indent(block, "  ") + "\n  return logged; }"))
    tokens, shape, count = logged[0]
    assert tokens == [encode(PROMPT)]
    heads = GlassLM.from_pretrained(DEMO_CHECKPOINT).config.n_heads
    n = len(encode(PROMPT))
    assert n < len(PROMPT.encode())  # subwords, not bytes
    assert shape == [[heads, n, n]]
    assert count == [len(native_run(PROMPT))]
    assert logged[1] == [["engine", "ValueError", "tokens is empty; give at least one token"],
                         ["arguments", "TypeError", 'glassllm.generate: unknown option "topk"; '
                          "the options are greedy, temperature, top_k, seed, trace"]]


def megabytes(site, code: str) -> str:
    """The download the button announces, as the page's language writes it."""
    text = (site.dir / "assets/runtime/build.js").read_text(encoding="utf-8")
    data = json.loads(text[text.index("{"):text.rindex(";")])
    shown = f"{data['download']['gzip'] / 1e6:.1f}"
    return shown.replace(".", ",") if code == "pt" else shown


@pytest.mark.parametrize("prefix,code,width", [("", "en", 1280), ("pt/", "pt", PHONE)])
def test_the_run_panel_runs_the_readers_text_and_shows_the_engines_errors(browser, base_url, site,
                                                                         prefix, code, width):
    ui = UI[code]
    watch = open_watched(browser, base_url + prefix + "browser/", width)
    try:
        page = watch.page
        button = page.locator(".glassllm-run .glr-run")
        assert button.inner_text() == ui["runtime.button"].format(mb=megabytes(site, code))
        assert page.locator(".glassllm-run .glr-cancel").is_hidden()
        commit = runtime_wheel.build_info(ROOT / "glassllm").commit
        assert commit[:12] in page.locator(".glr-version").inner_text()
        page.fill(".glr-text", "Hello")
        button.click()
        page.locator(".glr-progress").wait_for(state="visible")
        assert page.locator(".glassllm-run .glr-cancel").is_visible()
        page.locator(".glr-result").wait_for(state="visible")
        tokens = page.locator(".glr-tokens .glr-token").all_inner_texts()
        assert tokens == [token_label(t) for t in encode("Hello")]
        assert button.inner_text() == ui["runtime.run"]
        assert page.locator(".glassllm-run .glr-cancel").is_hidden()
        assert page.evaluate(WIDEST)["widest"] is None  # nothing sticks out, even on a phone
        page.fill(".glr-text", "")
        button.click()
        status = page.locator(".glr-status.glr-message--error")
        status.wait_for()
        model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
        error = native_error(lambda: model.forward(encode("")))
        assert status.inner_text() == ui["runtime.engine_error"].format(
            message=f"{error['name']}: {error['message']}")
        # the length is counted in the demo's tokens: more bytes than max_len, fewer tokens, runs
        max_len = model.config.max_len
        fits = " the" * (max_len // 2)
        assert len(fits.encode()) > max_len and len(encode(fits)) == max_len // 2
        page.fill(".glr-text", fits)
        button.click()
        page.wait_for_function("(n) => document.querySelectorAll('.glr-tokens .glr-token').length"
                               " === n", arg=max_len // 2)
        assert set(page.locator(".glr-tokens .glr-token").all_inner_texts()) == {"␣the"}
        # too long: how long the text may be, in tokens, not "raise Config.max_len", which a
        # reader of this page cannot do
        long_text = " the" * (max_len + 5)
        page.fill(".glr-text", long_text)
        button.click()
        too_long = ui["runtime.too_long"].format(n=len(encode(long_text)), max=max_len)
        page.wait_for_function("(text) => document.querySelector('.glr-status').textContent === text",
                               arg=too_long)
        assert "max_len" not in status.inner_text()
        watch.assert_clean()
    finally:
        watch.page.context.close()


def test_the_page_api_refuses_bad_arguments_before_the_worker_as_python_would(warm):
    """An unknown option, a lone or out-of-range head, a fraction, another language, a
    recording of no token, a lesson longer than the full one, a fraction of a step, a head
    the lesson's model does not have: each a rejected promise whose message names the call and the
    argument (arguments.js); an unknown step is the bridge's ValueError; a step the run does
    not work resolves to {html: null}, as docs/browser.md says."""
    calls = {
        "worked unknown step": "glassllm.worked('hi', 'nope')",
        "worked step 123": "glassllm.worked('hi', 123)",
        "worked lone head": "glassllm.worked('hi', 'attn.softmax', { head: 99 })",
        "worked head 99": "glassllm.worked('hi', 'attn.softmax', { layer: 1, head: 99 })",
        "worked head -1": "glassllm.worked('hi', 'attn.softmax', { layer: 1, head: -1 })",
        "worked layer 1.7": "glassllm.worked('hi', 'attn.softmax', { layer: 1.7, head: 0 })",
        "worked lang xx": "glassllm.worked('hi', 'attn.softmax', { lang: 'xx' })",
        "generate bogus": "glassllm.generate('hi', 2, { bogus: 1 })",
        "record 0": "glassllm.record('hi', 0)",
        "worked logits": "glassllm.worked('hi', 'logits')",
        "train steps": f"glassllm.train({{ steps: {lessons.STEPS + 1} }})",
        "lesson.advance 1.7": "glassllm.lesson.advance(1.7)",
        "lesson.ablate 0,9": "glassllm.lesson.ablate([[0, 9]])",
    }
    got = warm.page.evaluate("""async (calls) => {
      const out = {};
      for (const [name, code] of Object.entries(calls)) {
        try {
          const result = await (0, eval)(code);
          out[name] = { resolved: result, html: result.html === null ? "null" : typeof result.html };
        } catch (error) {
          out[name] = { kind: error.kind, name: error.name, message: error.message };
        }
      }
      return out;
    }""", calls)
    heads = warm.info["config"]["n_heads"]
    layers = warm.info["config"]["n_layers"]
    expected = {
        "worked unknown step": ("engine", "ValueError", "step 'nope' is no step of glassllm"),
        "worked step 123": ("arguments", "TypeError", "glassllm.worked: step must be a step ID"),
        "worked lone head": ("arguments", "RangeError", "option head was given without layer"),
        "worked head 99": ("arguments", "RangeError",
                           f"option head must be an integer in [0, {heads - 1}], got 99"),
        "worked head -1": ("arguments", "RangeError", "got -1"),
        "worked layer 1.7": ("arguments", "TypeError",
                             f"option layer must be an integer in [0, {layers - 1}], got 1.7"),
        "worked lang xx": ("arguments", "RangeError", 'option lang must be one of "en", "pt", got "xx"'),
        "generate bogus": ("arguments", "TypeError", 'glassllm.generate: unknown option "bogus"'),
        "record 0": ("arguments", "RangeError", "glassllm.record: n (tokens to generate and record) "
                                                "must be an integer of at least 1, got 0"),
        "train steps": ("arguments", "RangeError", "glassllm.train: option steps (training steps, "
                        f"the full lesson's at most) must be an integer in [1, {lessons.STEPS}], "
                        f"got {lessons.STEPS + 1}"),
        "lesson.advance 1.7": ("arguments", "TypeError", "glassllm.lesson.advance: maxSteps"),
        "lesson.ablate 0,9": ("arguments", "RangeError", "glassllm.lesson.ablate: head (of the head "
                              f"[0,9]) must be an integer in [0, {lessons.CONFIG['n_heads'] - 1}]"),
    }
    for name, (kind, error, message) in expected.items():
        assert got[name].get("kind") == kind and got[name].get("name") == error, (name, got[name])
        assert message in got[name]["message"], (name, got[name])
    assert got["worked logits"]["html"] == "null", got["worked logits"]
    assert warm.page.evaluate("() => glassllm.state") == "ready"  # and it stays loaded


def test_cancel_stops_the_loading_runtime_and_a_later_run_starts_it_anew(browser, base_url):
    watch = open_watched(browser, base_url + "browser/")
    try:
        page = watch.page
        page.locator(".glr-run").click()
        page.wait_for_function("() => glassllm.state === 'loading'")
        page.locator(".glr-cancel").click()
        page.locator(".glr-status", has_text=UI["en"]["runtime.cancelled"]).wait_for()
        assert page.evaluate("() => glassllm.state") == "cancelled"
        assert page.locator(".glr-cancel").is_hidden()
        # a script's pending call is refused the same way
        refused = page.evaluate("""async () => {
          const pending = glassllm.run("Hi").catch((error) => [error.kind, error.message]);
          await new Promise((resolve) => setTimeout(resolve, 50));
          await glassllm.cancel();
          return pending;
        }""")
        assert refused == ["cancelled", UI["en"]["runtime.cancelled_error"]]
        assert page.evaluate(RUN, "Hi")["tokens"] == encode("Hi")
        watch.assert_clean()
    finally:
        watch.page.context.close()


@pytest.fixture(scope="module")
def tampered_site(site, tmp_path_factory):
    """A copy of the built site whose files can be changed."""
    copy = tmp_path_factory.mktemp("tampered") / "site"
    shutil.copytree(site.dir, copy)
    return copy


def flip_a_byte(path: Path) -> bytes:
    original = path.read_bytes()
    data = bytearray(original)
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return original


@pytest.mark.parametrize("which,says", [
    ("glassllm wheel", "the glassllm wheel did not install"),
    ("numpy wheel", "did not install"),
    ("lock", "could not be fetched with the sha256 this page's build.js lists"),
])
def test_bytes_other_than_the_builds_are_refused_with_a_clear_error(browser, tampered_site,
                                                                    which, says):
    runtime = tampered_site / "assets" / "runtime"
    target = {"glassllm wheel": next(runtime.glob("wheels/*/glassllm-*.whl")),
              "numpy wheel": next(runtime.glob("wheels/numpy-*.whl")),
              "lock": runtime / "lock.json"}[which]
    original = flip_a_byte(target)
    try:
        with serve_directory(tampered_site) as url:
            watch = open_watched(browser, url + "steps/embed/")
            try:
                refused = watch.page.evaluate(REFUSAL, PROMPT)
                assert refused["kind"] == "integrity" and refused["name"] == "IntegrityError"
                assert says in refused["message"], refused["message"]
                assert "rebuild the site" in refused["message"].lower()
                assert watch.page.evaluate("() => glassllm.state") == "failed"
                assert watch.outside == []
            finally:
                watch.page.context.close()
    finally:
        target.write_bytes(original)


@pytest.mark.parametrize("prefix,code", [("", "en"), ("pt/", "pt")])
def test_opened_from_disk_it_says_in_the_pages_language_to_serve_the_folder(browser, site,
                                                                            prefix, code):
    context = browser.new_context()
    try:
        page = context.new_page()
        outside = []
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (outside.append(route.request.url), route.abort()))
        page.goto((site.dir / prefix / "browser" / "index.html").as_uri())
        message = page.locator(".glassllm-run [role=alert]")
        message.wait_for()
        says = UI[code]["runtime.file_protocol"]
        assert message.inner_text() == says
        assert page.evaluate(REFUSAL, PROMPT) == {"kind": "load", "name": "LoadError", "message": says}
        assert outside == []
    finally:
        context.close()


@pytest.mark.parametrize("prefix,code", [("", "en"), ("pt/", "pt")])
def test_the_replay_plays_the_readers_text_recorded_in_the_browser(browser, base_url, prefix, code):
    """The replay page's box generates 12 greedy tokens after the reader's text in the page,
    records them as glassllm.recording does, and the player opens them as "Your text": the
    same tokens and, event by event, the native recording's numbers."""
    from glassllm.recording import record_generation

    ui = UI[code]
    watch = open_watched(browser, base_url + prefix + "replay/")
    try:
        page = watch.page
        page.wait_for_selector("#gr-rec-generation:checked")
        # the player comes first: its top and its Play button in the first screenful
        height = page.viewport_size["height"]
        player = page.locator(".glassllm-replay").bounding_box()
        play = page.locator('.glassllm-replay [data-action="play"]').bounding_box()
        assert 0 <= player["y"] < height and play["y"] + play["height"] <= height, (player, play)
        button = page.locator(".glassllm-run .glr-run")
        assert button.inner_text().startswith(ui["runtime.record_button"].split("{n}")[0])
        page.fill(".glassllm-run .glr-text", "Once upon a time")
        button.click()
        page.wait_for_selector("#gr-rec-yours:checked")
        native = record_generation(GlassLM.from_pretrained(DEMO_CHECKPOINT), encode("Once upon a time"),
                                   12, greedy=True, seed=0)
        status = page.locator(".glassllm-run .glr-status").inner_text()
        assert status == ui["runtime.recorded"].format(n=12, count=len(native.events))
        assert page.locator('label[for="gr-rec-yours"]').inner_text() == \
            json.loads(re.search(r'"recYours": ("[^"]*")', (ROOT / "docs" / (prefix + "replay.md")).read_text(
                encoding="utf-8")).group(1)).format(text="Once upon a time")
        # the browser's recording, read back: same tokens, same values as the native one
        recorded = page.evaluate("""async () => {
          const r = await glassllm.record('Once upon a time', 12, { greedy: true });
          return { generated: r.generated, bytes: Array.from(r.bytes) };
        }""")
        from glassllm.recording import loads
        mine = loads(bytes(recorded["bytes"]))
        assert mine.generated == native.generated == recorded["generated"]
        assert [e.step for e in mine.events] == [e.step for e in native.events]
        for a, b in zip(mine.events, native.events):
            np.testing.assert_allclose(a.value, b.value, rtol=1e-3, atol=1e-5)
        # a text with no room for the 12 tokens: how long it may be
        max_len = GlassLM.from_pretrained(DEMO_CHECKPOINT).config.max_len
        page.fill(".glassllm-run .glr-text", " the" * (max_len - 11))  # max_len - 11 tokens
        button.click()
        too_long = ui["runtime.too_long_record"].format(n=max_len - 11, max=max_len - 12,
                                                        tokens=12, max_len=max_len)
        page.wait_for_function("(text) => document.querySelector('.glassllm-run .glr-status')"
                               ".textContent === text", arg=too_long)
        watch.assert_clean()
    finally:
        watch.page.context.close()


@pytest.mark.parametrize("prefix,code", [("", "en"), ("pt/", "pt")])
def test_a_step_pages_snapshot_switches_to_the_readers_run_and_back(browser, base_url, prefix, code):
    """After a run on a step page, its snapshot is the reader's: the step's records of the
    documented model on their text, layer and head as chosen, the numbers of the native run;
    the switch brings the example back. A step no forward pass records says so."""
    from docs_build.text.numbers import format_value

    ui = UI[code]
    watch = open_watched(browser, base_url + prefix + "steps/attn.softmax/")
    try:
        page = watch.page
        text = "abcabc xyz"
        page.fill(".glassllm-run .glr-text", text)
        page.click(".glassllm-run .glr-run")
        page.wait_for_selector(".glr-step canvas")
        assert page.locator(".gl-snapshot-title").is_hidden()
        # every part of the example's snapshot goes, its head tabs (display: flex) too
        example = page.locator(".gl-snapshot-title ~ .tabbed-set")
        assert example.count() >= 2
        assert [example.nth(k).is_hidden() for k in range(example.count())] == [True] * example.count()
        records = {(r.id, r.layer): np.asarray(r.value) for r in native_run(text)}
        page.select_option(".glr-step select >> nth=0", "1")
        page.select_option(".glr-step select >> nth=1", "1")
        expected = records[("attn.softmax", 1)][1]  # (n, n) of head 1
        rows = page.locator(".glr-step-values tbody tr")
        n = len(encode(text))  # the demo's tokens of the text: a row each, none cut
        assert rows.count() == n
        for i in (0, n // 2, n - 1):
            cells = rows.nth(i).locator("td").all_inner_texts()
            # in the page language's decimal mark, as the page's own tables
            assert cells == [format_value(np.float32(v), ui["number.decimal"]) for v in expected[i]]
        assert rows.nth(3).locator("th").inner_text() == f"3 {token_label(encode(text)[3])}"
        # the box of the page's own tables: it scrolls, shaded, with the hint for a phone
        box = page.locator(".glr-step-table")
        assert "gl-table-wrap" in box.get_attribute("class")
        assert box.get_attribute("data-scroll-hint") == ui["runtime.scroll_hint"] == ui["table.scroll_hint"]
        switch = page.locator(".glr-switch")
        assert switch.inner_text() == ui["runtime.show_example"]
        switch.click()
        assert page.locator(".gl-snapshot-title").is_visible() and page.locator(".glr-step").is_hidden()
        assert example.first.is_visible()
        assert switch.inner_text() == ui["runtime.show_yours"]
        page.goto(base_url + prefix + "steps/probs/")
        page.fill(".glassllm-run .glr-text", text)
        page.click(".glassllm-run .glr-run")
        page.wait_for_selector(".glr-step-none")
        assert page.locator(".glr-step-none").inner_text() == ui["runtime.yours_none"].format(step="probs")
        watch.assert_clean()
    finally:
        watch.page.context.close()


@pytest.mark.parametrize("prefix,code", [("", "en"), ("pt/", "pt")])
def test_the_embedding_page_shows_how_the_readers_text_became_tokens(browser, base_url, prefix,
                                                                     code):
    """On the embedding page the reader's text is split by the demo's tokenizer in the
    browser: a row per word, its merges (ranks of tokenizer.json's merges), its token chips,
    exactly glassllm's BPETokenizer.explain of the same text."""
    ui = UI[code]
    text = "The cat sat on the mat. Naïve 😀"
    watch = open_watched(browser, base_url + prefix + "steps/embed/")
    try:
        page = watch.page
        page.fill(".glassllm-run .glr-text", text)
        page.click(".glassllm-run .glr-run")
        page.wait_for_selector(".glr-split")
        words = TOKENIZER.explain(text)
        rows = page.locator(".glr-split tbody tr")
        assert rows.count() == len(words)
        assert page.locator(".glr-split-wrap h3").inner_text() == ui["runtime.split_title"]
        for k, word in enumerate(words):
            row = rows.nth(k)
            assert row.locator("td").nth(0).inner_text() == word.word.replace(" ", "␣")
            shown = row.locator("td").nth(2).locator(".glr-token").all_inner_texts()
            assert shown == TOKENIZER.labels(word.ids)
            items = row.locator("td").nth(1).locator("li").all_inner_texts()
            assert len(items) == len(word.merges)
            for item, merge in zip(items, word.merges):
                rank = ui["runtime.split_rank"].format(rank=merge.rank)
                assert item.split() == f"{merge.left} + {merge.right} → {merge.joined} {rank}".split()
        watch.assert_clean()
    finally:
        watch.page.context.close()


def test_the_model_cards_ablation_panel_measures_the_ticked_heads_again(browser, base_url):
    """Tick the model's best previous-token head on the card: every layer-1 head's induction
    score, clean and with it silenced, is what glassllm.circuits measures natively, and a
    score is marked collapsed exactly when it keeps at most circuits.COLLAPSES of itself."""
    from glassllm import circuits

    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    clean = circuits.measure(model)
    head = int(np.argmax(clean.previous_token[0]))  # layer 0's best previous-token head
    edited = circuits.measure(model, edit=circuits.ablate_heads([(0, head)]))
    watch = open_watched(browser, base_url + "model-card/")
    try:
        page = watch.page
        panel = page.locator('.glassllm-run[data-mode="ablate"]')
        button = panel.locator(".glr-run")
        button.click()
        panel.locator(".glr-status.glr-message--error").wait_for()  # nothing ticked yet
        panel.locator(f'input[value="0,{head}"]').check()
        button.click()
        panel.locator(".glr-ablation").wait_for()
        rows = {row.locator("th").inner_text(): row.locator("td")
                for row in panel.locator(".glr-ablation tbody tr").all()}
        for h in range(model.config.n_heads):
            cell = rows[f"L1H{h}"].nth(1)
            before, after = (float(x) for x in cell.inner_text().split(" → "))
            assert before == pytest.approx(clean.induction[1][h], rel=1e-3)
            assert after == pytest.approx(edited.induction[1][h], rel=1e-3)
            collapses = clean.induction[1][h] != 0 and \
                edited.induction[1][h] / clean.induction[1][h] <= circuits.COLLAPSES
            assert ("glr-collapsed" in (cell.get_attribute("class") or "")) == bool(collapses), h
        assert panel.locator("th.glr-ablated").all_inner_texts() == [f"L0H{head}"]
        watch.assert_clean()
    finally:
        watch.page.context.close()


@pytest.mark.parametrize("prefix,code,width", [("", "en", 1280), ("pt/", "pt", PHONE)])
def test_a_step_pages_worked_numbers_switch_to_the_readers_run_and_back(browser, base_url,
                                                                         prefix, code, width):
    """After a run on a step page, "Worked by hand" is redone on the reader's text in the
    worker by the build's own code, its formulas typeset by KaTeX: each redone entry is the
    native run's value there; the switch brings the example's back. A step a forward pass
    does not work (probs: a generation's choice) keeps the example's and says why."""
    from docs_build.text.numbers import format_value

    ui = UI[code]
    text = "abcabc xyz"
    watch = open_watched(browser, base_url + prefix + "steps/attn.softmax/", width)
    try:
        page = watch.page
        page.evaluate("() => { document.querySelector('.gl-worked').id = 'the-example'; }")
        example = page.locator("#the-example")  # the page's own (the reader's goes before it)
        example_html = example.inner_html()
        page.fill(".glassllm-run .glr-text", text)
        page.click(".glassllm-run .glr-run")
        mine = page.locator(".glr-worked .gl-worked")
        mine.wait_for()
        assert example.is_hidden()
        layer = int(mine.get_attribute("data-layer"))
        head = int(mine.get_attribute("data-head"))
        panel = page.locator(".glassllm-run")
        assert (layer, head) == (int(panel.get_attribute("data-worked-layer")),
                                 int(panel.get_attribute("data-worked-head")))
        records = {(r.id, r.layer): np.asarray(r.value) for r in native_run(text)}
        rows = mine.locator(".gl-worked-checks tbody tr")
        assert rows.count() >= 1
        for k in range(rows.count()):
            index = tuple(int(x) for x in rows.nth(k).get_attribute("data-index").split(","))
            snapshot = float(rows.nth(k).get_attribute("data-snapshot"))
            assert snapshot == pytest.approx(float(records[("attn.softmax", layer)][index]), rel=1e-3)
            assert index[1] == len(encode(text)) - 1  # the last position of the reader's text
        assert mine.locator("math").count() >= 3  # typeset: no raw markers left
        # an entry lights its cell in the reader's table once that shows the entry's head
        page.select_option(".glr-step select >> nth=0", str(layer))
        page.select_option(".glr-step select >> nth=1", str(head))
        first = rows.nth(0)
        index = tuple(int(x) for x in first.get_attribute("data-index").split(","))
        first.hover()
        lit = page.locator(".glr-step-values td.gl-lit")
        assert lit.count() == 1
        assert lit.inner_text() == format_value(np.float32(records[("attn.softmax", layer)][index]),
                                                ui["number.decimal"])
        page.mouse.move(0, 0)
        assert lit.count() == 0
        assert "\\(" not in mine.inner_text() and "\\[" not in mine.inner_text()
        assert page.locator(".glr-worked > .glr-step-caption").inner_text() == \
            ui["runtime.worked_yours"].format(text="".join(token_label(t) for t in encode(text)))
        assert page.evaluate(WIDEST)["widest"] is None
        page.click(".glr-switch")
        assert example.is_visible() and page.locator(".glr-worked").is_hidden()
        assert example.inner_html() == example_html
        page.click(".glr-switch")
        assert example.is_hidden() and mine.is_visible()
        page.goto(base_url + prefix + "steps/probs/")
        page.fill(".glassllm-run .glr-text", text)
        page.click(".glassllm-run .glr-run")
        note = page.locator(".glr-worked .glr-worked-none")
        note.wait_for()
        assert note.inner_text() == ui["runtime.worked_none"].format(step="probs")
        assert page.locator(".gl-worked").first.is_visible()
        watch.assert_clean()
    finally:
        watch.page.context.close()
