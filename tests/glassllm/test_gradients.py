"""GlassLM.gradients, the backward pass written by hand in NumPy, against independent
references: PyTorch autograd through Hugging Face's LlamaForCausalLM loaded with the same
weights (every parameter's gradient, and the gradients of the intermediate values torch can
hold with ``retain_grad``), and central finite differences of the loss run in float64 (every
step's gradient, sampled entries)."""

import numpy as np
import pytest

from glassllm import Config, GlassLM, Tracer
from glassllm.edits import Patch
from glassllm.model import next_token_distribution, next_token_distribution_backward, sample_backward
from glassllm.steps import HEAD_STEPS, STEPS

from tests.glassllm.test_reference import require_reference, torch

if torch is not None:
    from transformers import LlamaConfig, LlamaForCausalLM


def hugging_face_twin(model: GlassLM):
    """LlamaForCausalLM (eager attention) holding ``model``'s weights, tied when it is."""
    c = model.config
    twin = LlamaForCausalLM(LlamaConfig(
        vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.d_ff,
        num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_kv_heads, max_position_embeddings=c.max_len,
        rms_norm_eps=c.norm_eps, rope_theta=c.rope_theta, hidden_act="silu",
        attention_bias=False, mlp_bias=False, tie_word_embeddings=c.tie_word_embeddings,
        attn_implementation="eager"))
    state = {name: torch.from_numpy(value) for name, value in model.state_dict().items()}
    missing, unexpected = twin.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}
    if c.tie_word_embeddings:
        assert twin.lm_head.weight.data_ptr() == twin.model.embed_tokens.weight.data_ptr()
    return twin


def torch_gradients(twin, tokens, targets, keep_steps=False):
    """The loss, every parameter's gradient and (``keep_steps``) the gradients of the
    intermediate values torch exposes, under glassllm's step IDs: {(id, layer): array}."""
    kept, hooks = {}, []

    def keep(step_id, layer, use_input=False):
        def hook(module, args, output=None):
            tensor = args[0] if use_input else output
            tensor.retain_grad()
            kept[step_id, layer] = tensor
        return hook

    if keep_steps:
        inner = twin.model
        hooks.append(inner.embed_tokens.register_forward_hook(keep("embed", None)))
        hooks.append(inner.norm.register_forward_pre_hook(keep("mlp.residual", len(inner.layers) - 1, True)))
        hooks.append(inner.norm.register_forward_hook(keep("final_norm", None)))
        for layer, block in enumerate(inner.layers):
            attn, mlp = block.self_attn, block.mlp
            for module, step_id in ((block.input_layernorm, "attn.norm"), (attn.q_proj, "attn.q"),
                                    (attn.k_proj, "attn.k"), (attn.v_proj, "attn.v"),
                                    (attn.o_proj, "attn.out"), (block.post_attention_layernorm, "mlp.norm"),
                                    (mlp.gate_proj, "mlp.gate"), (mlp.up_proj, "mlp.up"),
                                    (mlp.down_proj, "mlp.down")):
                hooks.append(module.register_forward_hook(keep(step_id, layer)))
            hooks.append(block.post_attention_layernorm.register_forward_pre_hook(
                keep("attn.residual", layer, True)))
            hooks.append(mlp.down_proj.register_forward_pre_hook(keep("mlp.act", layer, True)))
            if layer:
                hooks.append(block.input_layernorm.register_forward_pre_hook(
                    keep("mlp.residual", layer - 1, True)))
    try:
        out = twin(torch.tensor(np.atleast_2d(tokens)), output_attentions=keep_steps)
    finally:
        for hook in hooks:
            hook.remove()
    logits = out.logits
    logits.retain_grad()
    if keep_steps:
        for layer, weights in enumerate(out.attentions):
            weights.retain_grad()
            kept["attn.softmax", layer] = weights
    twin.zero_grad()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             torch.tensor(np.asarray(targets)).reshape(-1))
    loss.backward()
    grads = {name: p.grad.numpy() for name, p in twin.named_parameters()}
    steps = {key: tensor.grad[0].numpy() for key, tensor in kept.items()}
    if keep_steps:
        steps["logits", None] = logits.grad[0].numpy()
    return loss.item(), grads, steps


