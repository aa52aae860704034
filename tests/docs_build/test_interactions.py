"""The step pages' small interactions in a real browser (Playwright, Debian's chromium): the
temperature / top-k control of the probabilities and sampled-token pages (sampling.js)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from docs_build.text.numbers import format_value
from glassllm.model import next_token_distribution

PHONE = 390  # px: a common phone's CSS width


def _table(page) -> list[tuple[str, str]]:
    """The control's table: (token ID, printed probability) per row."""
    return page.eval_on_selector_all(".gl-sampling table.gl-sampling-top tbody tr", """rows =>
        rows.map(r => [r.cells[1].textContent, r.cells[2].querySelector('span').textContent])""")


def _engine_table(logits, temperature, top_k, rows: int) -> list[tuple[str, str]]:
    probs = next_token_distribution(logits, temperature, top_k)
    order = np.argsort(-probs.astype(np.float64), kind="stable")[:rows]
    return [[str(int(v)), format_value(probs[v])] for v in order]


def _set(page, selector: str, value: str) -> None:
    page.eval_on_selector(selector, """(input, value) => { input.value = value;
        input.dispatchEvent(new Event('input', { bubbles: true })); }""", value)


@pytest.mark.parametrize("path", ["steps/probs/", "pt/steps/sample/"])
def test_the_control_recomputes_the_next_token_distribution_in_the_page(open_page, path):
    watch = open_page(path, width=PHONE)
    page = watch.page
    box = page.locator(".gl-sampling.gl-sampling-live")
    box.wait_for()
    logits = np.frombuffer(base64.b64decode(box.get_attribute("data-logits")), dtype="<f4")
    assert logits.shape == (256,)
    rows = len(_table(page))
    # it opens on the run's T and k: the run's probabilities, as the engine computes them
    t0 = float(page.input_value("input.gl-sampling-t"))
    k0 = int(page.input_value("input.gl-sampling-k"))
    assert _table(page) == _engine_table(logits, t0, None if k0 >= 256 else k0, rows)
    for temperature, top_k in (("0.5", "3"), ("2.5", "256"), ("0.05", "1")):
        _set(page, "input.gl-sampling-t", temperature)
        _set(page, "input.gl-sampling-k", top_k)
        want = _engine_table(logits, float(temperature), None if top_k == "256" else int(top_k), rows)
        assert _table(page) == want, (temperature, top_k)
        assert page.inner_text(".gl-sampling-t-value") == format_value(float(temperature))
    # top-1 leaves one token with all the probability
    assert [p for _, p in _table(page)] == ["1"] + ["0"] * (rows - 1)
    # at a phone's width the control stays inside the page
    assert box.bounding_box()["x"] + box.bounding_box()["width"] <= PHONE
    for control in ("input.gl-sampling-t", "input.gl-sampling-k"):
        assert page.locator(control).bounding_box()["x"] + page.locator(control).bounding_box()["width"] <= PHONE
    watch.assert_clean()
