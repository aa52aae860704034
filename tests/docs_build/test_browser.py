"""Step pages in a real browser (Debian's chromium via Playwright), offline.

Every request to a host other than the local test server is blocked and recorded; the
tests fail on any such request and on any console error. The site, its server and
``open_page`` come from tests/docs_build/conftest.py.
"""

from __future__ import annotations

import re

import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("prefix,html_lang", [("", "en"), ("pt/", "pt-BR")])
def test_step_page_typesets_math_and_shows_heatmaps_and_tabs(open_page, prefix, html_lang):
    watch = open_page(f"{prefix}steps/attn.softmax/")
    page = watch.page
    assert page.evaluate("document.documentElement.lang") == html_lang
    page.wait_for_selector(".gl-equation math")
    # the display equation is typeset (KaTeX's MathML, not the raw LaTeX any more), and the
    # browser lays it out as a formula: a block wider than tall
    # two display equations: the step's own and its Backward section's rule
    equations = page.locator('.gl-equation math[display="block"]')
    assert equations.count() == 2
    box = equations.first.bounding_box()
    assert box["width"] > 2 * box["height"] > 20
    assert all("\\frac" not in text for text in page.locator(".gl-equation").all_inner_texts())
    # the first visible one: layer 0's tabs open on its featured head, whichever it is
    heatmap = page.locator("figure.gl-heatmap svg.gl-heatmap-svg:visible").first
    assert heatmap.is_visible()
    assert heatmap.bounding_box()["width"] > 50
    assert page.locator("figure.gl-heatmap .gl-legend:visible").first.is_visible()
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


def test_the_maps_boxes_are_links_named_by_their_title(open_page):
    """The map's boxes carry no aria-label: the browser names each link from its SVG <title>,
    which a screen reader reads and a pointer shows as a tooltip."""
    watch = open_page("pt/steps/attn.softmax/")
    page = watch.page
    mapped = page.locator("figure.gl-map")
    # the shape is the traced run's: H heads, n queries by n keys (n tokens of the example)
    heads = GlassLM.from_pretrained(DEMO_CHECKPOINT).config.n_heads
    current = mapped.get_by_role(
        "link", name=re.compile(rf"^Pesos de atenção \(attn\.softmax\), forma \({heads}, (\d+), \1\)$"))
    assert current.count() == 1 and current.get_attribute("aria-current") == "step"
    assert mapped.get_by_role("link", name="Logits (logits)", exact=False).count() == 1
    watch.assert_clean()


def test_language_switch_leads_to_the_same_page_and_back(open_page, base_url):
    watch = open_page("steps/attn.mask/")
    page = watch.page
    page.hover(".md-header__option .md-select")
    page.locator('a.md-select__link[hreflang="pt-BR"]').click()
    page.wait_for_url(base_url + "pt/steps/attn.mask/")
    assert page.evaluate("document.documentElement.lang") == "pt-BR"
    page.wait_for_selector(".gl-equation math")
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
            watch.page.wait_for_selector("table.gl-catalog math")
            assert watch.page.locator("table.gl-catalog math").count() == 25
        watch.page.wait_for_load_state("load")
        watch.assert_clean()


def _hover_cell(page, figure, i: int, j: int) -> str:
    """Point at cell (i, j) of a heatmap and return what its readout then says."""
    image = figure.locator("image.gl-heatmap-cells")
    rows, cols = (int(n) for n in figure.get_attribute("data-shape").split())
    image.scroll_into_view_if_needed()
    box = image.bounding_box()
    page.mouse.move(box["x"] + (j + 0.5) * box["width"] / cols,
                    box["y"] + (i + 0.5) * box["height"] / rows)
    readout = figure.locator(".gl-heatmap-readout")
    readout.wait_for(state="visible")
    return readout.inner_text()


@pytest.mark.parametrize("prefix", ["", "pt/"])
def test_heatmap_is_one_sharp_image_and_hovering_a_cell_reads_its_value(open_page, prefix):
    # attn.softmax: the head's table shows every cell, the readout reads it from there
    watch = open_page(f"{prefix}steps/attn.softmax/", scheme="dark")
    page = watch.page
    figure = page.locator("figure.gl-heatmap[data-values-in]:visible").first
    layer, head = figure.get_attribute("data-layer"), figure.get_attribute("data-head")
    image = figure.locator("image.gl-heatmap-cells")
    rows, cols = (int(n) for n in figure.get_attribute("data-shape").split())
    # the PNG decodes to a pixel per cell and is drawn without smoothing
    size = image.evaluate("""im => new Promise(done => { const p = new Image();
        p.onload = () => done([p.naturalHeight, p.naturalWidth]); p.src = im.getAttribute('href'); })""")
    assert size == [rows, cols]
    assert image.evaluate("im => getComputedStyle(im).imageRendering") == "pixelated"
    table = page.locator(f'table.gl-values[data-layer="{layer}"][data-head="{head}"]')
    row = table.locator("tbody tr").nth(rows - 1)
    last_row, first_cell = row.locator("th").inner_text(), row.locator("td").first.inner_text()
    first_col = table.locator("thead th").nth(1).inner_text()
    assert _hover_cell(page, figure, rows - 1, 0) == f"{last_row} · {first_col}: {first_cell}"
    masked = _hover_cell(page, figure, 0, cols - 1)  # above the diagonal: masked, weight 0
    assert masked.endswith(": 0")
    page.mouse.move(0, 0)
    figure.locator(".gl-heatmap-readout").wait_for(state="hidden")
    watch.assert_clean()


def test_heatmap_readout_shows_columns_the_table_cuts(open_page):
    # attn.q: head_dim columns per head, the table shows 12 of them; the heatmap carries the
    # others, four characters each (data-codes, decoded as test_heatmap_js.py checks), and
    # reads the shown ones from the table (an (n, d_model) step carries none once n * d_model
    # passes TOOLTIP_MAX_CELLS)
    watch = open_page("steps/attn.q/")
    page = watch.page
    figure = page.locator('figure.gl-heatmap[data-values-in="table"][data-codes]:visible').first
    rows, cols = (int(n) for n in figure.get_attribute("data-shape").split())
    table = page.locator(f'table.gl-values[data-layer="{figure.get_attribute("data-layer")}"]'
                         f'[data-head="{figure.get_attribute("data-head")}"]').first
    shown = {(int(r), int(c)) for r in table.get_attribute("data-rows").split()
             for c in table.get_attribute("data-cols").split()}
    base = figure.get_attribute("data-code-base")
    rest = page.evaluate("""([codes, base]) => import(document.querySelector('script[src*="heatmap.js"]').src)
                            .then(module => module.decodeValues(codes, base))""",
                         [figure.get_attribute("data-codes"), None if base is None else int(base)])
    order = [(i, k) for i in range(rows) for k in range(cols) if (i, k) not in shown]
    assert cols > 12 and len(rest) == len(order) == rows * cols - len(shown)
    j = cols // 2  # a column the table leaves out
    assert (1, j) not in shown
    text = _hover_cell(page, figure, 1, j)
    assert text.endswith(f" · {j}: {rest[order.index((1, j))]}")
    # a cell the table shows reads the table's text
    first = table.locator("tbody tr").nth(1).locator("td").first.inner_text()
    assert _hover_cell(page, figure, 1, 0).endswith(f" · 0: {first}")
    watch.assert_clean()
