import itertools
import json
import sys
from dataclasses import fields

import numpy as np
import pytest

from glassllm import BYTE_VOCAB_SIZE, Config, GlassLM, Tracer, decode, encode
from glassllm.model import next_token_distribution
from glassllm.nn import LINEAR_ORDER
from glassllm.recording import dumps, record_generation
from glassllm.steps import HEAD_STEPS, LAYER_STEPS, STEPS

FORWARD_IDS = ["embed", *LAYER_STEPS, "final_norm", "logits"]


def small(n_layers=2, **overrides):
    fields = dict(vocab_size=32, d_model=16, n_layers=n_layers, n_heads=4, n_kv_heads=2,
                  max_len=12, seed=1)
    fields.update(overrides)
    return GlassLM(Config(**fields))


@pytest.mark.parametrize("n_layers", [1, 2, 3, 4])
def test_event_counts_per_run(n_layers):
    model = small(n_layers)
    forward = Tracer()
    model.forward([1, 2, 3], forward)
    assert len(forward.records) == 18 * n_layers + 3
    step = next(model.generate([1, 2, 3], 1, trace=True, seed=0))
    assert len(step.trace.records) == 18 * n_layers + 5
    loss = Tracer()
    model.loss([1, 2, 3], [2, 3, 4], loss)
    assert len(loss.records) == 18 * n_layers + 5
    assert [r.order for r in loss.records] == list(range(len(loss.records)))


def test_the_two_sets_of_23_ids():
    model = small(4)
    generation = next(model.generate([5, 6], 1, greedy=True, trace=True)).trace
    training = Tracer()
    model.loss([5, 6], [6, 7], training)
    assert len(generation.records) == len(training.records) == 77
    assert generation.step_ids() == FORWARD_IDS + ["probs", "sample"]
    assert training.step_ids() == FORWARD_IDS + ["loss", "loss.grad"]
    assert set(generation.step_ids()) | set(training.step_ids()) == set(STEPS)
    assert not {"loss", "loss.grad"} & set(generation.step_ids())


def test_records_follow_execution_order_with_layers():
    trace = Tracer()
    small(2).forward([1, 2, 3, 4], trace)
    expected = [("embed", None)] + [(s, layer) for layer in range(2) for s in LAYER_STEPS] + [
        ("final_norm", None), ("logits", None)]
    assert [(r.id, r.layer) for r in trace.records] == expected


def test_shapes_of_every_step():
    model = small(1, d_ff=24)
    trace = Tracer()
    model.forward([1, 2, 3], trace)
    shapes = {r.id: r.shape for r in trace.records}
    assert shapes["embed"] == shapes["attn.out"] == shapes["mlp.residual"] == (3, 16)
    assert shapes["attn.q"] == shapes["attn.q_rope"] == shapes["attn.context"] == (4, 3, 4)
    assert shapes["attn.k"] == shapes["attn.v"] == shapes["attn.k_rope"] == (2, 3, 4)
    assert shapes["attn.scores"] == shapes["attn.mask"] == shapes["attn.softmax"] == (4, 3, 3)
    assert shapes["mlp.gate"] == shapes["mlp.act"] == (3, 24)
    assert shapes["logits"] == (3, 32)
    for r in trace.records:
        assert r.value.dtype == np.float32, r.id
        if r.id in HEAD_STEPS:
            assert trace.get(r.id, layer=0, head=1).shape == r.shape[1:]


def test_causal_mask_and_softmax_rows():
    trace = Tracer()
    small(1).forward(list(range(6)), trace)
    masked = trace.get("attn.mask", layer=0).value
    scores = trace.get("attn.scores", layer=0).value
    above = np.triu(np.ones((6, 6), dtype=bool), k=1)
    assert np.all(np.isneginf(masked[:, above]))
    np.testing.assert_array_equal(masked[:, ~above], scores[:, ~above])
    weights = trace.get("attn.softmax", layer=0).value
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-6)
    assert np.all(weights[:, above] == 0)
    np.testing.assert_array_equal(weights[:, 0, 0], 1.0)  # the first token sees only itself


