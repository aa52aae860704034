"""Edits (ablation and patching at the marked steps) against independent references: the same change made to the weights, the
clean run an activation patch should restore, and means computed by hand."""

import copy

import numpy as np
import pytest

from glassllm import Config, GlassLM, Tracer
from glassllm.edits import Ablate, Patch
from glassllm.steps import LAYER_STEPS, STEP_FACTS, STEPS

FIELDS = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=24,
              seed=7)
CLEAN, CORRUPT = [5, 9, 3, 12, 7, 7, 30, 2], [5, 9, 3, 40, 7, 7, 30, 2]


@pytest.fixture
def model():
    return GlassLM(Config(**FIELDS))


def traced(model, tokens, **options):
    trace = Tracer()
    logits = model.forward(tokens, trace, **options)
    return logits, trace


def test_ablating_a_head_at_the_context_equals_zeroing_its_columns_of_w_o(model):
    dh = model.config.head_dim
    for layer, head in ((0, 1), (1, 3)):
        silenced = copy.deepcopy(model)
        silenced.layers[layer].wo[:, head * dh:(head + 1) * dh] = 0
        expected = silenced.forward(CLEAN)
        edited = model.forward(CLEAN, edit=Ablate("attn.context", layer=layer, head=head))
        np.testing.assert_allclose(edited, expected, atol=1e-5, rtol=0)
        assert not np.allclose(edited, model.forward(CLEAN), atol=1e-3)  # the head mattered
        # generation too, with and without the cache
        tokens = [s.token for s in silenced.generate(CLEAN, 8, greedy=True)]
        for cache in (True, False):
            assert tokens == [s.token for s in model.generate(
                CLEAN, 8, greedy=True, cache=cache,
                edit=Ablate("attn.context", layer=layer, head=head))]


def test_zero_attention_weights_of_a_head_equal_a_zero_context(model):
    weights = model.forward(CLEAN, edit=Ablate("attn.softmax", layer=1, head=2))
    context = model.forward(CLEAN, edit=Ablate("attn.context", layer=1, head=2))
    np.testing.assert_allclose(weights, context, atol=1e-6, rtol=0)


@pytest.mark.parametrize("step_id", ["embed", "attn.residual", "mlp.residual"])
def test_patching_the_residual_stream_from_a_clean_run_restores_the_clean_logits(model, step_id):
    clean_logits, clean = traced(model, CLEAN)
    corrupt_logits = model.forward(CORRUPT)
    assert not np.allclose(corrupt_logits, clean_logits, atol=1e-3)
    layers = [None] if step_id == "embed" else range(model.config.n_layers)
    for layer in layers:
        source = clean.get(step_id, layer=layer)
        patched, trace = traced(model, CORRUPT, edit=Patch(step_id, source))
        np.testing.assert_allclose(patched, clean_logits, atol=1e-5, rtol=0)
        np.testing.assert_array_equal(trace.get(step_id, layer=layer).value, source.value)


def test_patching_one_position_restores_what_depends_on_it(model):
    """Only position 3 differs between the texts. Patching its embedding with the clean row
    restores every logit; patching block 0's stream after attention at position 3 restores
    position 3, but the later positions already read its corrupt key and value there."""
    clean_logits, clean = traced(model, CLEAN)
    patched = model.forward(CORRUPT, edit=Patch("embed", clean.get("embed"), positions=3))
    np.testing.assert_allclose(patched, clean_logits, atol=1e-5, rtol=0)
    patched = model.forward(CORRUPT, edit=Patch("attn.residual", clean.get("attn.residual",
                                                                           layer=0),
                                                positions=[3]))
    np.testing.assert_allclose(patched[:4], clean_logits[:4], atol=1e-5, rtol=0)
    assert not np.allclose(patched[4:], clean_logits[4:], atol=1e-3)


@pytest.mark.parametrize("step_id", [s for s in STEPS if STEP_FACTS[s].where in ("model", "block")])
def test_a_patch_at_position_i_never_changes_the_positions_before_it(model, step_id):
    _, other = traced(model, CORRUPT[::-1])
    base_logits, base = traced(model, CLEAN)
    layer = 1 if step_id in LAYER_STEPS else None
    for i in (0, 3, len(CLEAN) - 1):
        logits, trace = traced(model, CLEAN, edit=Patch(step_id, other.get(step_id, layer=layer),
                                                         positions=[i]))
        np.testing.assert_array_equal(logits[:i], base_logits[:i])
        for record, unedited in zip(trace.records, base.records, strict=True):
            # rows before i; in the attention tables also only their keys before i (the
            # scores of later keys change, and the causal mask removes them)
            before = tuple(slice(0, i) if axis in ("token", "query", "key") else slice(None)
                           for axis in STEP_FACTS[record.id].axes)
            np.testing.assert_array_equal(record.value[before], unedited.value[before],
                                          err_msg=f"{record.id} before position {i}")


