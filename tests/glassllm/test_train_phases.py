"""glassllm.train's phases (issue 28's recipe): each phase's learning rate, row length and
fresh AdamW; a run stopped inside a phase resumes to the same bits; init="glass" is
GlassLM's own initialisation; the row sources random_twice and repeated_spans."""

import math
from dataclasses import asdict, replace

import numpy as np
import pytest

from glassllm import GlassLM
from glassllm.batches import Mix, random_twice, repeated_spans, span_copy, text_tokens
from glassllm.optim import AdamW, clip_grad_norm
from glassllm.train import Phase, Trainer, TrainOptions, initial_model, options_of, train

TEXT = ("The cat sat on the mat. The dog sat on the log. Then the cat saw the dog. " * 12)
PHASES = ({"steps": 4, "context": 8, "lr": 1e-2, "warmup": 2},
          {"steps": 5, "context": 16, "lr": 5e-3, "warmup": 2, "min_lr": 1e-3},
          {"steps": 3, "lr": 2e-3, "warmup": 0, "restart": False})
OPTIONS = TrainOptions(d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, context=20, steps=12,
                       batch_size=3, snapshot_every=4, init="glass", phases=PHASES)


class Stop(Exception):
    pass


def cosine(k, n, warmup, lr, floor):
    """The trial's schedule (trial.py), written out: warm-up (k + 1) / warmup, then cosine."""
    if k < warmup:
        return lr * (k + 1) / warmup
    return floor + (lr - floor) * 0.5 * (1 + math.cos(math.pi * (k - warmup) / (n - warmup)))


def test_each_phase_has_its_own_learning_rate_and_row_length(tmp_path):
    expected = ([1e-2 * (k + 1) / 2 if k < 2 else 1e-2 for k in range(4)]
                + [cosine(k, 5, 2, 5e-3, 1e-3) for k in range(5)] + [2e-3] * 3)
    assert [OPTIONS.lr_at(s) for s in range(12)] == pytest.approx(expected, rel=1e-12)
    assert [OPTIONS.row_length(s) for s in range(12)] == [8] * 4 + [16] * 5 + [20] * 3
    assert [s for s in range(12) if OPTIONS.restarts_at(s)] == [4]  # phase 0 starts fresh anyway
    assert options_of({"options": asdict(OPTIONS)}) == OPTIONS  # as a snapshot keeps them
    seen = []

    def source(step, rng):
        seen.append((step, OPTIONS.lr_at(step)))
        return rng.integers(0, 256, (3, OPTIONS.row_length(step) + 1))
    run = train(None, tmp_path / "run", OPTIONS, batches=source, batches_id="random")
    assert len(run.losses) == 12 and [s for s, _ in seen] == list(range(12))
    with pytest.raises(ValueError, match=r"shape \(3, 9\); the run needs .* \(3, 17\)"):
        train(None, tmp_path / "bad", OPTIONS, batches_id="short",
              batches=lambda step, rng: rng.integers(0, 256, (3, 9)))
    windows = train(text_tokens(TEXT.encode()), tmp_path / "windows", OPTIONS)  # the default
    assert len(windows.losses) == 12


def test_the_eta_counts_the_tokens_of_the_steps_left_not_the_steps(tmp_path):
    # rows of 8, 16 then 20 tokens: after step 4 the 8 steps left hold 5 x 16 + 3 x 20 tokens
    # a row, which at the run's own pace take (that count) / (its tokens per second)
    seen = {}
    train(None, tmp_path / "run", OPTIONS, batches_id="random",
          batches=lambda step, rng: rng.integers(0, 256, (3, OPTIONS.row_length(step) + 1)),
          on_progress=lambda p: seen.setdefault(p.step, p))
    assert sorted(seen) == list(range(1, 13))
    for step, left in ((4, 5 * 16 + 3 * 20), (9, 3 * 20), (12, 0)):
        p = seen[step]
        assert p.eta_seconds * p.tokens_per_second == pytest.approx(3 * left, rel=1e-9)


def test_a_restarting_phase_steps_as_a_fresh_adamw_would():
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 256, (3, OPTIONS.row_length(s) + 1)) for s in range(6)]
    trainer = Trainer(initial_model(OPTIONS), OPTIONS)
    for rows in batches[:4]:
        trainer.step(rows)
    assert trainer.optimizer.step_count == 4
    # by hand: the weights after phase 0, a new AdamW, the clipped gradient, phase 1's lr
    model = GlassLM(OPTIONS.config())
    model.load_state_dict(trainer.model.state_dict())
    flat = [n for n, v in model.state_dict().items() if v.ndim < 2]
    fresh = AdamW(model, lr=OPTIONS.lr_at(4), betas=(0.9, 0.95), weight_decay=0.1,
                  no_decay=flat)
    loss, grads = model.gradients(batches[4][:, :-1], batches[4][:, 1:])
    clip_grad_norm(grads, 1.0)
    fresh.step(grads)
    trainer.step(batches[4])
    assert trainer.optimizer.step_count == 1
    for name, value in trainer.model.state_dict().items():
        np.testing.assert_array_equal(value, model.state_dict()[name], err_msg=name)
    m = trainer.optimizer.state_dict()["exp_avg"]
    for name, g in grads.items():  # the first moment after one step of a fresh AdamW
        np.testing.assert_allclose(m[name], 0.1 * g, rtol=1e-5, atol=1e-12, err_msg=name)
    # phase 2 does not restart: the count goes on
    for rows in batches[5:]:
        trainer.step(rows)
    assert trainer.optimizer.step_count == 2


