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
import time
from pathlib import Path

import pytest

from tests import hosts

# Before anything imports mkdocs: under GLASSLLM_DOCS_HOST=properdocs, mkdocs.* is ProperDocs.
hosts.activate()

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


# The default run leaves out the tests marked slow: those that build or serve whole sites, drive
# chromium or rebuild under `mkdocs serve` (minutes each on 2 cores). `--run-slow` runs them too,
# as .ci/run does; so does naming a test file or test on the command line, or a -m expression
# that names the marker. A test that uses one of these fixtures is slow without saying so.
SLOW_FIXTURES = frozenset({"browser"})


def load_script(name: str):
    """A module of scripts/ (``train_demo``, ``demo_corpus``, ...), imported once."""
    import importlib
    scripts = str(Path(__file__).resolve().parents[1] / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    return importlib.import_module(name)


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow (site builds, chromium, serve and "
                          "rebuilds): the full suite, as .ci/run runs it")


def _named_files(config) -> set[Path]:
    """The test files the command line names (a file, or a test in it), not folders."""
    named = set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0]).resolve()
        if path.is_file():
            named.add(path)
    return named


def _runs_slow(config) -> bool:
    return config.getoption("--run-slow") or "slow" in (config.getoption("markexpr") or "")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    if _runs_slow(config):
        return
    named = _named_files(config)
    keep, slow = [], []
    for item in items:
        if item.get_closest_marker("slow") and Path(item.path).resolve() not in named:
            slow.append(item)
        else:
            keep.append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = keep
        config.stash[_SLOW_LEFT_OUT] = len(slow)


_SLOW_LEFT_OUT = pytest.StashKey[int]()


def pytest_report_header(config):
    if not _runs_slow(config):
        return ["slow tests (site builds, chromium, serve/rebuild) are left out: "
                "python -m pytest --run-slow runs everything (README: The two commands)"]


def pytest_terminal_summary(terminalreporter, config):
    left_out = config.stash.get(_SLOW_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(
            f"{left_out} slow tests were left out (deselected): python -m pytest --run-slow "
            "runs them too, as .ci/run does")


def tell(config, message: str) -> None:
    """Write ``message`` as a line of the terminal now, even while pytest captures a test's
    output (not under -qq): what a test or fixture that waits for minutes is doing."""
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if reporter is None or config.getoption("verbose") < -1:
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        reporter.write_line(message)


@pytest.fixture
def progress(request):
    """``progress(message)``: a line with the seconds since the test started and its name."""
    started = time.monotonic()

    def say(message: str) -> None:
        tell(request.config, f"    [{time.monotonic() - started:4.0f} s] {request.node.name}: {message}")

    return say


@pytest.fixture(scope="session")
def site(request, tmp_path_factory):
    """The real documentation site (mkdocs.yml with a repo_url, ``mkdocs build --strict`` in
    this process; tests/docs_build/conftest.py's ``Site``), built once per session and shared
    by every folder's tests: tests/docs_build's and tests/replay's."""
    from tests.docs_build.conftest import REPO_URL, ROOT, Site, build_site

    if not (ROOT / "node_modules" / "katex" / "dist" / "katex.min.js").is_file():
        pytest.fail("KaTeX is missing: run 'npm ci' in the repository root first")
    site_dir = tmp_path_factory.mktemp("site")
    tell(request.config, "building the site once for this session (mkdocs build --strict) ...")
    started = time.monotonic()
    built = Site(site_dir, build_site(site_dir, repo_url=REPO_URL))
    tell(request.config, f"site built in {time.monotonic() - started:.0f} s")
    return built


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