def test_an_edit_never_changes_the_weights(model):
    before = model.state_dict()
    _, clean = traced(model, CLEAN)
    every_step = [Ablate(s) for s in STEPS if STEP_FACTS[s].where in ("model", "block")]
    model.forward(CORRUPT, edit=every_step)
    model.forward(CORRUPT, edit=[Patch(r.id, r) for r in clean.records])
    model.loss(CLEAN, CORRUPT, edit=[Ablate("loss.grad"), Ablate("mlp.act", mode="mean")])
    list(model.generate(CLEAN, 4, edit=[Ablate("attn.q", head=1), Patch("sample", 3)]))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)


def test_the_tracer_records_the_edited_value(model):
    _, trace = traced(model, CLEAN, edit=Ablate("attn.context", layer=1, head=3, positions=[2, 5]))
    context = trace.get("attn.context", layer=1).value
    assert not context[3, [2, 5]].any()
    assert context[3, [0, 1, 3, 4, 6, 7]].all() and context[:3].all()
    # and the rest of the model computed from it: attn.out = concat(C) W_O^T
    out = trace.get("attn.out", layer=1).value
    merged = context.transpose(1, 0, 2).reshape(len(CLEAN), -1)
    np.testing.assert_allclose(out, merged @ model.layers[1].wo.T, atol=1e-5, rtol=0)


def test_mean_ablation_checked_by_hand(model):
    _, clean = traced(model, CLEAN)
    _, trace = traced(model, CLEAN, edit=Ablate("attn.out", layer=0, mode="mean"))
    out = clean.get("attn.out", layer=0).value.astype(np.float64)
    by_hand = np.tile(out.mean(axis=0), (len(CLEAN), 1))
    np.testing.assert_allclose(trace.get("attn.out", layer=0).value, by_hand, atol=1e-6)
    np.testing.assert_allclose(trace.get("attn.residual", layer=0).value,
                               clean.get("embed").value + by_hand, atol=1e-5)
    # one head, two positions: those rows become that head's mean row, the others stay
    _, trace = traced(model, CLEAN, edit=Ablate("attn.q", layer=1, head=2, positions=[1, 3],
                                                mode="mean"))
    q, edited = clean.get("attn.q", layer=1).value, trace.get("attn.q", layer=1).value
    for row in (1, 3):
        np.testing.assert_allclose(edited[2, row], q[2].astype(np.float64).mean(axis=0),
                                   atol=1e-6)
    keep = [0, 2, 4, 5, 6, 7]
    np.testing.assert_array_equal(edited[2, keep], q[2, keep])
    np.testing.assert_array_equal(np.delete(edited, 2, axis=0), np.delete(q, 2, axis=0))


def test_edits_apply_in_the_order_given(model):
    _, clean = traced(model, CLEAN)
    source = clean.get("mlp.down", layer=0)
    zero_then_patch = [Ablate("mlp.down", layer=0), Patch("mlp.down", source)]
    patch_then_zero = zero_then_patch[::-1]
    np.testing.assert_allclose(model.forward(CLEAN, edit=zero_then_patch),
                               model.forward(CLEAN), atol=1e-6)
    np.testing.assert_allclose(model.forward(CLEAN, edit=patch_then_zero),
                               model.forward(CLEAN, edit=Ablate("mlp.down", layer=0)), atol=1e-6)


def test_a_patch_takes_one_heads_record_or_array(model):
    _, clean = traced(model, CLEAN)
    _, other = traced(model, CORRUPT)
    head = other.get("attn.k_rope", layer=1, head=1)  # a KV head, already sliced
    patch = Patch("attn.k_rope", head)
    assert (patch.layer, patch.head) == (1, 1)
    _, trace = traced(model, CLEAN, edit=patch)
    edited = trace.get("attn.k_rope", layer=1).value
    np.testing.assert_array_equal(edited[1], head.value)
    np.testing.assert_array_equal(edited[0], clean.get("attn.k_rope", layer=1).value[0])
    by_array = model.forward(CLEAN, edit=Patch("attn.k_rope", head.value, layer=1, head=1))
    np.testing.assert_array_equal(by_array, model.forward(CLEAN, edit=patch))
    # the full snapshot with head= patches only that head's part of it
    full = other.get("attn.k_rope", layer=1).value
    by_full = model.forward(CLEAN, edit=Patch("attn.k_rope", full, layer=1, head=1))
    np.testing.assert_array_equal(by_full, model.forward(CLEAN, edit=patch))


