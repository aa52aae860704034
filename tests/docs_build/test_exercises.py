"""The step pages' exercises (docs_build/data/exercises.py, html/exercises.py): every step has
at least one, each numeric answer equals the same quantity recomputed here from a fresh
glassllm Tracer run of the demo model, its weights and its probe (whole arrays, float64, the
question's indices as the only input taken from the exercise), and the built site shows them
with their answers folded in a <details> block on every step page of both languages."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

import numpy as np
import pytest

from docs_build.data.exercises import exercises
from docs_build.errors import DocsBuildError
from docs_build.html.exercises import exercise_html, load_exercise_texts
from docs_build.text.languages import LANGUAGES
from docs_build.text.numbers import format_value
from glassllm import STEPS, GlassLM, Tracer

from .conftest import LANGS, text_of
from .test_worked import demo, fresh_traces, softmax, wide  # noqa: F401 (the fixture)

ROOT = Path(__file__).resolve().parents[2]


def params_of(model: GlassLM) -> int:
    """Every weight array of the model, counted from the arrays themselves."""
    arrays = [model.embed_tokens, model.norm]
    if model.lm_head is not model.embed_tokens:
        arrays.append(model.lm_head)
    for b in model.layers:
        arrays += [b.attn_norm, b.mlp_norm, b.wq, b.wk, b.wv, b.wo, b.w_gate, b.w_up, b.w_down]
    return sum(int(np.asarray(a).size) for a in arrays)


def truth(ex, run, study, gen, loss) -> float:
    """The exercise's answer recomputed independently, from its question's indices."""
    f, c = ex.fields, run.config
    got = lambda sid, layer=None: wide(gen.get(sid, layer).value)  # noqa: E731
    model = run.model
    n = len(run.traced_tokens)
    if ex.kind == "embed":  # the row of E that the fresh run's row i is
        x = got("embed")[f["i"]]
        return float(np.argmin(np.abs(wide(model.embed_tokens) - x).sum(axis=1)))
    if ex.kind == "rms4":
        layer = f["layer"]
        x = (got("embed") if layer == 0 else got("mlp.residual", layer - 1))[f["i"], :4]
        return float(x[0] / np.sqrt((x ** 2).mean() + c.norm_eps))
    if ex.kind == "q_rows":
        # the rows of wq whose product with h gives head r's query (the recorded split)
        h, q = got("attn.norm", f["layer"]), got("attn.q", f["layer"])[f["r"]]
        full = h @ wide(model.layers[f["layer"]].wq).T
        first = [k for k in range(full.shape[1]) if np.allclose(full[:, k], q[:, 0], atol=1e-4)]
        return float(first[0])
    if ex.kind == "k_group":
        group = c.n_heads // c.n_kv_heads
        return float(f["r"] // group)
    if ex.kind == "cache":
        k = sum(np.asarray(gen.get("attn.k", layer).value).size for layer in range(c.n_layers))
        v = sum(np.asarray(gen.get("attn.v", layer).value).size for layer in range(c.n_layers))
        return float(k + v)
    if ex.kind == "rope_slow":
        return f["i"] * c.rope_theta ** (-(c.head_dim - 2) / c.head_dim)
    if ex.kind == "rope_distance":
        return (f["i"] - f["j"]) * c.rope_theta ** (-2 / c.head_dim)
    if ex.kind == "score_ratio":
        a = got("attn.softmax", f["layer"])[f["r"], f["i"]]
        return float(a[f["j"]] / a[f["j2"]])
    if ex.kind == "mask_count":
        return float(np.isneginf(got("attn.mask", f["layer"])[f["r"]]).sum())
    if ex.kind == "softmax4":
        s = got("attn.scores", f["layer"])[f["r"], f["i"], :f["i"] + 1]
        return float(softmax(s).max())
    if ex.kind == "ablate":
        # mean weight from the probe's second copy to the byte after the earlier occurrence
        trace, tokens, length = Tracer(), study.probe_tokens, study.length
        GlassLM.from_pretrained(run.settings.checkpoint).loss(tokens[:-1], tokens[1:], trace=trace)
        a = wide(trace.get("attn.softmax", f["layer"]).value)  # (H, n, n)
        rows = np.arange(length, len(tokens) - 1)
        return float(np.argmax(a[:, rows, rows - length + 1].mean(axis=1)))
    if ex.kind == "out_part":
        layer, r, dh = f["layer"], f["r"], c.head_dim
        ctx = got("attn.context", layer)[r, f["i"]]
        return float(ctx @ wide(model.layers[layer].wo)[f["c"], r * dh:(r + 1) * dh])
    if ex.kind == "residual_attn":
        return float(np.linalg.norm(got("attn.residual", f["layer"])[f["i"]]))
    if ex.kind == "residual_mlp":
        return float(np.linalg.norm(got("mlp.residual", f["layer"])[f["i"]]))
    if ex.kind == "scale_free":
        x = 10 * got("attn.residual", f["layer"])[f["i"]]
        h = x / np.sqrt((x ** 2).mean() + c.norm_eps) * wide(model.layers[f["layer"]].mlp_norm)
        return float(h[f["c"]])
    if ex.kind == "mlp_flops":
        h = got("mlp.norm", c.n_layers - 1)
        return float(h.shape[0] * h.shape[1] * (got("mlp.gate", 0).shape[1] + got("mlp.up", 0).shape[1]))
    if ex.kind == "silu_unit":
        return float(got("mlp.act", f["layer"])[f["i"], f["c"]])
    if ex.kind == "relu_gate":
        a = got("mlp.gate", f["layer"])[f["i"], f["c"]]
        return float(max(a, 0) * got("mlp.up", f["layer"])[f["i"], f["c"]])
    if ex.kind == "mlp_params":
        b = model.layers[0]
        return float(sum(np.asarray(w).size for w in (b.w_gate, b.w_up, b.w_down)))
    if ex.kind == "final_entry":
        return float(got("final_norm")[f["i"], f["c"]])
    if ex.kind in ("lm_head", "lm_head_tied"):
        assert f["total"] == params_of(model)
        return 0.0 if model.lm_head is model.embed_tokens else float(np.asarray(model.lm_head).size)
    if ex.kind == "temperature":
        ell = got("logits")[-1]
        top = np.sort(ell)[-2:]
        return float(math.exp(2 * (top[1] - top[0]) / (1.0 if run.settings.greedy
                                                         else run.settings.temperature)))
    if ex.kind == "tail":
        return float(1 - np.sort(got("probs"))[-3:].sum())
    if ex.kind == "perplexity":
        return float(math.exp(float(loss.get("loss").value)))
    if ex.kind == "grad_target":
        g = wide(loss.get("loss.grad").value)
        target = run.loss_targets[f["i"]]
        assert abs(g[f["i"]].sum()) < 1e-6  # the row sums to 0, as the answer says
        return float(g[f["i"], target])
    raise AssertionError(f"no independent recomputation for exercise kind {ex.kind}")


@pytest.fixture(scope="module")
def answers(demo):  # noqa: F811
    run, study = demo
    gen, loss = fresh_traces(run)
    return {s: [(ex, truth(ex, run, study, gen, loss)) for ex in exercises(s, run, study)]
            for s in STEPS}


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6)


def test_every_step_has_an_exercise_whose_answer_is_recomputed(answers):
    assert set(answers) == set(STEPS) and len(STEPS) == 25
    for step_id, found in answers.items():
        assert found, step_id
        for ex, expected in found:
            assert close(float(ex.answer), expected), (step_id, ex.kind, ex.answer, expected)


def test_every_exercise_is_written_in_both_languages(demo):  # noqa: F811
    run, study = demo
    for lang in LANGUAGES:
        texts = load_exercise_texts(ROOT / "docs", lang)
        decimal = "," if lang.code == "pt" else "."
        for step_id in STEPS:
            for ex in exercises(step_id, run, study):
                out = exercise_html(ex, 1, texts, decimal, " ")
                assert "{" not in out and "<details>" in out, (lang.code, step_id)
                if not isinstance(ex.answer, int):
                    assert format_value(ex.answer, decimal) in out.split("<details>")[1]


def test_a_sentence_with_an_unknown_field_is_refused(demo, tmp_path):  # noqa: F811
    run, study = demo
    lang = LANGUAGES[0]
    folder = tmp_path / "_texts" / lang.code
    folder.mkdir(parents=True)
    text = (ROOT / "docs" / "_texts" / lang.code / "exercises.yml").read_text(encoding="utf-8")
    (folder / "exercises.yml").write_text(text.replace("embed.a: \"Row {answer}",
                                                       "embed.a: \"Row {nowhere}"), encoding="utf-8")
    texts = load_exercise_texts(tmp_path, lang)
    with pytest.raises(DocsBuildError, match="nowhere"):
        exercise_html(exercises("embed", run, study)[0], 1, texts, ".", ",")


EXERCISE = re.compile(r'<div class="gl-exercise" data-kind="([^"]+)" data-answer="([^"]+)">'
                      r"(.*?)</div>", re.S)


def test_built_step_pages_ask_exercises_with_answers_in_both_languages(site, answers):
    for code, (prefix, _) in LANGS.items():
        for step_id in STEPS:
            page = site.html(f"{prefix}steps/{step_id}/")
            found = EXERCISE.findall(page)
            assert found, (code, step_id)
            expected = answers[step_id]
            assert [k for k, _, _ in found] == [ex.kind for ex, _ in expected], (code, step_id)
            for (kind, answer, body), (ex, truth_value) in zip(found, expected):
                assert close(float(html.unescape(answer)), truth_value), (code, step_id, kind)
                question, _, folded = body.partition("<details>")
                assert text_of(question).strip() and "<summary>" in folded, (code, step_id)


@pytest.mark.parametrize("content, problem", [
    (None, "is missing: the step pages' exercises need their words"),
    ("title: T\nintro: [unclosed: x\n  b: c\n", "exercises.yml:3: not valid YAML"),
    ("- a list\n", "must map keys to sentences"),
    ("title: T\n", "lacks backward_title, intro"),
])
def test_a_broken_exercises_file_says_what_to_fix(tmp_path, content, problem):
    lang = LANGUAGES[0]
    if content is not None:
        folder = tmp_path / "_texts" / lang.code
        folder.mkdir(parents=True)
        (folder / "exercises.yml").write_text(content, encoding="utf-8")
    with pytest.raises(DocsBuildError, match=re.escape(problem)):
        load_exercise_texts(tmp_path, lang)