def test_rope_leaves_position_zero_and_norms_unchanged():
    trace = Tracer()
    small(1).forward([3, 1, 4, 1], trace)
    q, q_rope = trace.get("attn.q", layer=0).value, trace.get("attn.q_rope", layer=0).value
    np.testing.assert_allclose(q_rope[:, 0], q[:, 0], rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(q_rope, axis=-1), np.linalg.norm(q, axis=-1), rtol=1e-5)


def test_forward_is_deterministic_float32_and_seeded():
    a, b = small(), small()
    logits = a.forward([1, 2, 3])
    assert logits.shape == (3, 32) and logits.dtype == np.float32
    np.testing.assert_array_equal(logits, b.forward([1, 2, 3]))
    assert not np.array_equal(logits, small(seed=2).forward([1, 2, 3]))
    # causal: earlier positions do not depend on later tokens
    np.testing.assert_allclose(a.forward([1, 2, 9])[:2], logits[:2], rtol=1e-5, atol=1e-6)


def test_traced_and_untraced_forward_agree():
    model = small()
    trace = Tracer()
    np.testing.assert_array_equal(model.forward([4, 5, 6], trace), model.forward([4, 5, 6]))
    np.testing.assert_array_equal(trace.get("logits").value, model.forward([4, 5, 6]))


def test_loss_value_and_records():
    model = small()
    tokens, targets = [1, 2, 3, 4], [2, 3, 4, 5]
    trace = Tracer()
    loss = model.loss(tokens, targets, trace)
    logits = model.forward(tokens).astype(np.float64)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    assert loss == pytest.approx(-logp[np.arange(4), targets].mean(), rel=1e-5)
    assert trace.get("loss").shape == () and float(trace.get("loss").value) == pytest.approx(loss)
    np.testing.assert_allclose(trace.get("loss.grad").value.sum(-1), 0, atol=1e-6)


def test_loss_grad_matches_finite_differences():
    model = small(1)
    tokens, targets = [1, 2, 3], [2, 3, 4]
    trace = Tracer()
    model.loss(tokens, targets, trace)
    grad = trace.get("loss.grad").value.astype(np.float64)
    logits = trace.get("logits").value.astype(np.float64)

    def loss_of(z):
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        return -logp[np.arange(3), targets].mean()

    eps = 1e-6
    numeric = np.zeros_like(logits)
    for index in np.ndindex(*logits.shape):
        bumped = logits.copy()
        bumped[index] += eps
        lowered = logits.copy()
        lowered[index] -= eps
        numeric[index] = (loss_of(bumped) - loss_of(lowered)) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, atol=1e-6)


def test_generation_steps_are_reproducible_and_shaped():
    model = small()
    run = lambda seed: [(s.token, s.probs) for s in model.generate([1, 2], 5, seed=seed)]  # noqa: E731
    first, again = run(7), run(7)
    assert [t for t, _ in first] == [t for t, _ in again]
    for token, probs in first:
        assert 0 <= token < 32 and probs.shape == (32,)
        assert probs.sum() == pytest.approx(1, abs=1e-5)
    steps = list(model.generate([1, 2], 3, greedy=True, trace=True))
    assert [s.token for s in steps] == [int(np.argmax(s.probs)) for s in steps]
    assert len({id(s.trace) for s in steps}) == 3  # a fresh tracer per step
    # the KV cache: step 2 computes one query row against the prompt + 2 generated keys
    assert steps[2].trace.get("attn.softmax", layer=0).shape == (4, 1, 4)
    assert int(steps[0].trace.get("sample").value) == steps[0].token
    assert all(s.trace is None for s in model.generate([1], 2))


def test_generation_feeds_tokens_back_like_forward():
    model = small()
    steps = list(model.generate([3, 1], 3, greedy=True))
    sequence = [3, 1] + [s.token for s in steps[:-1]]
    probs = np.exp(model.forward(sequence)[-1].astype(np.float64))
    assert steps[-1].token == int(np.argmax(probs / probs.sum()))


def test_top_k_and_temperature():
    model = small()
    step = next(model.generate([1, 2], 1, top_k=3, seed=0, temperature=0.5))
    assert np.count_nonzero(step.probs) == 3
    assert step.token in np.flatnonzero(step.probs)
    hot = next(model.generate([1, 2], 1, seed=0, temperature=5.0)).probs
    cold = next(model.generate([1, 2], 1, seed=0, temperature=0.2)).probs
    assert hot.max() < cold.max()