def test_edits_at_the_loss_steps(model):
    tokens, targets = CLEAN[:-1], CLEAN[1:]
    assert model.loss(tokens, targets, edit=Ablate("loss")) == 0.0
    assert model.loss(tokens, targets, edit=Patch("loss", 2.5)) == 2.5
    # an edit of the logits changes the loss the way the formula says
    trace = Tracer()
    loss = model.loss(tokens, targets, trace, edit=Ablate("logits", positions=[0]))
    logits = trace.get("logits").value.astype(np.float64)
    assert not logits[0].any()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    assert loss == pytest.approx(-log_probs[np.arange(len(tokens)), targets].mean(), abs=1e-5)
    assert log_probs[0, targets[0]] == pytest.approx(-np.log(64))


def test_edits_in_generation_cached_or_not(model):
    _, clean = traced(model, CLEAN + [1, 2, 3, 4])
    edits = [Patch("attn.residual", clean.get("attn.residual", layer=0), positions=[2, 9]),
             Ablate("attn.softmax", layer=1, head=0, positions=range(5, 12)),
             Ablate("mlp.act", layer=0, positions=[10])]
    runs = [list(model.generate(CORRUPT, 5, greedy=True, trace=True, edit=edits, cache=cache))
            for cache in (True, False)]
    assert [s.token for s in runs[0]] == [s.token for s in runs[1]]
    for a, b in zip(*runs):
        np.testing.assert_allclose(a.probs, b.probs, atol=1e-5, rtol=0)
    # the prompt's pass computes positions 0-7, cached step t position 7 + t: step 3 is
    # position 10 and recorded its ablated rows, step 4 (position 11) only the softmax's
    at_10, at_11 = runs[0][3].trace, runs[0][4].trace
    assert at_10.get("attn.softmax", layer=1).shape == (4, 1, 11)
    assert not at_10.get("attn.softmax", layer=1, head=0).value.any()
    assert at_10.get("attn.softmax", layer=1, head=1).value.sum() == pytest.approx(1)
    assert not at_10.get("mlp.act", layer=0).value.any()
    assert not at_11.get("attn.softmax", layer=1, head=0).value.any()
    assert at_11.get("mlp.act", layer=0).value.all()
    prompt_pass = runs[0][0].trace.get("attn.softmax", layer=1, head=0).value
    assert not prompt_pass[5:].any() and prompt_pass[:5].any()


def test_patching_the_sample_forces_the_tokens(model):
    steps = list(model.generate(CLEAN, 4, seed=0, trace=True, edit=Patch("sample", 42)))
    assert [s.token for s in steps] == [42] * 4
    assert int(steps[0].trace.get("sample").value) == 42
    probs = np.zeros(64, dtype=np.float32)
    probs[17] = 1
    assert {s.token for s in model.generate(CLEAN, 3, seed=1, edit=Patch("probs", probs))} == {17}


def test_no_edit_is_the_unedited_run(model):
    plain = model.forward(CLEAN)
    np.testing.assert_array_equal(model.forward(CLEAN, edit=None), plain)
    np.testing.assert_array_equal(model.forward(CLEAN, edit=[]), plain)
    # an edit at positions the pass does not hold leaves the value as it is
    step = list(model.generate(CLEAN, 2, greedy=True, trace=True,
                               edit=Ablate("embed", positions=[0])))[1]
    assert step.trace.get("embed").value.all()


def test_the_source_is_copied(model):
    source = np.zeros((len(CLEAN), 32), dtype=np.float32)
    patch = Patch("attn.out", source, layer=0)
    source[:] = 1
    assert not patch.source.any()
    with pytest.raises(ValueError):
        patch.source[0, 0] = 1  # read-only


# -- bad edits are clear errors ------------------------------------------------------------

def test_an_unknown_step_id_is_a_key_error():
    with pytest.raises(KeyError, match="unknown step ID 'attn.weights'"):
        Ablate("attn.weights")
    with pytest.raises(KeyError, match="unknown step ID"):
        Patch("nope", np.zeros(3))