def assert_close_to_largest(actual, expected, tolerance, what):
    """Every entry within ``tolerance`` times the tensor's largest entry (in magnitude)."""
    scale = max(float(np.abs(expected).max()), 1e-30)
    error = float(np.abs(actual - expected).max()) / scale
    assert error <= tolerance, f"{what}: off by {error:.2e} of its largest entry"


def as_steps_layout(step_id, value, config):
    """A torch module's (n, width) output as glassllm records it: heads first."""
    if step_id in ("attn.q", "attn.k", "attn.v"):
        n = value.shape[0]
        return value.reshape(n, -1, config.head_dim).transpose(1, 0, 2)
    return value


CONFIGS = [
    # GQA 1:1, untied
    dict(vocab_size=61, d_model=32, n_layers=2, n_heads=4, n_kv_heads=4, max_len=16, seed=1),
    # GQA 2:1, tied, RoPE base and eps changed
    dict(vocab_size=50, d_model=48, n_layers=2, n_heads=4, n_kv_heads=2, max_len=20, seed=2,
         tie_word_embeddings=True, rope_theta=500000.0, norm_eps=1e-6),
    # GQA 4:1, odd MLP width, three blocks
    dict(vocab_size=97, d_model=64, n_layers=3, n_heads=8, n_kv_heads=2, max_len=24, seed=3,
         d_ff=100, rope_theta=1000.0, norm_eps=1e-3),
    # one KV head for all (6:1), tied
    dict(vocab_size=40, d_model=24, n_layers=1, n_heads=6, n_kv_heads=1, max_len=12, seed=4,
         tie_word_embeddings=True),
]
NAMES = ["kv1to1", "kv2to1-tied-rope-eps", "kv4to1-dff", "kv6to1-tied"]


def random_case(fields, rng, batch=None):
    n = int(rng.integers(2, fields["max_len"] + 1))
    shape = (n,) if batch is None else (batch, n)
    return rng.integers(0, fields["vocab_size"], shape), rng.integers(0, fields["vocab_size"], shape)


@pytest.mark.reference
@pytest.mark.parametrize("fields", CONFIGS, ids=NAMES)
@pytest.mark.parametrize("batch", [None, 3], ids=["one", "batch3"])
def test_gradients_equal_torch_autograd(fields, batch):
    require_reference()
    model = GlassLM(Config(**fields))
    tokens, targets = random_case(fields, np.random.default_rng(fields["seed"]), batch)
    before = model.state_dict()
    loss, grads = model.gradients(tokens, targets)
    expected_loss, expected, _ = torch_gradients(hugging_face_twin(model), tokens, targets)
    assert isinstance(loss, float)
    assert loss == pytest.approx(expected_loss, abs=1e-5)
    assert list(grads) == list(before)  # exactly state_dict()'s names, in its order
    for name, value in grads.items():
        assert value.dtype == np.float32 and value.shape == before[name].shape, name
        assert_close_to_largest(value, expected[name], 1e-4, name)
    for name, value in model.state_dict().items():  # no weight moved
        np.testing.assert_array_equal(value, before[name], err_msg=name)


@pytest.mark.reference
@pytest.mark.parametrize("fields", CONFIGS[:3], ids=NAMES[:3])
def test_grad_trace_equals_torch_retained_gradients(fields):
    """∂loss/∂value at every step torch's modules expose: the residual streams, the norms,
    q, k and v, the attention weights, the MLP's values, the logits."""
    require_reference()
    model, config = GlassLM(Config(**fields)), Config(**fields)
    tokens, targets = random_case(fields, np.random.default_rng(7))
    grad_trace = Tracer()
    model.gradients(tokens, targets, grad_trace=grad_trace)
    _, _, steps = torch_gradients(hugging_face_twin(model), tokens, targets, keep_steps=True)
    covered = {step_id for step_id, _ in steps}
    assert covered >= {"embed", "attn.norm", "attn.q", "attn.k", "attn.v", "attn.softmax",
                       "attn.out", "attn.residual", "mlp.norm", "mlp.gate", "mlp.up", "mlp.act",
                       "mlp.down", "mlp.residual", "final_norm", "logits"}
    assert len(steps) == 13 * config.n_layers + 3  # 13 of the 18 block steps
    for (step_id, layer), value in steps.items():
        assert_close_to_largest(grad_trace.get(step_id, layer=layer).value,
                                as_steps_layout(step_id, value, config), 1e-4,
                                f"∂loss/∂{step_id} (layer {layer})")


