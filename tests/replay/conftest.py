"""Fixtures for the replay page's browser tests: the real site, built once with
``mkdocs build --strict`` and served from 127.0.0.1 by a server thread of this process
(the session's chromium and PageWatch come from tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import hosts
from tests.conftest import PageWatch, serve_directory

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The site as `mkdocs build --strict` writes it from this checkout."""
    if not (REPO / "node_modules" / "katex").is_dir():
        pytest.fail("node_modules/katex is missing: run 'npm ci' at the repository root")
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run(hosts.cli("build", "--strict", "-d", str(site)),
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}")
    return site


@pytest.fixture(scope="session")
def site_url(built_site):
    """Base URL of a static server for the built site (a thread, stopped at the end)."""
    with serve_directory(built_site) as url:
        yield url


@pytest.fixture
def open_replay(browser, site_url):
    """Open a replay page (path relative to the site) and wait until it shows an event."""
    contexts = []

    def opener(path: str = "replay/", color_scheme: str = "light", before=None):
        """``before(page)`` runs before the page loads (e.g. to route a request)."""
        context = browser.new_context(viewport={"width": 1280, "height": 1000},
                                      color_scheme=color_scheme)
        context.set_default_timeout(15_000)
        contexts.append(context)
        watch = PageWatch(context.new_page(), site_url.rstrip("/"))
        if before:
            before(watch.page)
        watch.page.goto(site_url + path)
        watch.page.wait_for_selector(".gr-event[data-event-index]")
        return watch

    yield opener
    for context in contexts:
        context.close()