@pytest.mark.parametrize("make, words", [
    (lambda: Ablate("embed", head=0), "step 'embed' has no head axis"),
    (lambda: Ablate("logits", layer=0), "outside the blocks, so it takes no layer"),
    (lambda: Ablate("attn.q", layer=-1), "layer must be a non-negative integer"),
    (lambda: Ablate("attn.q", layer=True), "layer must be a non-negative integer"),
    (lambda: Ablate("attn.q", head=1.0), "head must be a non-negative integer"),
    (lambda: Ablate("attn.q", positions=[]), "positions=.. would edit nothing"),
    (lambda: Ablate("attn.q", positions=[-1]), "positions must be non-negative integers"),
    (lambda: Ablate("attn.q", positions="1"), "positions must be None, a position"),
    (lambda: Ablate("probs", positions=[0]), "has no token axis, so it takes no positions"),
    (lambda: Ablate("attn.q", mode="one"), "mode must be 'zero' or 'mean'"),
    (lambda: Ablate("sample", mode="mean"), "step 'sample' has no token axis"),
    (lambda: Patch("embed", np.zeros((2, 3, 4))), r"source has 3 axes \(shape \(2, 3, 4\)\)"),
    (lambda: Patch("embed", "text"), "source must hold numbers"),
    (lambda: Patch("embed", np.full((2, 3), np.nan)), "source holds NaN or infinite values"),
    (lambda: Patch("attn.scores", np.full((1, 2, 2), -np.inf)), "NaN or infinite"),
    (lambda: Patch("attn.out", _record("attn.q")),
     "was given a record of step 'attn.q'"),
    (lambda: Patch("attn.q", _record("attn.q"), layer=1), "was given a record of layer 0"),
])
def test_bad_selectors_are_value_errors_naming_them(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def _record(step_id):
    trace = Tracer()
    GlassLM(Config(**FIELDS)).forward(CLEAN, trace)
    return trace.get(step_id, layer=0)


@pytest.mark.parametrize("call, words", [
    (lambda m: m.forward(CLEAN, edit=Ablate("attn.q", layer=2)),
     r"Ablate\('attn.q', layer=2\): layer 2 is out of range; this model has 2 blocks"),
    (lambda m: m.forward(CLEAN, edit=Ablate("attn.q", head=4)),
     "head 4 is out of range; step 'attn.q' has 4 query heads"),
    (lambda m: m.forward(CLEAN, edit=Ablate("attn.v", head=2)),
     "head 2 is out of range; step 'attn.v' has 2 key/value heads"),
    (lambda m: m.forward(CLEAN, edit=Ablate("embed", positions=[3, 8, 9])),
     r"positions \[8, 9\] are beyond the 8 positions this forward computes"),
    (lambda m: m.forward(CLEAN, edit=Ablate("loss")),
     "edits step 'loss', which forward never computes"),
    (lambda m: m.loss(CLEAN, CLEAN, edit=Ablate("probs")),
     "edits step 'probs', which loss never computes .only generate does"),
    (lambda m: m.generate(CLEAN, 2, edit=Ablate("loss.grad")),
     "which generate never computes .only loss does"),
    (lambda m: m.forward(CLEAN, edit=Patch("embed", np.zeros((7, 32)))),
     r"source has shape \(7, 32\), but step 'embed' of this forward has shape \(8, 32\)"),
    (lambda m: m.forward(CLEAN, edit=Patch("attn.softmax", np.zeros((4, 8, 7)), layer=0)),
     r"has shape \(4, 8, 8\)"),
    (lambda m: m.forward(CLEAN, edit=Patch("attn.k", np.zeros((4, 8, 8)), layer=0)),
     r"has shape \(2, 8, 8\)"),
    (lambda m: m.generate(CLEAN, 3, edit=Patch("embed", np.zeros((9, 32)))),
     r"generate needs \(at least 10, 32\): one row per position up to position 9"),
    (lambda m: m.generate(CLEAN, 3, edit=Patch("sample", 64)),
     r"the patched token 64 must be an integer in \[0, 64\)"),
    (lambda m: m.generate(CLEAN, 3, edit=Patch("probs", -np.ones(64))),
     "patched probabilities must be non-negative"),
    (lambda m: m.generate(CLEAN, 3, edit=Ablate("attn.out", mode="mean")),
     "a generation step with the KV cache computes only its new position; pass cache=False"),
    (lambda m: m.forward(CLEAN, edit="attn.q"), "edit must be a glassllm.edits.Ablate or Patch"),
    (lambda m: m.forward(CLEAN, edit=[Ablate("embed"), "x"]), "the list holds 'x'"),
])
def test_edits_the_run_cannot_take_are_value_errors_before_it_starts(model, call, words):
    with pytest.raises(ValueError, match=words):
        call(model)


def test_a_refused_edit_leaves_the_tracer_empty(model):
    trace = Tracer()
    with pytest.raises(ValueError):
        model.forward(CLEAN, trace, edit=[Ablate("embed"), Ablate("attn.q", layer=5)])
    with pytest.raises(ValueError):
        model.loss(CLEAN, CLEAN, trace, edit=Patch("logits", np.zeros((8, 63))))
    assert trace.records == []


def test_edits_that_leave_nothing_to_sample_are_refused(model):
    with pytest.raises(ValueError, match="the edited probabilities are not a distribution"):
        next(model.generate(CLEAN, 1, edit=Ablate("probs")))
    # without the cache a mean ablation is a mean over the whole sequence at every step
    assert len(list(model.generate(CLEAN, 2, cache=False,
                                   edit=Ablate("attn.out", mode="mean")))) == 2