# resumed at step 2 (inside phase 0), 4 (phase 1's first step: its fresh AdamW), 6 (inside
# phase 1), 10 (inside phase 2)
@pytest.mark.parametrize("stop", [3, 5, 7, 11])
def test_a_run_stopped_inside_a_phase_resumes_to_the_same_bits(stop, tmp_path):
    tokens = text_tokens(TEXT.encode())
    options = replace(OPTIONS, snapshot_every=2 if stop != 11 else 5)
    straight = train(tokens, tmp_path / "straight", options)

    def stop_at(p):
        if p.step == stop:
            raise Stop
    with pytest.raises(Stop):
        train(tokens, tmp_path / "m", options, on_progress=stop_at)
    resumed = train(tokens, tmp_path / "m", options)
    assert resumed.resumed_from == {3: 2, 5: 4, 7: 6, 11: 10}[stop]
    assert resumed.losses == straight.losses
    a, b = resumed.model.state_dict(), straight.model.state_dict()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_glass_init_is_glasslms_own_weights_and_gpt2_init_is_not():
    glass = initial_model(OPTIONS).state_dict()
    own = GlassLM(OPTIONS.config()).state_dict()
    assert "lm_head.weight" in own  # untied
    for name in own:
        np.testing.assert_array_equal(glass[name], own[name], err_msg=name)
    emb = own["model.embed_tokens.weight"]
    assert abs(emb.std() - 1) < 0.05  # N(0, 1); matrices N(0, 1/fan_in)
    q = own["model.layers.0.self_attn.q_proj.weight"]
    assert abs(q.std() * math.sqrt(32) - 1) < 0.1
    gpt2 = initial_model(replace(OPTIONS, init="gpt2")).state_dict()
    assert abs(gpt2["model.embed_tokens.weight"].std() - 0.02) < 0.002


@pytest.mark.parametrize("change, message", [
    ({"steps": 13}, "add up to 12"),
    ({"phases": ({"steps": 12, "lr": 1e-3, "context": 21},)}, "longer than the context"),
    ({"phases": ({"steps": 12, "lr": 1e-3, "schedule": "x"},)}, "a phase is a dict of"),
    ({"phases": ({"steps": 12, "lr": 1e-3, "min_lr": 1e-2},)}, "must not exceed"),
    ({"phases": ({"steps": 0, "lr": 1e-3},)}, "steps must be a whole number"),
    ({"init": "xavier"}, "init must be one of"),
])
def test_bad_phases_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        replace(OPTIONS, **change)
    with pytest.raises(ValueError, match="restart must be true or false"):
        Phase(steps=1, lr=1e-3, restart="yes")


def test_mix_rows_take_each_phases_length():
    mix = Mix([(2, {"a": 1}), (2, {"a": 1})], {"a": span_copy(np.arange(20), (3, 5), 2)},
              batch_size=2, length=[9, 17])
    rng = np.random.default_rng(1)
    assert [mix(s, rng).shape for s in range(5)] == [(2, 9)] * 2 + [(2, 17)] * 3
    with pytest.raises(ValueError, match="one per phase"):
        Mix([(2, {"a": 1})], {"a": span_copy(np.arange(20))}, batch_size=1, length=[9, 9])


def copies(row, low, high, gap):
    """The prefix length after which ``row`` parses as (span, between, span) runs, each span
    low..high long and each between 0..gap (the row may end inside the last run); None."""
    def parses(i):
        if i >= len(row):
            return True
        for n in range(low, high + 1):
            for g in range(gap + 1):
                second = row[i + n + g:i + 2 * n + g]
                if np.array_equal(second, row[i:i + len(second)]) and (
                        i + 2 * n + g >= len(row) or parses(i + 2 * n + g)):
                    return True
        return False
    return next((start for start in range(21) if parses(start)), None)


def test_random_twice_and_repeated_spans_write_spans_twice():
    rng = np.random.default_rng(3)
    alphabet = np.arange(500, 700)
    source = random_twice(alphabet, (6, 9), 4, 8)
    for _ in range(10):
        row = source(rng, 64)
        assert row.shape == (64,) and set(row.tolist()) <= set(alphabet.tolist())
        assert copies(row, 6, 9, 4) is not None and copies(row, 6, 9, 4) <= 8
    text = np.arange(10_000) * 7 % 9973  # no repeats: every copy is the source's doing
    source = repeated_spans(text, (8, 12), 5, 6)
    for _ in range(10):
        row = source(rng, 80)
        start = copies(row, 8, 12, 5)
        assert start is not None and start <= 6
    with pytest.raises(ValueError, match="gap must be a whole number"):
        random_twice(alphabet, (6, 9), -1)
