"""Shared test helpers: optional tools, a static server for built sites, and Debian's
chromium driven by Playwright with every request to another host blocked."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

from tests import hosts

# Before anything imports mkdocs: under GLASSLLM_DOCS_HOST=properdocs, mkdocs.* is ProperDocs.
hosts.activate()

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session", autouse=True)
def docs_example_cache(tmp_path_factory):
    """The docs build's disk cache of the engine child's output (docs_build/engine/cache.py): one
    per test session, shared by its builds (subprocesses inherit it), never the user's."""
    from docs_build.engine.cache import CACHE_ENV

    folder = tmp_path_factory.mktemp("docs-example-cache")
    previous = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = previous


def require_or_skip(available: bool, reason: str, env_var: str) -> None:
    """Skip a test whose tool is missing, unless CI demands the tool via ``env_var``."""
    if available:
        return
    if os.environ.get(env_var) == "1":
        pytest.fail(f"{reason} (and {env_var}=1 demands it)")
    pytest.skip(reason)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # keep the test output readable
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # a page that navigates away mid-response closes the socket: not a test failure
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve_directory(directory: Path, handler: type = QuietHandler):
    """A static server for ``directory`` on 127.0.0.1 (a thread); yields its base URL.

    ``handler``: a ``QuietHandler`` subclass, for a server that answers differently
    (scripts/bench_replay.py's Range requests)."""
    handler = functools.partial(handler, directory=str(directory))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser():
    """One chromium for the whole session (Playwright's sync API allows one instance)."""
    executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    require_or_skip(executable is not None,
                    f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)",
                    "GLASSLLM_REQUIRE_BROWSER")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_or_skip(False, "the playwright Python package is not installed "
                               "(pip install -e '.[test]')", "GLASSLLM_REQUIRE_BROWSER")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
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
