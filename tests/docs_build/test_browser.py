"""Step pages in a real browser (Debian's chromium via Playwright), offline.

Every request to a host other than the local test server is blocked and recorded; the
tests fail on any such request and on any console error.
"""

from __future__ import annotations


import pytest

from tests.conftest import PageWatch, serve_directory

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base_url(site):
    """The session's site (built with repo_url set), served from 127.0.0.1."""
    with serve_directory(site.dir) as url:
        yield url


@pytest.fixture
def open_page(browser, base_url):
    contexts = []

    def opener(path: str) -> PageWatch:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        contexts.append(context)
        watch = PageWatch(context.new_page(), base_url.rstrip("/"))
        watch.page.goto(base_url + path)
        return watch

    yield opener
    for context in contexts:
        context.close()


@pytest.mark.parametrize("prefix,html_lang", [("", "en"), ("pt/", "pt-BR")])
def test_step_page_typesets_math_and_shows_heatmaps_and_tabs(open_page, prefix, html_lang):
    watch = open_page(f"{prefix}steps/attn.softmax/")
    page = watch.page
    assert page.evaluate("document.documentElement.lang") == html_lang
    page.wait_for_selector(".gl-equation .katex")
    # the display equation is typeset (KaTeX's own markup, not the raw LaTeX any more)
    assert page.locator(".gl-equation .katex-display").count() == 1
    assert "\\frac" not in page.locator(".gl-equation").inner_text()
    heatmap = page.locator("figure.gl-heatmap svg.gl-heatmap-svg").first
    assert heatmap.is_visible()
    assert heatmap.bounding_box()["width"] > 50
    assert page.locator("figure.gl-heatmap .gl-legend").first.is_visible()
    # head tabs: layer 0 opens on its featured head; another head's table appears when its
    # tab is chosen
    labels = page.locator(".tabbed-set").first.locator(".tabbed-labels label")
    featured = next(i for i in range(labels.count())
                    if "gl-featured" in (labels.nth(i).get_attribute("class") or ""))
    other = 0 if featured else 1
    assert page.locator(f'table.gl-values[data-layer="0"][data-head="{featured}"]').is_visible()
    chosen = page.locator(f'table.gl-values[data-layer="0"][data-head="{other}"]')
    assert not chosen.is_visible()
    labels.nth(other).click()
    chosen.wait_for(state="visible")
    assert page.locator(f'table.gl-values[data-layer="0"][data-head="{featured}"]').is_hidden()
    watch.assert_clean()


def test_language_switch_leads_to_the_same_page_and_back(open_page, base_url):
    watch = open_page("steps/attn.mask/")
    page = watch.page
    page.hover(".md-header__option .md-select")
    page.locator('a.md-select__link[hreflang="pt-BR"]').click()
    page.wait_for_url(base_url + "pt/steps/attn.mask/")
    assert page.evaluate("document.documentElement.lang") == "pt-BR"
    page.wait_for_selector(".gl-equation .katex")
    masked = page.locator("table.gl-values td.gl-masked").first
    assert masked.inner_text() == "−∞"
    page.hover(".md-header__option .md-select")
    page.locator('a.md-select__link[hreflang="en"]').click()
    page.wait_for_url(base_url + "steps/attn.mask/")
    assert page.evaluate("document.documentElement.lang") == "en"
    watch.assert_clean()


def test_source_link_scrolls_to_the_marked_line(open_page):
    watch = open_page("steps/attn.softmax/")
    page = watch.page
    link = page.locator('a[href*="source/glassllm/"][href*="#L"]').first
    anchor = link.get_attribute("href").split("#")[1]
    link.click()
    page.wait_for_url(f"**#{anchor}")
    line = page.locator(f"#{anchor}")
    assert line.is_visible()
    assert "@step attn.softmax" in line.inner_text()
    assert "gl-marker" in line.get_attribute("class")
    box = line.bounding_box()
    assert 0 <= box["y"] < page.viewport_size["height"]
    watch.assert_clean()


def test_catalog_and_home_render_without_errors(open_page):
    for path in ("steps/", "pt/steps/", "", "pt/"):
        watch = open_page(path)
        if "steps" in path:
            watch.page.wait_for_selector("table.gl-catalog .katex")
            assert watch.page.locator("table.gl-catalog .katex").count() == 25
        watch.page.wait_for_load_state("load")
        watch.assert_clean()