def test_state_dict_names_shapes_and_round_trip():
    model = small(2, d_ff=40)
    state = model.state_dict()
    assert state["model.embed_tokens.weight"].shape == (32, 16)
    assert state["model.layers.1.self_attn.q_proj.weight"].shape == (16, 16)
    assert state["model.layers.1.self_attn.k_proj.weight"].shape == (8, 16)
    assert state["model.layers.0.mlp.gate_proj.weight"].shape == (40, 16)
    assert state["model.layers.0.mlp.down_proj.weight"].shape == (16, 40)
    assert state["model.norm.weight"].shape == (16,) and state["lm_head.weight"].shape == (32, 16)
    assert len(state) == 2 + 9 * 2 + 1
    other = small(2, d_ff=40, seed=5)
    other.load_state_dict(state)
    np.testing.assert_array_equal(other.forward([1, 2]), model.forward([1, 2]))
    state["model.embed_tokens.weight"][:] = 0  # a copy: the model is untouched
    assert model.embed_tokens.any()


def test_load_state_dict_rejects_mismatches_without_changing_anything():
    model = small()
    before = model.forward([1, 2])
    state = model.state_dict()
    state["lm_head.weight"] = np.zeros((3, 3))
    state["model.norm.weight"] = np.zeros(16)
    with pytest.raises(ValueError, match="lm_head.weight has shape"):
        model.load_state_dict(state)
    del state["lm_head.weight"]
    with pytest.raises(ValueError, match="missing"):
        model.load_state_dict(state)
    np.testing.assert_array_equal(model.forward([1, 2]), before)


@pytest.mark.parametrize("fields, name", [
    (dict(d_model=15), "d_model"), (dict(n_kv_heads=3), "n_kv_heads"),
    (dict(vocab_size=0), "vocab_size"), (dict(n_layers=-1), "n_layers"),
    (dict(max_len=True), "max_len"), (dict(d_model=12, n_heads=4, n_kv_heads=2), "head width"),
    (dict(d_ff=0), "d_ff"), (dict(rope_theta=0.0), "rope_theta"), (dict(norm_eps=-1), "norm_eps"),
    (dict(seed=-1), "seed"), (dict(n_heads=2.0), "n_heads"),
])
def test_invalid_config_names_the_field(fields, name):
    base = dict(vocab_size=32, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, max_len=8)
    base.update(fields)
    with pytest.raises(ValueError, match=name):
        Config(**base)


def test_config_defaults():
    c = Config(vocab_size=256, d_model=288, n_layers=6, n_heads=6, n_kv_heads=6, max_len=64)
    assert (c.d_ff, c.rope_theta, c.norm_eps, c.seed, c.head_dim) == (768, 10000.0, 1e-5, 0, 48)
    with pytest.raises(AttributeError):
        c.d_model = 8


@pytest.mark.parametrize("tokens, message", [
    ([], "empty"), ([1, 32], "outside"), ([-1], "outside"), ([1, 2.5], "integers"),
    ([1, True], "integers"), ("hello", "encode"), (list(range(13)), "max_len"),
    (np.array([[1, 2]]), "integers|flat"), (np.array([1.0, 2.0]), "integers"), (None, "sequence"),
])
def test_bad_tokens_are_value_errors_that_say_what_to_do(tokens, message):
    with pytest.raises(ValueError, match=message):
        small().forward(tokens)


def test_numpy_integer_tokens_are_fine():
    model = small()
    np.testing.assert_array_equal(model.forward(np.array([1, 2], dtype=np.uint8)),
                                  model.forward([1, 2]))


def test_bad_generation_and_loss_arguments():
    model = small()
    with pytest.raises(ValueError, match="max_len"):
        model.generate(list(range(10)), 3)  # 10 + 3 > 12, refused before any step runs
    with pytest.raises(ValueError, match="temperature"):
        model.generate([1], 1, temperature=0)
    with pytest.raises(ValueError, match="top_k"):
        model.generate([1], 1, top_k=0)
    with pytest.raises(ValueError, match="non-negative"):
        model.generate([1], -1)
    with pytest.raises(ValueError, match="prompt"):
        model.generate([], 1)
    with pytest.raises(ValueError, match="targets has 2 tokens but tokens has 3"):
        model.loss([1, 2, 3], [2, 3])
    with pytest.raises(ValueError, match="targets"):
        model.loss([1, 2], [2, 99])


