"""The attention pages say where each featured head looks on the example's own text, and
whether that is its target, as a plain traced run of the same tokens computes it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer, load_tokenizer, probes
from docs_build.text.numbers import format_value

from .conftest import text_of


# the demo's own tokens and the labels the pages give them
TOKENIZER = load_tokenizer(DEMO_CHECKPOINT)
encode = TOKENIZER.encode


def token_label(token: int) -> str:
    return TOKENIZER.labels([token])[0]


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


@pytest.mark.parametrize("url", ["steps/attn.scores/", "pt/steps/attn.scores/"])
def test_a_head_that_misses_on_the_example_is_shown_doing_its_job_on_a_prompt_with_a_repeat(site, url):
    """Where the example's text gives a featured head nothing to do (the induction head on
    'The cat sat'), the page shows it on the circuit's prompt, which holds a repeat: arcs
    from its last position, the target in red, the weights of a plain traced run."""
    from glassllm.circuits import FEATURED_PROMPT

    ex = site.example
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    steps = list(model.generate(encode(ex.prompt), ex.tokens, greedy=ex.greedy,
                                temperature=ex.temperature, top_k=ex.top_k, seed=ex.sampling_seed))
    example = encode(ex.prompt) + [s.token for s in steps[:ex.traced_step]]
    on_example, on_repeat = Tracer(), Tracer()
    model.forward(example, trace=on_example)
    repeat = encode(FEATURED_PROMPT)
    model.forward(repeat, trace=on_repeat)
    report = probes.head_report(model)
    page = site.html(url)
    mark = "," if url.startswith("pt/") else "."
    missing = []
    for layer in range(model.config.n_layers):
        prev, ind = report.previous_token[layer], report.induction[layer]
        kind = "induction" if ind.max() >= prev.max() else "previous_token"
        head = int(np.argmax(ind if kind == "induction" else prev))
        last = len(example) - 1
        if kind == "previous_token":
            target = last - 1
        else:
            earlier = [i for i in range(last) if example[i] == example[last]]
            target = earlier[-1] + 1 if earlier else None
        row = np.asarray(on_example.get("attn.softmax", layer=layer, head=head).value)[last]
        figure = re.search(rf'<figure class="gl-journey-figure" data-layer="{layer}" '
                           rf'data-head="{head}">(.*?)</figure>', page, re.S)
        if target is not None and int(np.argmax(row)) == target:
            assert figure is None, layer  # it does its job on the example's own text
            continue
        missing.append(layer)
        assert figure is not None, (layer, head)
        end = len(repeat) - 1
        weights = np.asarray(on_repeat.get("attn.softmax", layer=layer, head=head).value)[end]
        if kind == "previous_token":
            goal = end - 1
        else:
            goal = max(i for i in range(end) if repeat[i] == repeat[end]) + 1
        assert int(np.argmax(weights)) == goal  # the demo model's head does its job there
        red = re.findall(r'stroke="#d62728"[^>]*><title>([^<]*)</title>', figure.group(1))
        assert red == [f"{token_label(repeat[goal])} {goal}: {format_value(weights[goal], mark)}"]
        caption = text_of(re.search(r"<figcaption>(.*?)</figcaption>", figure.group(1), re.S).group(1))
        assert f"L{layer}H{head}" in caption and format_value(weights[goal], mark) in caption
        assert FEATURED_PROMPT in text_of(page)
    if not missing:  # every featured head does its job on the example's own text
        pytest.skip("no featured head misses on the example's text: no repeat figure to check")
