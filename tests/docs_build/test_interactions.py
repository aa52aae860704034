"""The step pages' small interactions in a real browser (Playwright, Debian's chromium): the
temperature / top-k control of the probabilities and sampled-token pages (sampling.js)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from docs_build.text.numbers import format_value
from glassllm import DEMO_CHECKPOINT, GlassLM
from glassllm.model import next_token_distribution

PHONE = 390  # px: a common phone's CSS width


def _table(page) -> list[tuple[str, str]]:
    """The control's table: (token ID, printed probability) per row."""
    return page.eval_on_selector_all(".gl-sampling table.gl-sampling-top tbody tr", """rows =>
        rows.map(r => [r.cells[1].textContent, r.cells[2].querySelector('span').textContent])""")


def _engine_table(logits, temperature, top_k, rows: int, mark: str = ".") -> list[tuple[str, str]]:
    probs = next_token_distribution(logits, temperature, top_k)
    order = np.argsort(-probs.astype(np.float64), kind="stable")[:rows]
    return [[str(int(v)), format_value(probs[v], mark)] for v in order]


def _set(page, selector: str, value: str) -> None:
    page.eval_on_selector(selector, """(input, value) => { input.value = value;
        input.dispatchEvent(new Event('input', { bubbles: true })); }""", value)


@pytest.mark.parametrize("path", ["steps/probs/", "pt/steps/sample/"])
def test_the_control_recomputes_the_next_token_distribution_in_the_page(open_page, path):
    watch = open_page(path, width=PHONE)
    page = watch.page
    mark = "," if path.startswith("pt/") else "."  # the page language's decimal mark
    box = page.locator(".gl-sampling.gl-sampling-live")
    box.wait_for()
    logits = np.frombuffer(base64.b64decode(box.get_attribute("data-logits")), dtype="<f4")
    vocab = GlassLM.from_pretrained(DEMO_CHECKPOINT).config.vocab_size  # mkdocs.yml: the demo
    assert logits.shape == (vocab,)
    rows = len(_table(page))
    # it opens on the run's T and k: the run's probabilities, as the engine computes them
    t0 = float(page.input_value("input.gl-sampling-t"))
    k0 = int(page.input_value("input.gl-sampling-k"))
    assert _table(page) == _engine_table(logits, t0, None if k0 >= vocab else k0, rows, mark)
    for temperature, top_k in (("0.5", "3"), ("2.5", str(vocab)), ("0.05", "1")):
        _set(page, "input.gl-sampling-t", temperature)
        _set(page, "input.gl-sampling-k", top_k)
        want = _engine_table(logits, float(temperature), None if top_k == str(vocab) else int(top_k),
                             rows, mark)
        assert _table(page) == want, (temperature, top_k)
        assert page.inner_text(".gl-sampling-t-value") == format_value(float(temperature), mark)
    # top-1 leaves one token with all the probability
    assert [p for _, p in _table(page)] == ["1"] + ["0"] * (rows - 1)
    # at a phone's width the control stays inside the page
    assert box.bounding_box()["x"] + box.bounding_box()["width"] <= PHONE
    for control in ("input.gl-sampling-t", "input.gl-sampling-k"):
        assert page.locator(control).bounding_box()["x"] + page.locator(control).bounding_box()["width"] <= PHONE
    watch.assert_clean()


LIT = """() => ({
    cells: [...document.querySelectorAll('table.gl-values td.gl-lit')].map(td => td.textContent),
    headers: [...document.querySelectorAll('table.gl-values th.gl-lit')].map(th => th.textContent),
    marks: [...document.querySelectorAll('figure.gl-heatmap rect.gl-lit-cell')].map(r =>
        [r.closest('figure').dataset.step, r.closest('figure').dataset.head ?? null,
         ...['x', 'y', 'width', 'height'].map(k => Number(r.getAttribute(k)))]),
})"""


@pytest.mark.parametrize("path,axes", [("steps/attn.scores/", 3), ("pt/steps/mlp.down/", 2),
                                       ("steps/probs/", 1)])