def test_failing_calls_leave_no_partial_records():
    model = small()
    trace = Tracer()
    model.forward([1, 2], trace)
    kept = list(trace.records)
    with pytest.raises(ValueError):
        model.forward([1, 99], trace)
    with pytest.raises(ValueError):
        model.loss([1, 2], [1], trace)
    # a failure in the middle of the computation: the block weights do not fit
    model.layers[1].w_down = np.zeros((3, 3), dtype=np.float32)
    with pytest.raises(ValueError):
        model.forward([1, 2], trace)
    assert trace.records == kept


def test_byte_tokenizer_round_trip():
    text = "Olá, glass box! ∞"
    tokens = encode(text)
    assert all(0 <= t < BYTE_VOCAB_SIZE for t in tokens) and len(tokens) == len(text.encode())
    assert decode(tokens) == text
    assert decode([0xFF]) == "\ufffd"
    with pytest.raises(ValueError):
        decode([256])
    with pytest.raises(ValueError):
        encode(b"bytes")
    model = GlassLM(Config(BYTE_VOCAB_SIZE, 16, 1, 2, 1, 32))
    assert model.forward(encode("hi")).shape == (2, 256)


# -- hardening (issue 9): every bad input is a ValueError naming what is wrong --------------

@pytest.mark.parametrize("tokens", [[2**63], [1, -2**70], [2**64 + 1],
                                    np.array([1, 2**63], dtype=np.uint64)])
def test_huge_tokens_are_value_errors_not_overflow(tokens):
    with pytest.raises(ValueError, match="outside \\[0, 32\\)"):
        small().forward(tokens)


def test_an_endless_iterator_is_refused_after_max_len_plus_one_tokens():
    read = []

    def endless():
        for i in itertools.count():
            if i > 100:
                raise AssertionError("the model read the whole iterator")
            read.append(i)
            yield 1

    with pytest.raises(ValueError, match="prompt has more tokens than max_len \\(12\\)"):
        small().generate(endless(), 0)
    assert len(read) == 13
    with pytest.raises(ValueError, match="has 13 tokens, more than max_len"):
        small().forward([1] * 13)


def test_config_turns_numpy_numbers_into_python_numbers():
    c = Config(vocab_size=np.int64(32), d_model=np.int32(16), n_layers=np.uint8(1),
               n_heads=np.int64(4), n_kv_heads=np.int16(2), max_len=np.int64(8),
               d_ff=np.int64(24), rope_theta=np.float32(500.0), norm_eps=np.float64(1e-6),
               seed=np.uint64(3), tie_word_embeddings=np.bool_(True))
    for f in fields(c):
        assert type(getattr(c, f.name)) in (int, float, bool), f.name
    assert c.tie_word_embeddings is True
    assert (c.vocab_size, c.rope_theta, c.seed) == (32, 500.0, 3)
    np.testing.assert_array_equal(GlassLM(c).forward([1, 2]),
                                  GlassLM(Config(32, 16, 1, 4, 2, 8, 24, 500.0, 1e-6, 3, True))
                                  .forward([1, 2]))
    # NumPy numbers for the sampler too: the recording is plain JSON
    rec = record_generation(GlassLM(c), [1, 2], 1, seed=np.int64(2), top_k=np.int64(3))
    doc = json.loads(dumps(rec))
    assert doc["sampling"]["seed"] == 2 and doc["sampling"]["top_k"] == 3
    assert doc["config"]["rope_theta"] == 500.0


@pytest.mark.parametrize("name, value", [("rope_theta", float("inf")),
                                         ("norm_eps", np.float32("inf")),
                                         ("rope_theta", float("nan")),
                                         ("d_model", float("inf"))])
def test_config_rejects_non_finite_numbers(name, value):
    base = dict(vocab_size=32, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, max_len=8)
    base[name] = value
    with pytest.raises(ValueError, match=f"Config.{name} must be"):
        Config(**base)