def test_traces_follow_the_forward_and_mirror_it_in_reverse():
    config = Config(vocab_size=32, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, max_len=8,
                    seed=5)
    model = GlassLM(config)
    tokens, targets = [3, 1, 4, 1, 5, 9], [1, 4, 1, 5, 9, 2]
    trace, grad_trace, reference = Tracer(), Tracer(), Tracer()
    loss, _ = model.gradients(tokens, targets, trace=trace, grad_trace=grad_trace)
    assert loss == model.loss(tokens, targets, reference)  # the same float, bit for bit
    assert len(trace) == len(reference) == len(grad_trace) == 18 * config.n_layers + 5
    for ours, theirs in zip(trace.records, reference.records):
        assert (ours.id, ours.layer, ours.head, ours.order) == (theirs.id, theirs.layer, theirs.head, theirs.order)
        np.testing.assert_array_equal(ours.value, theirs.value)
    for value, grad in zip(reversed(trace.records), grad_trace.records):
        assert (grad.id, grad.layer, grad.head, grad.shape) == (value.id, value.layer, value.head, value.shape)
        assert grad.value.dtype == np.float32 and np.isfinite(grad.value).all(), grad.id
    np.testing.assert_array_equal(grad_trace.get("logits").value, trace.get("loss.grad").value)
    assert grad_trace.get("loss").value == 1
    assert not grad_trace.get("loss.grad").value.any()  # the loss does not depend on it
    n = len(tokens)
    above = np.triu(np.ones((n, n), dtype=bool), k=1)
    for layer in range(config.n_layers):
        for step_id in ("attn.mask", "attn.scores"):  # the masked entries get exactly 0
            assert not grad_trace.get(step_id, layer=layer).value[:, above].any()
        # the residual stream's gradient passes the skip connection unchanged
        np.testing.assert_array_equal(grad_trace.get("attn.out", layer=layer).value,
                                      grad_trace.get("attn.residual", layer=layer).value)
        np.testing.assert_array_equal(grad_trace.get("mlp.down", layer=layer).value,
                                      grad_trace.get("mlp.residual", layer=layer).value)
    assert {rec.id for rec in grad_trace.records} == set(STEPS) - {"probs", "sample"}


def test_grad_trace_filters_pick_heads_as_the_forward_tracer_does():
    config = Config(vocab_size=32, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, max_len=8)
    model = GlassLM(config)
    tokens, targets = [1, 2, 3, 4, 5], [2, 3, 4, 5, 6]
    full, some = Tracer(), Tracer(steps=["attn.k", "attn.q", "logits"], layers=1, heads=3)
    model.gradients(tokens, targets, grad_trace=full)
    model.gradients(tokens, targets, grad_trace=some)
    assert [(r.id, r.layer, r.head) for r in some.records] == [
        ("logits", None, None), ("attn.k", 1, 1), ("attn.q", 1, 3)]  # KV head 1 serves head 3
    np.testing.assert_array_equal(some.get("attn.k").value, full.get("attn.k", layer=1).value[1])


