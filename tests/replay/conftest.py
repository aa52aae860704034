"""Fixtures for the replay page's browser tests: the real site, built once with
``mkdocs build --strict``, served from 127.0.0.1 by a server thread of this process, and
Debian's chromium driven by Playwright with every request to another host blocked."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import require_or_skip

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The site as `mkdocs build --strict` writes it from this checkout."""
    if not (REPO / "node_modules" / "katex").is_dir():
        pytest.fail("node_modules/katex is missing: run 'npm ci' at the repository root")
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}")
    return site


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # keep the test output readable
        pass


@pytest.fixture(scope="session")
def site_url(built_site):
    """Base URL of a static server for the built site (a thread, stopped at the end)."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser():
    require_or_skip(Path(CHROMIUM).exists() or shutil.which("chromium") is not None,
                    f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)",
                    "GLASSLLM_REQUIRE_BROWSER")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_or_skip(False, "the playwright Python package is not installed",
                        "GLASSLLM_REQUIRE_BROWSER")
    executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class PageWatch:
    """A page whose requests stay on the test server and whose console is watched."""

    def __init__(self, page, origin: str):
        self.page = page
        self.origin = origin
        self.errors: list[str] = []
        self.outside: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.route("**/*", self._route)

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.origin) or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def assert_clean(self):
        assert self.outside == [], f"requests left the site: {self.outside}"
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture
def open_replay(browser, site_url):
    """Open a replay page (path relative to the site) and wait until it shows an event."""
    contexts = []

    def opener(path: str = "replay/", color_scheme: str = "light"):
        context = browser.new_context(viewport={"width": 1280, "height": 1000},
                                      color_scheme=color_scheme)
        context.set_default_timeout(15_000)
        contexts.append(context)
        watch = PageWatch(context.new_page(), site_url.rstrip("/"))
        watch.page.goto(site_url + path)
        watch.page.wait_for_selector(".gr-event[data-event-index]")
        return watch

    yield opener
    for context in contexts:
        context.close()
