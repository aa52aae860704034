"""The worked examples of the step pages (docs_build/data/worked.py): every redone entry equals the
same entry recomputed here from a fresh glassllm Tracer run and the weights (whole arrays, in
float64, without worked.py's intermediate values), and equals the snapshot's value to float32
precision; the built site shows them on every step page in both languages."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from mkdocs.config import load_config

from docs_build.data.example import load_example
from docs_build.data.worked import worked_example
from docs_build.engine.settings import ExampleSettings, settings_from_options
from docs_build.html.worked import worked_html
from docs_build.text.languages import LANGUAGES
from docs_build.text.numbers import format_value
from docs_build.text.ui import load_ui
from glassllm import BYTE_VOCAB_SIZE, STEPS, Config, GlassLM, Tracer
from glassllm.steps import PACKAGE_DIR

from .conftest import LANGS, text_of

ROOT = Path(__file__).resolve().parents[2]


def site_settings() -> ExampleSettings:
    """The example of mkdocs.yml (the demo checkpoint), as the plugin resolves it."""
    config = load_config(str(ROOT / "mkdocs.yml"))
    return settings_from_options(dict(config.plugins["glassllm"].config.example), ROOT)


@pytest.fixture(scope="module")
def demo():
    data = load_example(site_settings(), PACKAGE_DIR)
    return data.run, data.study


# random weights: top-k and a temperature, a later traced step (its draw is the third), greedy
VARIANTS = {
    "top_k": ExampleSettings(temperature=0.7, top_k=5, traced_step=2, sampling_seed=3),
    "greedy": ExampleSettings(greedy=True, prompt="abcabc", loss_text="abcabd"),
}


# -- the independent recomputation ------------------------------------------------------------

def engine_model(s: ExampleSettings) -> GlassLM:
    """The example's model in this process: the checkpoint's, or random weights for s.seed."""
    if s.checkpoint is not None:
        return GlassLM.from_pretrained(s.checkpoint)
    return GlassLM(Config(vocab_size=BYTE_VOCAB_SIZE, d_model=s.d_model, n_layers=s.n_layers,
                          n_heads=s.n_heads, n_kv_heads=s.n_kv_heads, max_len=s.max_len,
                          seed=s.seed))


def fresh_traces(run):
    """A new traced generation (up to the traced step) and loss run of the same model."""
    s = run.settings
    model = engine_model(s)
    for name in ("embed_tokens", "norm", "lm_head"):  # the weights the pages were built from
        assert np.array_equal(getattr(model, name), getattr(run.model, name)), name
    encode = model.tokenizer.encode  # the model's own tokens: the demo's subwords, or bytes
    steps = list(model.generate(encode(s.prompt), s.traced_step + 1, greedy=s.greedy,
                                    temperature=s.temperature, top_k=s.top_k,
                                    seed=s.sampling_seed, trace=True, cache=False))
    loss_trace = Tracer()
    text = encode(s.loss_text)
    model.loss(text[:-1], text[1:], trace=loss_trace)
    return steps[-1].trace, loss_trace


def wide(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def recompute(step_id: str, layer, run, gen: Tracer, loss: Tracer) -> np.ndarray:
    """The whole value of ``step_id`` (in ``layer``) from the inputs the fresh traces
    recorded and the model's weights, each equation written out in float64."""
    model, c = run.model, run.config
    got = lambda sid, lay=layer: wide(gen.get(sid, lay).value)  # noqa: E731
    block = model.layers[layer] if layer is not None else None
    dh, H, Hkv = c.head_dim, c.n_heads, c.n_kv_heads

    def rms(x, gain):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + c.norm_eps) * wide(gain)

    def heads(x, count):  # (n, count·dh) -> (count, n, dh)
        return x.reshape(x.shape[0], count, dh).transpose(1, 0, 2)

    def rotate(x):
        n = x.shape[-2]
        j = np.arange(dh)
        theta = np.arange(n)[:, None] * c.rope_theta ** (-2 * (j % (dh // 2)) / dh)[None, :]
        half = np.concatenate([-x[..., dh // 2:], x[..., :dh // 2]], axis=-1)
        return x * np.cos(theta) + half * np.sin(theta)

    def group(r):
        return r * Hkv // H

    def scores():
        q, k = got("attn.q_rope"), got("attn.k_rope")
        return np.stack([q[r] @ k[group(r)].T for r in range(H)]) / math.sqrt(dh)

    def masked():
        s = got("attn.scores")
        n = s.shape[-1]
        return np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)

    stream = (lambda: got("embed", None)) if layer == 0 else (lambda: got("mlp.residual", layer - 1))
    last = c.n_layers - 1
    logits_row = lambda: wide(gen.get("logits").value)[-1]  # noqa: E731

    def probs():
        s, ell = run.settings, logits_row()
        if s.top_k is not None:
            ell = np.where(ell < np.sort(ell)[-s.top_k], -np.inf, ell)
        return softmax(ell / (1.0 if s.greedy else s.temperature))

    def sample():
        s, p = run.settings, wide(gen.get("probs").value)
        if s.greedy:
            return np.array(np.argmax(p))
        rng = np.random.default_rng(s.sampling_seed)
        u = [rng.random() for _ in range(s.traced_step + 1)][-1]
        cdf = np.cumsum(p)
        return np.array(np.argmax(cdf > u * cdf[-1]))

    loss_logits = lambda: wide(loss.get("logits").value)  # noqa: E731
    targets = np.array(run.loss_targets)

    def nll():
        ell = loss_logits()
        return -np.log(softmax(ell))[np.arange(len(targets)), targets]

    def grad():
        ell = loss_logits()
        onehot = np.eye(ell.shape[1])[targets]
        return (softmax(ell) - onehot) / len(targets)

    formulas = {
        "embed": lambda: wide(model.embed_tokens)[np.array(run.traced_tokens)],
        "attn.norm": lambda: rms(stream(), block.attn_norm),
        "attn.q": lambda: heads(got("attn.norm") @ wide(block.wq).T, H),
        "attn.k": lambda: heads(got("attn.norm") @ wide(block.wk).T, Hkv),
        "attn.v": lambda: heads(got("attn.norm") @ wide(block.wv).T, Hkv),
        "attn.q_rope": lambda: rotate(got("attn.q")),
        "attn.k_rope": lambda: rotate(got("attn.k")),
        "attn.scores": scores,
        "attn.mask": masked,
        "attn.softmax": lambda: softmax(got("attn.mask")),
        "attn.context": lambda: np.stack([got("attn.softmax")[r] @ got("attn.v")[group(r)]
                                          for r in range(H)]),
        "attn.out": lambda: np.concatenate(list(got("attn.context")), axis=-1) @ wide(block.wo).T,
        "attn.residual": lambda: stream() + got("attn.out"),
        "mlp.norm": lambda: rms(got("attn.residual"), block.mlp_norm),
        "mlp.gate": lambda: got("mlp.norm") @ wide(block.w_gate).T,
        "mlp.up": lambda: got("mlp.norm") @ wide(block.w_up).T,
        "mlp.act": lambda: got("mlp.gate") / (1 + np.exp(-got("mlp.gate"))) * got("mlp.up"),
        "mlp.down": lambda: got("mlp.act") @ wide(block.w_down).T,
        "mlp.residual": lambda: got("attn.residual") + got("mlp.down"),
        "final_norm": lambda: rms(got("mlp.residual", last), model.norm),
        "logits": lambda: got("final_norm", None) @ wide(model.lm_head).T,
        "probs": probs,
        "sample": sample,
        "loss": lambda: np.array(nll().mean()),
        "loss.grad": grad,
    }
    return formulas[step_id]()


def fresh_snapshot(step_id, layer, gen, loss) -> np.ndarray:
    trace = loss if step_id in ("loss", "loss.grad") else gen
    return np.asarray(trace.get(step_id, layer).value)


def assert_entries(run, study):
    gen, loss = fresh_traces(run)
    for step_id in STEPS:
        worked = worked_example(step_id, run, study)
        assert worked is not None and worked.checks, step_id
        expected = recompute(step_id, worked.layer, run, gen, loss)
        snapshot = fresh_snapshot(step_id, worked.layer, gen, loss)
        for check in worked.checks:
            where = f"{step_id} layer {worked.layer} {check.symbol} at {check.index}"
            # the page's snapshot is the run's record: the fresh run records the same
            assert check.snapshot == float(snapshot[check.index]), where
            truth = float(expected[check.index])
            if math.isinf(truth):
                assert check.by_hand == truth == check.snapshot, where
                continue
            tol = 1e-5 * max(1.0, abs(truth))  # float32 precision of the snapshot
            assert abs(check.by_hand - truth) <= tol, (where, check.by_hand, truth)
            assert abs(check.snapshot - truth) <= 4 * tol, (where, check.snapshot, truth)


def test_every_step_of_the_site_example_is_redone_by_hand(demo):
    run, study = demo
    assert_entries(run, study)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_top_k_temperature_later_draws_and_greedy_are_redone_too(name):
    run = load_example(VARIANTS[name], PACKAGE_DIR).run
    assert_entries(run, None)


def test_the_attention_pages_work_the_featured_induction_head_at_its_strongest_key(demo):
    run, study = demo
    best = study.best_induction
    for step_id in ("attn.scores", "attn.mask", "attn.softmax", "attn.context"):
        worked = worked_example(step_id, run, study)
        assert (worked.layer, worked.head) == (best.layer, best.head), step_id
    weights = np.asarray(run.traced.trace.get("attn.softmax", best.layer).value)[best.head]
    i = weights.shape[0] - 1
    assert worked_example("attn.softmax", run, study).checks[0].index == (
        best.head, i, int(np.argmax(weights[i])))
    # the masked entry is a future key: above the diagonal, −∞
    masked = worked_example("attn.mask", run, study).checks[1]
    _, row, key = masked.index
    assert key > row and masked.snapshot == -math.inf


def test_sampling_replays_the_seeded_draw_and_shows_the_token_interval(demo):
    run, study = demo
    worked = worked_example("sample", run, study)
    assert worked.note == "worked.sample"  # the draw was recovered, not just the interval
    assert worked.checks[0].by_hand == worked.checks[0].snapshot == run.traced.token
    assert any(line.startswith("u &=") for line in worked.lines)


def test_every_ui_field_is_filled_in_both_languages(demo):
    run, study = demo
    for lang in LANGUAGES:
        ui = load_ui(ROOT / "docs", lang)
        for step_id in STEPS:
            html = worked_html(worked_example(step_id, run, study), ui)
            assert "{" not in text_of(re.sub(r"\\[\[(].*?\\[\])]", "", html, flags=re.S)), (
                lang.code, step_id)


def test_built_step_pages_show_the_worked_entries_in_both_languages(site):
    titles = {"en": "Worked by hand", "pt": "Conta feita à mão"}
    for code, (prefix, _) in LANGS.items():
        for step_id in STEPS:
            page = site.html(f"{prefix}steps/{step_id}/")
            heading = re.search(rf'<h2 id="[^"]*">{titles[code]}', page)
            assert heading, (code, step_id)
            block = re.search(rf'<div class="gl-worked" data-step="{re.escape(step_id)}".*?'
                              r'<table class="gl-worked-checks">.*?</table>', page, re.S)
            assert block, (code, step_id)
            rows = re.findall(r'data-hand="([^"]+)" data-snapshot="([^"]+)">(.*?)</tr>',
                              block.group(0), re.S)
            assert rows, (code, step_id)
            for hand, snap, cells in rows:
                hand, snap = float(hand), float(snap)
                assert math.isclose(hand, snap, rel_tol=4e-5, abs_tol=1e-6) or hand == snap
                # the reader sees both numbers as the value tables write them
                shown = [text_of(td) for td in re.findall(r"<td>(.*?)</td>", cells, re.S)][1:]
                mark = "," if code == "pt" else "."  # each language's decimal mark
                assert shown == [format_value(hand, mark), format_value(snap, mark)], (code, step_id)
            # the worked section follows the values, before the page's navigation
            assert page.index('class="gl-stats"') < heading.start() < block.start(), (code, step_id)
            assert block.start() < page.index('class="gl-step-nav"'), (code, step_id)


def test_a_draw_that_cannot_be_replayed_leaves_only_the_interval(demo, monkeypatch):
    import docs_build.data.worked as worked_module

    run, study = demo
    probs = np.asarray(run.traced.trace.get("probs").value, dtype=np.float64)
    t = run.traced.token
    low = float(np.cumsum(probs)[t - 1]) if t > 0 else 0.0
    outside = 0.0 if low > 0 else 1.0 - 1e-9  # a draw below or above the token's interval
    monkeypatch.setattr(worked_module, "recovered_draw", lambda settings: outside)
    worked = worked_example("sample", run, study)
    assert worked.note == "worked.sample.interval"
    assert not any(line.startswith("u ") for line in worked.lines)
    assert worked.checks[0].by_hand == worked.checks[0].snapshot == t
