"""The replay's inspector agrees with itself and with the step pages (issue 8 item 7): window
and axis labels count from 0, masked cells (−∞, and softmax's zeros above the diagonal) look
alike and are explained only where shown, and the colour scale is the step page's, said to be
one head's own where the snapshot is split by head."""

from __future__ import annotations

import re

import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM

from tests.replay.test_browser import EVENT, current, jump

pytestmark = pytest.mark.browser


def legend(page) -> dict:
    return page.eval_on_selector(".gr-legend", """l => ({
        text: l.textContent,
        numbers: Array.from(l.querySelectorAll('.gr-legend-end')).map(s => s.textContent),
        masked: Array.from(l.querySelectorAll('.gr-cell--masked')).map(s => s.textContent)})""")


def header_labels(page) -> tuple[list[str], list[str]]:
    cols = page.eval_on_selector_all(".gr-grid thead th:not(.gr-corner)", "hs => hs.map(h => h.textContent)")
    rows = page.eval_on_selector_all(".gr-grid tbody th", "hs => hs.map(h => h.textContent)")
    return cols, rows


def test_window_labels_count_from_0_like_the_axis_labels(open_replay):
    watch = open_replay()
    page = watch.page
    jump(page, step="attn.softmax", layer=0, gen=0)
    cols, rows = header_labels(page)
    n = len(rows)
    assert (rows[0].split()[0], rows[-1].split()[0]) == ("0", str(n - 1))
    window = page.inner_text(".gr-window")
    assert f"rows 0–{n - 1} of {n}" in window and f"columns 0–{n - 1} of {n}" in window
    # a vocabulary window: its first and last column labels are the ends the text names
    jump(page, step="logits", gen=0)
    cols, _ = header_labels(page)
    first, last = int(cols[0].split()[0]), int(cols[-1].split()[0])
    vocab = GlassLM.from_pretrained(DEMO_CHECKPOINT).config.vocab_size  # mkdocs.yml: model: demo
    assert f"columns {first}–{last} of {vocab}" in page.inner_text(".gr-window")
    # the token filter and the event count generation steps from 0 too
    assert page.eval_on_selector("#gr-filter-gen option[value='0']", "o => o.textContent").startswith("0:")
    assert "counted from 0" in page.inner_text(".gr-facts")
    watch.assert_clean()


def test_softmax_zeros_above_the_diagonal_are_masked_and_the_legend_says_so_only_there(open_replay):
    watch = open_replay()
    page = watch.page
    # the prompt's pass: a cached step's one row sees every key, so only step 0 is masked
    jump(page, step="attn.softmax", layer=1, gen=0)
    cells = page.eval_on_selector_all(".gr-grid td.gr-cell", """cs => cs.map(c => [
        Number(c.dataset.row), Number(c.dataset.col), c.dataset.value,
        c.classList.contains('gr-cell--masked')])""")
    above = [(r, c, v, m) for r, c, v, m in cells if c > r]
    assert above and all(v == "0" and m for _, _, v, m in above)
    assert not any(m for r, c, _, m in cells if c <= r)
    shown = legend(page)
    assert shown["masked"] == ["0"] and "masked by the causal mask" in shown["text"]
    # the same hatching as attn.mask's −∞ cells
    jump(page, step="attn.mask", layer=1, gen=0)
    assert legend(page)["masked"] == ["−∞"]
    # nothing masked in attn.scores, embed or the logits: no masked entry in their legend
    for step, layer in (("attn.scores", 1), ("embed", None), ("logits", None)):
        jump(page, step=step, layer=layer, gen=1)
        assert page.locator(".gr-grid td.gr-cell--masked").count() == 0
        shown = legend(page)
        assert shown["masked"] == [] and "masked" not in shown["text"], step
    watch.assert_clean()


def test_the_colour_scale_is_the_step_pages_and_says_when_it_is_one_heads(open_replay, site_url):
    watch = open_replay()
    page = watch.page
    jump(page, step="attn.scores", layer=1, gen=0)
    page.select_option('.gr-inspector select[data-axis="head"]', "1")
    page.wait_for_function("() => document.querySelector('.gr-inspector select[data-axis=head]').value === '1'")
    shown = legend(page)
    assert shown["text"].startswith("Colour scale of this head:")
    low, high = (float(x.replace("−", "-")) for x in shown["numbers"])
    # the step page's heatmap of the same head (the example's traced step, generation step 0)
    page.goto(site_url + "steps/attn.scores/")
    figure = page.locator('figure.gl-heatmap[data-layer="1"][data-head="1"]').first
    # (its tab may be closed: read the text, not what is rendered)
    ticks = figure.evaluate("f => Array.from(f.querySelectorAll('.gl-legend-ticks span'), t => t.textContent)")
    first, bound = (float(ticks[k].replace("−", "-")) for k in (0, 2))
    if first == 0:  # values of one sign (a short example): a sequential scale from 0
        assert low == pytest.approx(0, abs=1e-6) and high == pytest.approx(bound, rel=5e-3)
    else:  # diverging around 0
        assert first == -bound and ticks[1] == "0"
        assert low == pytest.approx(-bound, rel=5e-3) and high == pytest.approx(bound, rel=5e-3)
    assert "colour scale of this head" in figure.locator("figcaption").text_content()
    # a snapshot without heads: the legend does not say "head"
    page.goto(site_url + "replay/")
    page.wait_for_selector(f"{EVENT}[data-event-index]")
    assert current(page)["step"] == "embed"
    text = legend(page)["text"]
    assert text.startswith("Colour scale:") and not re.search(r"\bhead\b", text)
    watch.assert_clean()


def test_portuguese_inspector_says_the_same(open_replay):
    watch = open_replay("pt/replay/")
    page = watch.page
    jump(page, step="attn.softmax", layer=0, gen=0)
    shown = legend(page)
    assert shown["text"].startswith("Escala de cores desta cabeça:")
    assert shown["masked"] == ["0"] and "mascarado pela máscara causal" in shown["text"]
    # numbers with the language's decimal comma (data-value keeps the point: it is data)
    assert not any("." in number for number in shown["numbers"]), shown
    cells = page.eval_on_selector_all(".gr-grid td.gr-cell", "cs => cs.map(c => [c.textContent, c.dataset.value])")
    assert not any("." in text for text, _ in cells)
    assert any("," in text for text, _ in cells) and any("." in value for _, value in cells)
    n = page.locator(".gr-grid tbody tr").count()
    assert f"linhas 0–{n - 1} de {n}" in page.inner_text(".gr-window")
    assert "contando do 0" in page.inner_text(".gr-facts")
    watch.assert_clean()