def test_generate_takes_trace_as_a_switch_not_a_tracer():
    with pytest.raises(ValueError, match="trace must be True or False.*one Tracer per step"):
        small().generate([1], 1, trace=Tracer())
    with pytest.raises(ValueError, match="trace must be True or False"):
        small().generate([1], 1, trace=1)


@pytest.mark.parametrize("call", ["forward", "loss"])
@pytest.mark.parametrize("bad", [True, "yes", []])
def test_forward_and_loss_take_a_tracer_or_none(call, bad):
    model = small()
    args = ([1, 2],) if call == "forward" else ([1, 2], [2, 3])
    with pytest.raises(ValueError, match="trace must be a glassllm.Tracer or None.*Tracer\\(\\)"):
        getattr(model, call)(*args, trace=bad)


@pytest.mark.parametrize("kwargs, message", [
    (dict(seed=-1), "seed must be None or a non-negative integer, got -1"),
    (dict(seed=1.5), "seed must be None or a non-negative integer, got 1.5"),
    (dict(seed=True), "seed must be"), (dict(seed="1"), "seed must be"),
    (dict(greedy="no"), "greedy must be True or False"), (dict(greedy=1), "greedy must be"),
    (dict(temperature=float("inf")), "temperature must be a positive finite number"),
    (dict(temperature=float("nan")), "temperature must be"),
])
def test_generation_arguments_are_checked_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        small().generate([1], 1, **kwargs)


def test_numpy_seed_greedy_and_top_k_are_fine():
    model = small()
    a = [s.token for s in model.generate([1], 3, seed=np.int64(4), top_k=np.int32(5))]
    assert a == [s.token for s in model.generate([1], 3, seed=4, top_k=5)]
    assert next(model.generate([1], 1, greedy=np.bool_(True))).token == \
        next(model.generate([1], 1, greedy=True)).token


def test_a_temperature_near_zero_is_the_one_hot_of_the_argmax():
    logits = np.array([1.0, 3.0, 3.0, -2.0], dtype=np.float32)
    for temperature in (1e-40, 5e-324, 1e-12):
        probs = next_token_distribution(logits, temperature, None)
        assert probs.dtype == np.float32
        np.testing.assert_array_equal(probs, [0, 0.5, 0.5, 0])  # a tie shares the mass
    np.testing.assert_array_equal(next_token_distribution(logits, 1e-40, 1), [0, 0.5, 0.5, 0])
    # a huge temperature is uniform over the kept tokens, never NaN
    np.testing.assert_allclose(next_token_distribution(logits, 1e300, 3), [1 / 3] * 3 + [0])
    model = small()
    greedy = [s.token for s in model.generate([1, 2], 3, greedy=True)]
    cold = list(model.generate([1, 2], 3, temperature=1e-40, seed=0))
    assert [s.token for s in cold] == greedy
    for step in cold:
        assert np.isfinite(step.probs).all() and step.probs.max() == 1


def test_non_finite_weights_are_refused_not_turned_into_nan_probabilities():
    model = small()
    model.lm_head[3, 0] = np.nan
    with pytest.raises(ValueError, match="logits hold NaN or infinite values"):
        next(model.generate([1, 2], 1))
    with pytest.raises(ValueError, match="logits hold NaN or infinite values"):
        model.loss([1, 2], [2, 3])
    assert np.isnan(model.forward([1, 2])).any()  # forward still shows what happened
    with pytest.raises(ValueError, match="NaN or infinite"):
        next_token_distribution(np.array([0, np.inf], dtype=np.float32), 1.0, None)
    state = small().state_dict()
    state["model.layers.1.mlp.up_proj.weight"][0, 0] = np.inf
    with pytest.raises(ValueError, match="model.layers.1.mlp.up_proj.weight holds NaN or inf"):
        small().load_state_dict(state)