def test_pointing_at_a_worked_entry_highlights_the_snapshot_cell_it_redoes(open_page, path, axes):
    """Hovering an entry of the worked example's check table lights its cell in the values
    table (the value it shows is the entry's snapshot value) with the row and column
    headers, and outlines it in the heatmap; focusing it from the keyboard does the same;
    leaving it clears both."""
    watch = open_page(path)
    page = watch.page
    entries = page.locator("table.gl-worked-checks tr[data-index]")
    entry = entries.first
    # the entry the page works: (head, row, column), (row, column) or (token)
    index = tuple(int(n) for n in entry.get_attribute("data-index").split(","))
    assert len(index) == axes
    snapshot_text = entry.locator("td").nth(2).inner_text()
    step = page.get_attribute(".gl-worked", "data-step")
    head = str(index[0]) if len(index) == 3 else None
    where = f'[data-step="{step}"]' + (f'[data-head="{head}"]' if head else ":not([data-head])")
    table = page.locator(f"table.gl-values{where}").first
    figure = page.locator(f"figure.gl-heatmap[data-shape]{where}").first
    grid_cols = int(figure.get_attribute("data-shape").split()[1])  # a vocabulary grid's width
    cell = divmod(index[0], grid_cols) if len(index) == 1 else index[-2:]
    entry.hover()
    lit = page.evaluate(LIT)
    if len(index) == 1:  # a vector's table (its top tokens): the token's row, its ID and
        # probability lit, when the table lists the token
        listed = table.evaluate("t => [...t.tBodies[0].rows].map(r => r.cells[1]?.textContent)")
        assert lit["cells"] == ([str(index[0]), snapshot_text] if str(index[0]) in listed else []), lit
    else:
        rows, cols = ([int(n) for n in table.get_attribute(name).split()] for name in ("data-rows", "data-cols"))
        if cell[0] in rows and cell[1] in cols:  # the table's cell says what the entry says
            assert lit["cells"] == [snapshot_text] and len(lit["headers"]) == 2, lit
        else:  # a column the table cuts: nothing else lit, the heatmap shows it
            assert lit["cells"] == [], lit
    # the heatmap's cell, outlined where the image draws it
    n_rows, n_cols = (int(n) for n in figure.get_attribute("data-shape").split())
    image = figure.locator("image.gl-heatmap-cells")
    x0, y0, width, height = (float(image.get_attribute(k)) for k in ("x", "y", "width", "height"))
    assert lit["marks"] == [[step, head, x0 + cell[1] * width / n_cols, y0 + cell[0] * height / n_rows,
                             width / n_cols, height / n_rows]]
    page.mouse.move(0, 0)
    assert page.evaluate(LIT) == {"cells": [], "headers": [], "marks": []}
    entry.focus()  # the keyboard's way to the same
    assert page.evaluate(LIT) == lit
    page.keyboard.press("Tab")  # focus moves on (to the next entry, or out): this one's light goes
    assert page.evaluate(LIT) != lit
    watch.assert_clean()


@pytest.mark.parametrize("path", ["steps/attn.q_rope/", "pt/model/"])
def test_math_shows_with_javascript_off(browser, base_url, path):
    """The formulas are typeset at build: with JavaScript off the browser still lays out the
    equation, the worked arithmetic and the inline formulas as math (MathML boxes of real
    size), in KaTeX's fonts."""
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(base_url + path)
        page.wait_for_load_state("load")
        formulas = page.locator("article math")
        assert formulas.count() > 5
        sizes = formulas.evaluate_all("ms => ms.map(m => { const r = m.getBoundingClientRect();"
                                      " return [m.getAttribute('display'), r.width, r.height]; })")
        assert all(width > 3 and height > 5 for _, width, height in sizes), sizes
        blocks = [(w, h) for display, w, h in sizes if display == "block"]
        if path.startswith("steps/"):
            assert len(blocks) >= 2 and all(w > 100 and h > 15 for w, h in blocks), blocks
        font = page.eval_on_selector("article math", "m => getComputedStyle(m).fontFamily")
        assert font.startswith("KaTeX_Main"), font
    finally:
        context.close()


def test_an_aligned_block_is_set_as_tex_sets_it(open_page):
    """KaTeX's aligned blocks (the equations, the worked arithmetic) in the browser's MathML:
    the left column's formulas end where the right column's begin (at the = they align on)."""
    page = open_page("steps/probs/").page
    cells = page.evaluate("""() => [...document.querySelectorAll('.gl-equation mtable')[0].children]
        .map(tr => [...tr.children].map(td => { const c = td.firstElementChild.getBoundingClientRect();
                                                 return [c.left, c.right]; }))""")
    assert len(cells) >= 3
    lefts_end = [row[0][1] for row in cells]
    rights_start = [row[1][0] for row in cells]
    assert max(lefts_end) - min(lefts_end) < 1.5  # right-aligned left column
    assert max(rights_start) - min(rights_start) < 1.5  # left-aligned right column
    assert all(0 <= start - end < 4 for start, end in zip(rights_start, lefts_end))  # no gap