def float64_copy(model: GlassLM) -> GlassLM:
    """A test-only twin computing in float64: the same weights, upcast, set past the setters
    that store float32 (the engine's functions keep their inputs' dtype)."""
    twin = GlassLM(model.config)
    twin.embed_tokens = model.embed_tokens.astype(np.float64)
    for mine, theirs in zip(twin.layers, model.layers):
        for slot in ("_w_qkv", "_wo", "_w_gate_up", "_w_down"):
            setattr(mine, slot, np.asfortranarray(getattr(theirs, slot), dtype=np.float64))
        mine.attn_norm = theirs.attn_norm.astype(np.float64)
        mine.mlp_norm = theirs.mlp_norm.astype(np.float64)
    twin.norm = model.norm.astype(np.float64)
    twin.lm_head = (twin.embed_tokens if model.config.tie_word_embeddings
                    else np.asfortranarray(model.lm_head, dtype=np.float64))
    return twin


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_every_steps_gradient_equals_float64_finite_differences(tied):
    """For sampled entries of every recorded value: (ℒ(v + ε) − ℒ(v − ε)) / 2ε from the
    float64 engine, the entry changed with an edit (``Patch``) where the step computes it,
    against ∂ℒ/∂value of the float32 backward pass. ε = 1e-4: truncation ε² and rounding
    1e-16/ε are both far below the 1e-4-of-the-largest-entry tolerance."""
    config = Config(vocab_size=24, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, max_len=8,
                    seed=11, tie_word_embeddings=tied)
    model = GlassLM(config)
    wide = float64_copy(model)
    tokens, targets = [5, 3, 7, 3, 5, 1, 2], [3, 7, 3, 5, 1, 2, 0]
    grad_trace, values = Tracer(), Tracer()
    model.gradients(tokens, targets, grad_trace=grad_trace)
    wide.loss(tokens, targets, values)
    assert values.get("logits").value.dtype == np.float64
    rng, eps = np.random.default_rng(0), 1e-4
    checked = set()
    for rec in values.records:
        grad = grad_trace.get(rec.id, layer=rec.layer).value
        finite = np.argwhere(np.isfinite(np.broadcast_to(rec.value, rec.shape)))
        picks = finite[rng.choice(len(finite), size=min(3, len(finite)), replace=False)]
        for index in map(tuple, picks):
            losses = []
            for sign in (1, -1):
                source = np.array(rec.value, dtype=np.float64)
                source[index] += sign * eps
                losses.append(wide.loss(tokens, targets,
                                        edit=Patch(rec.id, source, layer=rec.layer)))
            numeric = (losses[0] - losses[1]) / (2 * eps)
            scale = max(float(np.abs(grad).max()), 1e-12)
            assert abs(grad[index] - numeric) <= 1e-4 * scale + 1e-9, \
                f"∂ℒ/∂{rec.id}{list(index)} (layer {rec.layer}): {grad[index]} vs {numeric}"
        checked.add(rec.id)
    assert checked == set(STEPS) - {"probs", "sample"}


def test_a_batch_is_the_mean_over_all_predictions():
    model = GlassLM(Config(vocab_size=32, d_model=16, n_layers=1, n_heads=4, n_kv_heads=1,
                           max_len=8, seed=6))
    rng = np.random.default_rng(2)
    tokens, targets = rng.integers(0, 32, (3, 6)), rng.integers(0, 32, (3, 6))
    loss, grads = model.gradients(tokens, targets)
    singles = [model.gradients(t, y) for t, y in zip(tokens, targets)]
    assert loss == pytest.approx(np.mean([one[0] for one in singles]), abs=1e-6)
    for name, value in grads.items():
        mean = np.mean([one[1][name] for one in singles], axis=0)
        assert_close_to_largest(value, mean, 1e-5, name)
    # a batch of one, as a (1, n) array or a list holding one list, is the sequence itself
    one_loss, one_grads = model.gradients(tokens[:1], targets[:1].tolist())
    assert one_loss == singles[0][0]


def test_the_untraced_step_computes_the_loss_in_the_logits_buffer_with_the_same_bits():
    """Without a trace the loss and ∂ℒ/∂ℓ are computed a block of rows at a time in the
    logits' own buffer (nn.cross_entropy_and_backward): the same bits as the traced path's
    cross_entropy + cross_entropy_backward, rows and vocabulary larger than one block. The
    whole step's gradients agree with the traced step's to float32 rounding, not to the bit:
    its attention runs in blocks of queries, and BLAS may sum a block's products in another
    order than the whole matrix's (seen on an AMD EPYC with AVX2: ~1e-9 against ~0.05)."""
    from glassllm.nn import cross_entropy, cross_entropy_and_backward, cross_entropy_backward
    rng = np.random.default_rng(4)
    logits = (rng.standard_normal((300, 1000)) * 30).astype(np.float32)  # floored entries too
    targets = rng.integers(0, 1000, 300)
    nll, probs = cross_entropy(logits, targets)
    grad = cross_entropy_backward(probs, targets)
    fused_nll, fused_grad = cross_entropy_and_backward(logits.copy(), targets)
    assert np.array_equal(fused_nll, nll) and np.array_equal(fused_grad, grad)
    model = GlassLM(Config(vocab_size=700, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1,
                           max_len=128, seed=3))
    tokens = rng.integers(0, 700, 101)
    loss, grads = model.gradients(tokens[:-1], tokens[1:])
    traced_loss, traced = model.gradients(tokens[:-1], tokens[1:], trace=Tracer())
    assert loss == pytest.approx(traced_loss, rel=1e-6)
    for name in grads:
        assert_close_to_largest(grads[name], traced[name], 1e-6, name)
    model.lm_head[5] = np.nan  # a weight gone NaN is named, not trained on
    with pytest.raises(ValueError, match="logits hold NaN or infinite values"):
        model.gradients(tokens[:-1], tokens[1:])
    for bad in (np.nan, np.inf, -np.inf):  # each found in its own block, wherever it sits
        for row, column in ((0, 0), (299, 999), (150, targets[150])):
            broken = logits.copy()
            broken[row, column] = bad
            with pytest.raises(ValueError, match="logits hold NaN or infinite values"):
                cross_entropy_and_backward(broken, targets)
    calm = logits / np.float32(30)  # no logit below the floor: the floor's pass is skipped
    nll, probs = cross_entropy(calm, targets)
    fused_nll, fused_grad = cross_entropy_and_backward(calm.copy(), targets)
    assert np.array_equal(fused_nll, nll)
    assert np.array_equal(fused_grad, cross_entropy_backward(probs, targets))