def test_stacked_weights_stay_writable_views_for_ablations():
    # q/k/v and gate/up are stored stacked for speed; wq, w_up... must still act as weights
    model = small(1)
    block = model.layers[0]
    before = model.forward([1, 2, 3])
    assert np.shares_memory(block.wq, block.w_qkv) and np.shares_memory(block.w_up, block.w_gate_up)
    saved = block.wv.copy()
    block.wv[:4] = 0  # zero the rows of KV head 0's values in place
    ablated = model.forward([1, 2, 3])
    assert not np.allclose(ablated, before)
    block.wv = saved  # assigning copies into the stacked matrix
    np.testing.assert_array_equal(model.forward([1, 2, 3]), before)
    with pytest.raises(ValueError, match=r"w_gate must have shape \(\d+, 16\)"):
        block.w_gate = np.zeros((3, 16))
    np.testing.assert_array_equal(model.state_dict()["model.layers.0.self_attn.v_proj.weight"],
                                  saved)


@pytest.mark.parametrize("n_heads, n_kv_heads", [(4, 4), (4, 2), (4, 1), (6, 3), (8, 2)])
def test_query_head_r_reads_kv_head_r_times_hkv_over_h(n_heads, n_kv_heads):
    # grouped-query attention without copies must keep the grouping g(r) = floor(r Hkv / H)
    model = GlassLM(Config(vocab_size=16, d_model=8 * n_heads, n_layers=1, n_heads=n_heads,
                           n_kv_heads=n_kv_heads, max_len=6, seed=2))
    trace = Tracer()
    model.forward([1, 5, 2, 7, 3], trace)
    q, k = trace.get("attn.q_rope", layer=0).value, trace.get("attn.k_rope", layer=0).value
    v, weights = trace.get("attn.v", layer=0).value, trace.get("attn.softmax", layer=0).value
    scores, context = trace.get("attn.scores", layer=0).value, trace.get("attn.context", layer=0).value
    for r in range(n_heads):
        g = r * n_kv_heads // n_heads
        np.testing.assert_allclose(scores[r], q[r] @ k[g].T / np.sqrt(8), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(context[r], weights[r] @ v[g], rtol=1e-5, atol=1e-6)


def test_linear_weights_are_column_major_however_they_arrive_and_give_the_same_logits():
    """The speed trick of nn.column_major: every Linear weight keeps PyTorch's (out, in) shape
    and values but sits in memory as its transpose, after construction, a state dict, a
    checkpoint or an assignment; the logits are those of row-major weights (BLAS may sum in
    another order: float32 rounding apart)."""
    import copy

    model = GlassLM(Config(vocab_size=256, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2,
                           max_len=16, tie_word_embeddings=False))
    matrices = lambda m: [getattr(b, name) for b in m.layers  # noqa: E731
                          for name in ("w_qkv", "wo", "w_gate_up", "w_down")] + [m.lm_head]
    # column-major where NumPy has BLAS; row-major in WebAssembly (nn.LINEAR_ORDER)
    stored = (lambda w: w.flags.f_contiguous and not w.flags.c_contiguous  # noqa: E731
              if LINEAR_ORDER == "F" else w.flags.c_contiguous)
    assert LINEAR_ORDER == ("C" if sys.platform == "emscripten" else "F")
    assert all(stored(w) for w in matrices(model))
    state = model.state_dict()
    assert all(v.flags.c_contiguous for v in state.values())  # what a caller gets is ordinary
    reloaded = GlassLM(Config(vocab_size=256, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2,
                              max_len=16, tie_word_embeddings=False, seed=9))
    reloaded.load_state_dict(state)
    assert all(stored(w) for w in matrices(reloaded))
    row_major = copy.deepcopy(model)
    for block in row_major.layers:
        for name in ("w_qkv", "wo", "w_gate_up", "w_down"):
            setattr(block, "_" + name, np.ascontiguousarray(getattr(block, name)))
    row_major.lm_head = np.ascontiguousarray(model.lm_head)
    assert not any(w.flags.f_contiguous for w in matrices(row_major))
    tokens = list(b"the glass box, the glass box")[:16]
    np.testing.assert_allclose(model.forward(tokens), row_major.forward(tokens), rtol=1e-5, atol=1e-5)
    assert np.array_equal(reloaded.forward(tokens), model.forward(tokens))
    model.layers[0].wo = np.ascontiguousarray(model.layers[0].wo * 2)
    assert stored(model.layers[0].wo)
    assert not np.allclose(model.forward(tokens), row_major.forward(tokens), rtol=1e-3, atol=1e-3)
