"""The site's KV cache: every step page says the shape of its snapshot during the example's
generation with the cache (checked against a traced cached run of the engine itself), and the
replay page says how closely its cached recording agrees with the full recompute (checked
against the two runs recomputed here)."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from docs_build.engine.runner import REPLAY_TOKENS
from docs_build.engine.schema import CacheCheck
from docs_build.pages.cache_check import cache_check_text
from docs_build.text.languages import LANGUAGES
from docs_build.text.numbers import format_value
from docs_build.text.ui import load_ui
from glassllm import DEMO_CHECKPOINT, STEPS, GlassLM, load_tokenizer
from glassllm.recording import loads

from .conftest import LANGS, ROOT

# mkdocs.yml's example runs the demo: its texts are read by the demo's own tokenizer
encode = load_tokenizer(DEMO_CHECKPOINT).encode

LINE = {"en": "During generation:", "pt": "Durante a geração:"}
SHAPE = re.compile(r"\(((?:\d+, )*\d*,?)\)")


def shapes_in(text: str) -> list[tuple[int, ...]]:
    """The tuples a sentence writes, in order: "(4, 1, 12)", "(256,)", "()"."""
    return [tuple(int(n) for n in inner.replace(" ", "").split(",") if n)
            for inner in SHAPE.findall(text)]


def during_generation(site, lang: str, step_id: str) -> str:
    page = site.html(f"{LANGS[lang][0]}steps/{step_id}/")
    found = re.search(rf"<strong>{re.escape(LINE[lang])}</strong>\s*(.*?)</li>", page, re.S)
    assert found, f"{lang} page of {step_id} has no '{LINE[lang]}' line"
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


@pytest.fixture(scope="module")
def cached_run(site):
    """The example's generation, traced with the KV cache (generate's default)."""
    ex = site.example
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)  # mkdocs.yml's model: demo
    steps = list(model.generate(encode(ex.prompt), ex.tokens, greedy=ex.greedy,
                                temperature=ex.temperature, top_k=ex.top_k,
                                seed=ex.sampling_seed, trace=True))
    return [{r.id: r.value.shape for r in s.trace.records if r.layer in (None, 0)}
            for s in steps]


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_every_step_page_says_its_shapes_during_cached_generation(site, cached_run, lang):
    n_prompt = len(encode(site.example.prompt))
    for step_id in STEPS:
        text = during_generation(site, lang, step_id)
        said = shapes_in(text)
        if step_id not in cached_run[0]:  # the loss and its gradient: training only
            assert said == [] and not any(step_id in run for run in cached_run), step_id
            continue
        traced = [run[step_id] for run in cached_run]
        first, later = traced[0], traced[1:]
        expected = [first] if all(s == first for s in later) else (
            [first, later[0]] if all(s == later[0] for s in later)
            else [first, later[0], later[-1]])
        assert said == expected, (lang, step_id, text)
        if len(expected) > 1:  # the first step is the prompt's pass, the others one position
            assert str(n_prompt) in text and f"1–{len(traced) - 1}" in text, (lang, step_id, text)
    # the key axis grows by one at each cached step; everything else keeps one row
    assert [run["attn.softmax"][1:] for run in cached_run] == [
        (n_prompt, n_prompt)] + [(1, n_prompt + k) for k in range(1, len(cached_run))]


def test_the_replay_page_states_how_closely_the_cache_agrees_with_the_full_recompute(site):
    ex = site.example
    run = loads((site.dir / "assets" / "replay" / "run.glrec").read_bytes())
    assert run.cache and len(run.generated) == max(ex.tokens, REPLAY_TOKENS)
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    full = list(model.generate(run.prompt, len(run.generated), greedy=ex.greedy,
                               temperature=ex.temperature, top_k=ex.top_k,
                               seed=ex.sampling_seed, trace=True, cache=False))
    assert [s.token for s in full] == run.generated
    probs = max(float(np.abs(e.value - full[e.gen].probs).max())
                for e in run.events if e.step == "probs")
    attention = max(float(np.abs(e.value - full[e.gen].trace.get("attn.softmax", layer=e.layer)
                                 .value[:, -e.value.shape[1]:]).max())
                    for e in run.events if e.step == "attn.softmax")
    assert 0 < probs < 1e-5 and 0 < attention < 1e-5  # float32 rounding, not zero, not more
    number = r"(-?[0-9][0-9.,]*(?:e[-+][0-9]+)?)"
    sentences = {
        "en": (f"Both chose the same {len(run.generated)} tokens",
               rf"are {number} in a next-token probability, {number} in a logit and {number} "
               rf"in an attention weight"),
        "pt": (f"As duas escolheram os mesmos {len(run.generated)} tokens",
               rf"são {number} numa probabilidade do próximo token, {number} num logit e "
               rf"{number} num peso de atenção")}
    for lang, (words, pattern) in sentences.items():
        page = html.unescape(site.html(f"{LANGS[lang][0]}replay/"))
        assert "glassllm:cache-check" not in page
        assert words in page
        numbers = [float(x.replace(",", ".")) for x in re.search(pattern, page).groups()]
        assert numbers[0] == pytest.approx(probs, rel=1e-3)
        assert numbers[2] == pytest.approx(attention, rel=1e-3)
        assert 0 < numbers[1] < 1e-3  # a logit, of size ~10


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.code)
def test_the_replay_page_says_so_when_the_two_runs_chose_different_tokens(lang):
    """The agreement's numbers are only printed when both runs chose the same tokens: after a
    different choice, the later steps read different sequences and their values differ by more
    than rounding, so the paragraph says the runs diverged instead."""
    ui = load_ui(ROOT / "docs", lang)
    same = CacheCheck(tokens=6, same_tokens=True, probs=2.4e-7, logits=2.1e-5, attention=5.7e-7)
    diverged = CacheCheck(tokens=6, same_tokens=False, probs=0.4375, logits=3.125, attention=0.1875)
    said, differs = cache_check_text(same, ui), cache_check_text(diverged, ui)
    mark = ui["number.decimal"]  # each language writes its decimal mark
    shown = [format_value(np.float32(x), mark) for x in (same.probs, same.logits, same.attention)]
    assert all(number in said for number in shown), (said, shown)
    hidden = [format_value(np.float32(x), mark) for x in (0.4375, 3.125, 0.1875)]
    assert "6" in differs and not any(number in differs for number in hidden), differs
    assert ("not choose the same" if lang.code == "en" else "não escolheram os mesmos") in differs