@pytest.mark.parametrize("b, heads, kv_heads, n, dh", [
    (2, 4, 2, 128, 8), (1, 6, 2, 77, 4), (3, 2, 2, 5, 4), (1, 4, 1, 33, 6), (2, 2, 1, 1, 2)])
def test_the_training_steps_attention_backward_skips_only_what_the_mask_hides(
        b, heads, kv_heads, n, dh):
    """nn.causal_attention_backward (a step without grad_trace) against the four marked
    rules it stands for, context -> softmax -> mask -> scores, over every key."""
    from glassllm.nn import (causal_attention_backward, causal_mask, causal_mask_backward,
                             context_backward, group_queries, scores_backward, softmax,
                             softmax_backward, ungroup_queries)
    rng = np.random.default_rng(n)
    q = rng.standard_normal((b, heads, n, dh)).astype(np.float32)
    k, v = (rng.standard_normal((b, kv_heads, n, dh)).astype(np.float32) for _ in range(2))
    scores = ungroup_queries(group_queries(q, kv_heads) @ k.transpose(0, 1, 3, 2), heads)
    weights = softmax(causal_mask(scores / np.float32(np.sqrt(dh))))
    dcontext = rng.standard_normal((b, heads, n, dh)).astype(np.float32)
    dweights, dv = context_backward(dcontext, weights, v, kv_heads)
    dscores = causal_mask_backward(softmax_backward(dweights, weights))
    expected = (*scores_backward(dscores, q, k, kv_heads), dv)
    for name, got, want in zip(("dq", "dk", "dv"),
                               causal_attention_backward(dcontext, weights, q, k, v, kv_heads),
                               expected):
        assert got.shape == want.shape and got.dtype == np.float32
        assert_close_to_largest(got, want, 1e-6, name)


def test_a_batch_with_a_tracer_is_refused_and_nothing_is_recorded():
    model = GlassLM(Config(vocab_size=32, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, max_len=8))
    tokens = np.zeros((2, 4), dtype=np.int64)
    for kwargs in (dict(trace=Tracer()), dict(grad_trace=Tracer())):
        with pytest.raises(ValueError, match="one sequence"):
            model.gradients(tokens, tokens, **kwargs)
        assert not len(next(iter(kwargs.values())))
    trace = Tracer()
    model.gradients(tokens[:1], tokens[:1], trace=trace, grad_trace=Tracer())  # (1, n) is one
    assert len(trace) == 18 + 5
    with pytest.raises(ValueError, match="same Tracer"):
        model.gradients([1, 2], [2, 3], trace=trace, grad_trace=trace)
    with pytest.raises(ValueError, match="glassllm.Tracer"):
        model.gradients([1, 2], [2, 3], grad_trace=[])


