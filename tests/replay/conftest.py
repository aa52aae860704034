"""Fixtures for the replay page's browser tests: the real site (the session's one build,
tests/conftest.py) served from 127.0.0.1 by a server thread of this process (the session's
chromium and PageWatch come from tests/conftest.py too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PageWatch, serve_directory


@pytest.fixture(scope="session")
def built_site(site) -> Path:
    """The site's folder: the session's one build of this checkout (tests/conftest.py)."""
    return site.dir


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
