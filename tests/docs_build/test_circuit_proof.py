"""The model card's "Proving the circuit" (docs_build/pages/circuit_proof.py) on the demo
site, against independent computations: an ablation done by zeroing the head's columns of
W_O instead of an edit, the attention of the featured prompt read from a plain traced run,
and the logit's direct parts re-added by hand."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer, circuits, probes
from docs_build.text.numbers import format_value

from .conftest import text_of


@pytest.fixture(scope="module")
def model() -> GlassLM:
    return GlassLM.from_pretrained(DEMO_CHECKPOINT)


def section(site, url: str = "model-card/") -> str:
    page = site.html(url)
    start = page.index('id="proving-the-circuit"' if url == "model-card/" else 'id="provando-o-circuito"')
    end = page.find("<h2", start + 10)  # the next section, or the end of the page
    return page[start:end if end >= 0 else page.index("</article>", start)]


def table_rows(fragment: str, cls: str) -> list[list[str]]:
    table = re.search(rf'<table class="[^"]*{cls}[^"]*">(.*?)</table>', fragment, re.S).group(1)
    body = table.split("<tbody>")[1]
    return [[text_of(c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def without_head_output(model: GlassLM, layer: int, head: int) -> GlassLM:
    """The same model with head ``head`` of block ``layer`` cut off from the stream by hand:
    its d_h columns of W_O set to zero (what zero-ablating its context does)."""
    edited = copy.deepcopy(model)
    dh = model.config.d_model // model.config.n_heads
    edited.layers[layer].wo[:, head * dh:(head + 1) * dh] = 0
    return edited


def test_each_ablation_row_is_the_model_with_that_heads_output_columns_zeroed(site, model):
    rows = {row[0]: row for row in table_rows(section(site), "gl-ablation")}
    heldout = (DEMO_CHECKPOINT / "heldout.txt").read_bytes()
    heads = circuits.circuit_heads(circuits.measure(model))
    featured = circuits.featured_heads(circuits.measure(model))
    # columns: ablated, each qualifying head's score (previous-token, then induction), ρ, loss
    columns = [("previous_token", h) for h in heads.previous_token]
    columns += [("induction", h) for h in heads.induction]
    for one in (featured.previous_token[0], featured.induction[0], circuits.Head(0, 0)):
        edited = without_head_output(model, one.layer, one.head)
        report = probes.head_report(edited)
        row = rows[one.name]
        scores = {"previous_token": report.previous_token, "induction": report.induction}
        assert row[1:1 + len(columns)] == [format_value(scores[kind][h.layer, h.head])
                                           for kind, h in columns]
        assert row[1 + len(columns)] == format_value(report.copy_ratio)
        loss = probes.heldout_loss(edited, heldout, model.config.max_len)
        assert row[2 + len(columns)] == format_value(loss)


def test_the_composition_sentences_follow_the_measured_composition(site, model):
    text = text_of(section(site))
    heads = circuits.circuit_heads(circuits.measure(model))
    if not heads.previous_token or not heads.induction:
        # no circuit by the rule: the page says which heads are missing, claims nothing
        assert "Not measured: the composition needs a qualifying previous-token head" in text
        report = probes.head_report(model)
        if not heads.induction:
            layer, head, score = report.best_induction()
            assert (f"No head qualifies as an induction head on this probe: the best, "
                    f"L{layer}H{head}, scores {format_value(score)}") in text
        if not heads.previous_token:
            layer, head, score = report.best_previous_token()
            assert (f"No head qualifies as a previous-token head on this probe: the best, "
                    f"L{layer}H{head}, scores {format_value(score)}") in text
        assert "induction head's score collapses" not in text
        return
    comp = circuits.composition(model)
    prev = comp.previous_token_collapses_induction
    # the sentence says which way the measurement went (ui.yml proof.comp.prev_*, ind_*)
    assert ("ablated, every induction head's score collapses" in text) == prev
    assert ("ablated, not every induction head's score collapses" in text) == (not prev)
    copying = comp.induction_collapses_copying
    assert ("ablated, copying collapses: 1 − ρ goes from" in text) == copying
    assert ("ablated, copying does not collapse: 1 − ρ goes from" in text) == (not copying)
    assert ("through the keys: K-composition" in text) == comp.k_composition
    for change in comp.induction_without_previous_token:
        head = change.what.split()[-1]
        assert f"{head} {format_value(change.clean)} → {format_value(change.edited)}" in text


def test_where_each_head_looks_is_read_from_a_traced_run_of_the_featured_prompt(site, model):
    tokens = model.encode(circuits.FEATURED_PROMPT)
    tracer = Tracer()
    model.forward(tokens, trace=tracer)
    text = text_of(section(site))
    last = len(tokens) - 1
    # the previous-token head looks at the position before; each induction head at the token
    # after the earlier occurrence of the last token
    earlier = max(i for i in range(last) if tokens[i] == tokens[last])
    measures = circuits.measure(model)
    heads = circuits.featured_heads(measures)
    for kind, target in (("previous_token", last - 1), ("induction", earlier + 1)):
        for head in getattr(heads, kind):
            weights = np.asarray(tracer.get("attn.softmax", layer=head.layer, head=head.head).value)[last]
            if int(np.argmax(weights)) == target:
                assert (f"{head.name} puts {format_value(weights[target])} of its attention on "
                        f"position {target}") in text
            else:
                assert f"{head.name} misses its target, position {target}" in text
            score = measures.score(kind, head)
            said = f"{head.name} does not qualify (its probe score is {format_value(score)}"
            assert (said in text) == (score < circuits.QUALIFIES)


def test_the_direct_parts_add_up_to_the_models_logit(site, model):
    rows = table_rows(section(site), "gl-attribution")
    parts = [float(value) for _, value in rows[:-1]]
    tokens = model.encode(circuits.FEATURED_PROMPT)
    logits = model.forward(tokens)[-1]
    answer = int(np.argmax(logits))
    assert sum(parts) == pytest.approx(float(logits[answer]), rel=2e-3)  # 4 digits each
    assert rows[-1][1] == format_value(logits[answer]) or \
        float(rows[-1][1]) == pytest.approx(float(logits[answer]), rel=1e-3)


def test_both_languages_carry_the_same_tables(site):
    for cls in ("gl-ablation", "gl-paths", "gl-patch-heads", "gl-lens", "gl-attribution"):
        present = [f'class="gl-card-table gl-proof {cls}"' in section(site, url)
                   for url in ("model-card/", "pt/model-card/")]
        assert present[0] == present[1], cls
        if not present[0]:  # the composition is not measured when no circuit qualifies
            assert cls == "gl-paths" and "Not measured: the composition" in text_of(section(site))
            continue
        english, portuguese = table_rows(section(site), cls), table_rows(section(site, "pt/model-card/"), cls)
        assert len(english) == len(portuguese)
        # the same numbers, each language with its decimal mark (0.8865, 0,8865)
        numbers = lambda rows, mark: [[n.replace(mark, ".") for n in re.findall(
            rf"-?\d+(?:{re.escape(mark)}\d+)?(?:e-?\d+)?", " ".join(r))] for r in rows]
        assert numbers(english, ".") == numbers(portuguese, ","), cls
        assert not re.search(r"\d\.\d", " ".join(" ".join(r) for r in portuguese)), cls