@pytest.mark.parametrize("tokens, targets, message", [
    ([1, 2, 40], [1, 2, 3], "outside \\[0, 32\\)"),
    ([1, 2, 3], [1, 2], "one target per position"),
    ([[1, 2], [3, 4]], [[1, 2]], "one target per position"),
    ([1, 2.5], [1, 2], "must be integers"),
    (np.array([[1.0, 2.0]]), [[1, 2]], "must be integers"),
    ({1, 2, 3}, [1, 2, 3], "does not keep the tokens' order"),
    ([1, 2], {1: 0, 2: 0}, "does not keep the tokens' order"),
    ([{1, 2}, {3, 4}], [[1, 2], [3, 4]], "does not keep the tokens' order"),
    ([[1, 2], [3]], [[1, 2], [3]], "one length"),
    (np.zeros((1, 2, 2), dtype=np.int64), [1, 2], "shape"),
    ([], [], "empty"),
    (list(range(9)), list(range(9)), "max_len"),
    ("abc", "abc", "not text"),
])
def test_bad_tokens_are_refused_with_what_to_do(tokens, targets, message):
    model = GlassLM(Config(vocab_size=32, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, max_len=8))
    with pytest.raises(ValueError, match=message):
        model.gradients(tokens, targets)


def test_next_token_distribution_backward_is_the_softmax_jacobian_over_temperature():
    """The probs step's rule, against central differences of softmax(top_k(ℓ) / T) written
    out in float64; the logits top_k drops get exactly 0."""
    rng = np.random.default_rng(3)
    logits = rng.standard_normal(12).astype(np.float32)
    dprobs = rng.standard_normal(12).astype(np.float32)

    def distribution(wide, temperature, kept):
        e = np.where(kept, np.exp((wide - wide.max()) / temperature), 0.0)
        return e / e.sum()

    for temperature, top_k in ((1.0, None), (0.7, None), (2.5, 5)):
        probs = next_token_distribution(logits, temperature, top_k)
        grad = next_token_distribution_backward(probs, dprobs, temperature)
        assert grad.dtype == np.float32 and grad.shape == probs.shape
        kept = probs > 0
        assert kept.sum() == (top_k or 12)
        eps, wide = 1e-6, logits.astype(np.float64)
        for v in range(12):
            step = np.zeros(12)
            step[v] = eps
            numeric = (np.dot(dprobs, distribution(wide + step, temperature, kept))
                       - np.dot(dprobs, distribution(wide - step, temperature, kept))) / (2 * eps)
            assert grad[v] == pytest.approx(numeric, abs=1e-5)
        assert not grad[~kept].any()
    assert not sample_backward(probs).any() and sample_backward(probs).shape == probs.shape


def test_head_steps_gradients_keep_the_head_layout():
    config = Config(vocab_size=32, d_model=24, n_layers=1, n_heads=6, n_kv_heads=2, max_len=8)
    grad_trace = Tracer()
    GlassLM(config).gradients([1, 2, 3, 4], [2, 3, 4, 5], grad_trace=grad_trace)
    for step_id in HEAD_STEPS:
        heads = config.n_kv_heads if step_id in ("attn.k", "attn.v", "attn.k_rope") else config.n_heads
        assert grad_trace.get(step_id).shape[0] == heads, step_id


@pytest.mark.parametrize("b, heads, kv_heads, n, dh", [
    (2, 4, 2, 128, 8), (1, 6, 2, 77, 4), (3, 2, 2, 5, 4), (1, 4, 1, 33, 6), (2, 2, 1, 1, 2),
    (4, 6, 6, 128, 48)])
def test_the_training_steps_attention_skips_only_what_the_mask_hides(b, heads, kv_heads, n, dh):
    """nn.causal_attention (a training step's forward) against the marked lines from the
    scores to the context, over every key; the weights after each query exactly 0."""
    from glassllm.nn import (causal_attention, causal_mask, group_queries, softmax,
                             ungroup_queries)
    rng = np.random.default_rng(n + 1)
    q = rng.standard_normal((b, heads, n, dh)).astype(np.float32)
    k, v = (rng.standard_normal((b, kv_heads, n, dh)).astype(np.float32) for _ in range(2))
    scores = ungroup_queries(group_queries(q, kv_heads) @ k.transpose(0, 1, 3, 2), heads)
    weights = softmax(causal_mask(scores * np.float32(1 / np.sqrt(dh))))
    context = ungroup_queries(group_queries(weights, kv_heads) @ v, heads)
    got_context, got_weights = causal_attention(q, k, v, kv_heads)
    assert got_context.shape == context.shape and got_weights.shape == weights.shape
    assert got_context.dtype == got_weights.dtype == np.float32
    assert not got_weights[:, :, np.triu(np.ones((n, n), dtype=bool), k=1)].any()
    assert_close_to_largest(got_weights, weights, 1e-6, "weights")
    assert_close_to_largest(got_context, context, 1e-6, "context")
