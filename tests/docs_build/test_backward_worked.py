"""The Backward sections' worked entries (docs_build/data/backward.py) and the training step
the engine's child records (engine/training_step.py), on small random models without a site
build: every step's hand result equals the gradient GlassLM.gradients computed, tied or
untied, with grouped or one-per-head key/value heads; the AdamW entry equals a hand step."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

import glassllm
from glassllm import STEPS, Config, GlassLM
from glassllm import backward, optim, train  # noqa: F401  (engine.<module>, as the child does)

from docs_build.data.backward import GENERATION_ONLY, grad_worked
from docs_build.engine import child, schema, training_step
from docs_build.pages.training_page import adamw_by_hand


def run_of(config: Config, text: bytes = b"a cat sat on a mat"):
    model = GlassLM(config)
    tokens = list(glassllm.encode(text.decode()))
    step = training_step.training_step(glassllm, model, tokens[:-1], tokens[1:],
                                       glassllm.steps.PACKAGE_DIR)
    fresh = GlassLM(config)  # the same seed: the weights before the update
    cfg = schema.ModelConfig(**{n: getattr(fresh.config, n) for n in schema.MODEL_CONFIG})
    return types.SimpleNamespace(training=step, config=cfg, model=child.weights(fresh)), fresh


@pytest.mark.parametrize("tied, kv", [(False, 2), (True, 4), (True, 1)])
def test_every_worked_entry_equals_the_gradient(tied, kv):
    config = Config(vocab_size=256, d_model=32, n_layers=2, n_heads=4, n_kv_heads=kv,
                    max_len=32, seed=3, tie_word_embeddings=tied)
    run, _ = run_of(config)
    for layer, head in ((0, 3), (1, 1)):
        for step_id in STEPS:
            worked = grad_worked(step_id, run, layer, head)
            if step_id in GENERATION_ONLY:
                assert worked is None
                continue
            scale = max(abs(worked.traced), 1e-30)
            assert abs(worked.by_hand - worked.traced) <= 2e-4 * scale + 1e-10, \
                (step_id, layer, head, worked.by_hand, worked.traced)


def test_the_training_step_records_every_value_and_its_gradient():
    config = Config(vocab_size=256, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=32,
                    seed=1)
    run, fresh = run_of(config)
    t = run.training
    assert [r.id for r in t.grad_trace.records] == [r.id for r in reversed(t.trace.records)]
    loss, grads = fresh.gradients(t.tokens, t.targets)
    assert t.loss == pytest.approx(loss, rel=1e-6)
    np.testing.assert_allclose(t.grads.layers[1].wq, grads["model.layers.1.self_attn.q_proj.weight"],
                               rtol=1e-5, atol=1e-8)
    assert {r.id for r in t.rules} == set(STEPS)
    assert t.loss_after < t.loss  # one AdamW step on these tokens lowers their loss


def test_the_adamw_entry_is_one_hand_step():
    config = Config(vocab_size=256, d_model=32, n_layers=1, n_heads=2, n_kv_heads=2, max_len=32,
                    seed=2)
    run, fresh = run_of(config)
    u = run.training.update
    hand = adamw_by_hand(u)
    assert u.weight == fresh.state_dict()[u.name][u.index]
    assert hand.m == pytest.approx(u.exp_avg, rel=1e-6)
    assert hand.v == pytest.approx(u.exp_avg_sq, rel=1e-5)
    assert hand.updated == pytest.approx(u.updated, rel=1e-6, abs=1e-9)
    with pytest.raises(ValueError, match="first step"):
        adamw_by_hand(dataclasses.replace(u, step=2))
