"""The attention pages say where each featured head looks on the example's own text, and
whether that is its target, as a plain traced run of the same tokens computes it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer, encode, probes
from glassllm.tokenizer import token_label
from docs_build.text.numbers import format_value

from .conftest import text_of


@pytest.mark.parametrize("step", ["attn.scores", "attn.softmax"])
def test_the_featured_notes_say_where_each_head_looks_on_the_example(site, step):
    ex = site.example
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    steps = list(model.generate(encode(ex.prompt), ex.tokens, greedy=ex.greedy,
                                temperature=ex.temperature, top_k=ex.top_k, seed=ex.sampling_seed))
    tokens = encode(ex.prompt) + [s.token for s in steps[:ex.traced_step]]
    tracer = Tracer()
    model.forward(tokens, trace=tracer)
    report = probes.head_report(model)
    notes = [text_of(n) for n in re.findall(r'<p class="gl-featured-note">(.*?)</p>',
                                            site.html(f"steps/{step}/"), re.S)]
    last = len(tokens) - 1
    for layer, note in enumerate(notes):
        prev, ind = report.previous_token[layer], report.induction[layer]
        kind = "induction" if ind.max() >= prev.max() else "previous_token"
        head = int(np.argmax(ind if kind == "induction" else prev))
        row = np.asarray(tracer.get("attn.softmax", layer=layer, head=head).value)[last]
        if kind == "previous_token":
            target = last - 1
        else:
            earlier = [i for i in range(last) if tokens[i] == tokens[last]]
            target = earlier[-1] + 1 if earlier else None
        if target is None:
            assert "occurs nowhere before" in note
        elif int(np.argmax(row)) == target:
            assert f"head {head} puts {format_value(row[target])} on its target, position {target}" in note
        else:
            looks = int(np.argmax(row))
            assert (f"head {head} misses its target, position {target} (“{token_label(tokens[target])}”, "
                    f"{format_value(row[target])}): it looks most at position {looks}") in note
