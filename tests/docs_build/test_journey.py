"""'One token's journey' (docs/journey.md, its figures from docs_build/pages/journey.py): the
numbers it prints and the arcs it draws are a plain traced run of the demo model on the
featured prompt, in both languages, and it comes first in the reading order."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer, circuits, probes
from docs_build.text.numbers import format_value

from .conftest import text_of

MODEL = GlassLM.from_pretrained(DEMO_CHECKPOINT)
TOKENS = MODEL.encode(circuits.FEATURED_PROMPT)
LAST = len(TOKENS) - 1


def token_label(token: int) -> str:
    """A token as the pages' chips write it: the demo tokenizer's label (␣the)."""
    return MODEL.tokenizer.labels([token])[0]


@pytest.fixture(scope="module")
def traced():
    model = MODEL
    tracer = Tracer()
    logits = model.forward(TOKENS, trace=tracer)[-1].astype(np.float64)
    probs = np.exp(logits - logits.max())
    return tracer, probs / probs.sum()


@pytest.mark.parametrize("url", ["journey/", "pt/journey/"])
def test_the_figures_are_the_traced_run_of_the_featured_prompt(site, traced, url):
    tracer, probs = traced
    page = site.html(url)
    mark = "," if url.startswith("pt/") else "."  # each language writes its decimal mark
    text = text_of(page)
    # the prompt's top guesses at the last position
    for token in np.argsort(-probs, kind="stable")[:5]:
        assert f"“{token_label(int(token))}” {format_value(probs[token], mark)}" in text
    figures = re.findall(r'<figure class="gl-journey-figure"[^>]*>(.*?)</figure>', page, re.S)
    assert len(figures) == 2
    earlier = max(i for i in range(LAST) if TOKENS[i] == TOKENS[LAST])
    # the featured heads: the best-scoring of each kind on the probe (qualifying or not)
    report = probes.head_report(MODEL)
    (l0, h0, _), (l1, h1, _) = report.best_previous_token(), report.best_induction()
    for figure, (layer, head, target) in zip(figures, ((l0, h0, LAST - 1), (l1, h1, earlier + 1))):
        row = np.asarray(tracer.get("attn.softmax", layer=layer, head=head).value)[LAST]
        caption = text_of(re.search(r"<figcaption>(.*?)</figcaption>", figure, re.S).group(1))
        assert f"L{layer}H{head}" in caption and format_value(row[target], mark) in caption
        # one arc per key with at least 0.02 of the weight; the target's red
        paths = re.findall(r'<path d="[^"]*" fill="none" stroke="(#[0-9a-f]+)"[^>]*><title>([^<]*)</title>', figure)
        shown = {int(title.split()[-2].rstrip(":")) for _, title in paths}
        assert shown == {j for j in range(LAST) if row[j] >= 0.02}
        red = [title for colour, title in paths if colour == "#d62728"]
        # the target's arc red when drawn; a head that leaves it under 0.02 draws none there
        # (the caption above gives its weight)
        assert red == ([f"{token_label(TOKENS[target])} {target}: {format_value(row[target], mark)}"]
                       if row[target] >= 0.02 else [])
    # the prompt as tokens, each numbered, in the page's sentence
    assert " | ".join(f"{i} “{token_label(t)}”" for i, t in enumerate(TOKENS)) in text
    top = int(np.argmax(probs))
    assert f"−ln {format_value(probs[top], mark)} = {format_value(-math.log(probs[top]), mark)}" in text


def test_the_journey_comes_first_after_home_in_both_navigations(site):
    for url, first in (("", "journey/"), ("pt/", "pt/journey/")):
        nav = re.findall(r'<a href="([^"]+)" class="md-nav__link', site.html(url))
        links = [href for href in nav if not href.startswith("#")]
        assert any(href.rstrip("/").endswith(first.rstrip("/").split("/")[-1]) for href in links[:3]), links[:5]


@pytest.mark.parametrize("lang", ["en", "pt"])
def test_the_quick_start_prints_a_number_the_journey_shows(site, lang, capsys):
    """The home page's quick start loads DEMO_CHECKPOINT; the last number it prints is the
    induction head's weight the journey draws as the red arc (a demo model whose induction
    head moved would make the quick start print some other head's weight)."""
    import contextlib
    import io

    from tests.docs.test_examples import python_blocks

    page = "index.md" if lang == "en" else "pt/index.md"
    block = next(b for b in python_blocks(page) if "DEMO_CHECKPOINT" in b.code)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.code, page, "exec"), {"__name__": "quick_start"})
    printed = float(out.getvalue().split()[-1])
    journey = site.html("journey/" if lang == "en" else "pt/journey/")
    red = re.findall(r'stroke="#d62728"[^>]*><title>([^<]*)</title>', journey)
    mark = "," if lang == "pt" else "."
    assert red and red[-1].endswith(": " + format_value(printed, mark)), (red, printed)
