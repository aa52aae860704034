"""Generation with a KV cache against two independent references: the full recompute
(``cache=False``, which runs the whole sequence through ``forward`` at every step) and
Hugging Face's ``LlamaForCausalLM.generate()`` with its own cache, on the same weights."""

import numpy as np
import pytest

from glassllm import Config, GlassLM
from glassllm.nn import KVCache
from glassllm.steps import HEAD_STEPS, LAYER_STEPS, STEP_FACTS
from tests.conftest import require_or_skip

try:
    import torch
    from transformers import GenerationConfig

    from tests.glassllm.test_reference import hugging_face_twin
except ImportError as error:  # pragma: no cover - depends on the machine
    torch = None
    IMPORT_ERROR = error

CONFIGS = [
    dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=40, seed=3),
    dict(vocab_size=64, d_model=32, n_layers=1, n_heads=4, n_kv_heads=4, max_len=40, seed=4),
    dict(vocab_size=97, d_model=48, n_layers=3, n_heads=6, n_kv_heads=1, max_len=40, seed=5,
         d_ff=64, rope_theta=500000.0),
]
IDS = ["gqa", "mha", "one-kv-head"]
FORWARD_IDS = ["embed", *LAYER_STEPS, "final_norm", "logits"]


def generate(model, prompt, n, **options):
    return list(model.generate(prompt, n, **options))


@pytest.mark.parametrize("fields", CONFIGS, ids=IDS)
def test_cached_greedy_generation_equals_the_full_recompute(fields):
    model = GlassLM(Config(**fields))
    prompt = [3, 1, 4, 1, 5]
    cached = generate(model, prompt, 30, greedy=True)
    full = generate(model, prompt, 30, greedy=True, cache=False)
    assert [s.token for s in cached] == [s.token for s in full]
    for a, b in zip(cached, full):
        np.testing.assert_allclose(a.probs, b.probs, atol=1e-5, rtol=0)


def test_cached_sampling_equals_the_full_recompute_for_a_seed():
    model = GlassLM(Config(**CONFIGS[0]))
    options = dict(temperature=0.8, top_k=10, seed=11)
    cached = generate(model, [7, 8], 25, **options)
    full = generate(model, [7, 8], 25, cache=False, **options)
    assert [s.token for s in cached] == [s.token for s in full]


def test_every_cached_step_equals_forward_on_the_sequence_so_far():
    model = GlassLM(Config(**CONFIGS[0]))
    prompt = [9, 2, 6]
    steps = generate(model, prompt, 12, greedy=True)
    tokens = prompt + [s.token for s in steps]
    for i, step in enumerate(steps):
        logits = model.forward(tokens[:len(prompt) + i])[-1].astype(np.float64)
        expected = np.exp(logits - logits.max())
        np.testing.assert_allclose(step.probs, expected / expected.sum(), atol=1e-5, rtol=0)


def test_the_first_traced_step_is_exactly_the_full_recompute():
    """The project's founding example: 23 records for one block, attn.softmax (3, 3) for 3 tokens."""
    model = GlassLM(Config(vocab_size=8, d_model=8, n_layers=1, n_heads=2, n_kv_heads=1,
                           max_len=4))
    cached = next(model.generate([1, 2, 3], 1, greedy=True, trace=True))
    full = next(model.generate([1, 2, 3], 1, greedy=True, trace=True, cache=False))
    assert len(cached.trace.records) == 23
    assert cached.trace.get("attn.softmax", layer=0, head=1).shape == (3, 3)
    for a, b in zip(cached.trace.records, full.trace.records, strict=True):
        assert (a.id, a.layer, a.order, a.head) == (b.id, b.layer, b.order, b.head)
        np.testing.assert_array_equal(a.value, b.value)


def test_later_traced_steps_record_one_query_row_against_every_cached_key():
    fields = CONFIGS[0]
    c = Config(**fields)
    model = GlassLM(c)
    prompt = [5, 4, 3, 2]
    cached = generate(model, prompt, 6, greedy=True, trace=True)
    full = generate(model, prompt, 6, greedy=True, trace=True, cache=False)
    sizes = {"token": 1, "query": 1, "feature": c.d_model, "head": c.n_heads,
             "kv_head": c.n_kv_heads, "dim": c.head_dim, "hidden": c.d_ff,
             "vocab": c.vocab_size}
    for t, (step, reference) in enumerate(zip(cached[1:], full[1:]), start=1):
        n = len(prompt) + t  # tokens so far; the step computes position n - 1
        records = step.trace.records
        assert len(records) == 18 * c.n_layers + 5
        assert [(r.id, r.layer) for r in records] == [(r.id, r.layer) for r in reference.trace.records]
        assert step.trace.step_ids() == FORWARD_IDS + ["probs", "sample"]
        for record in records:
            expected = tuple(n if axis == "key" else sizes[axis]
                             for axis in STEP_FACTS[record.id].axes)
            assert record.shape == expected, (t, record.id)
            # the cached row is the last row of the full recompute's snapshot
            full_value = reference.trace.get(record.id, layer=record.layer).value
            if record.id in HEAD_STEPS:
                full_value = full_value[:, -1:]
            elif record.id not in ("probs", "sample"):
                full_value = full_value[-1:]
            np.testing.assert_allclose(record.value, full_value, atol=2e-5, rtol=1e-5,
                                       err_msg=f"step {t}, {record.id}, layer {record.layer}")
        for layer in range(c.n_layers):  # one query row at the last position: nothing masked
            assert np.isfinite(step.trace.get("attn.mask", layer=layer).value).all()


def test_the_cache_is_the_k_rope_and_v_rows_of_the_steps_so_far():
    model = GlassLM(Config(**CONFIGS[0]))
    steps = generate(model, [1, 2, 3], 5, greedy=True, trace=True)
    last_full = list(model.generate([1, 2, 3] + [s.token for s in steps[:-1]], 1,
                                    greedy=True, trace=True, cache=False))[0].trace
    for step_id in ("attn.k_rope", "attn.v"):
        for layer in range(2):
            rows = np.concatenate([s.trace.get(step_id, layer=layer).value for s in steps],
                                  axis=1)  # (Hkv, n, dh)
            np.testing.assert_allclose(rows, last_full.get(step_id, layer=layer).value,
                                       atol=2e-5, rtol=1e-5)


def test_the_cache_is_bounded_by_max_len():
    model = GlassLM(Config(**{**CONFIGS[0], "max_len": 8}))
    assert len(generate(model, [1, 2, 3], 5, greedy=True)) == 5  # 3 + 5 = max_len: fine
    for cache in (True, False):
        with pytest.raises(ValueError, match=r"prompt \(3 tokens\) \+ n \(6\) exceeds max_len "
                                             r"\(8\); shorten the prompt or generate fewer"):
            model.generate([1, 2, 3], 6, cache=cache)
    cache = KVCache(n_layers=1, n_kv_heads=1, capacity=2, head_dim=4)
    rows = np.zeros((1, 1, 2, 4), dtype=np.float32)
    cache.extend(0, rows, rows)
    cache.length = 2
    with pytest.raises(ValueError, match="holds 2 positions and cannot take position 2"):
        cache.extend(0, rows[:, :, :1], rows[:, :, :1])


@pytest.mark.parametrize("bad", [1, 0, "no", None])
def test_cache_is_a_switch(bad):
    with pytest.raises(ValueError, match="cache must be True or False"):
        GlassLM(Config(**CONFIGS[0])).generate([1], 1, cache=bad)


def test_generating_with_the_cache_changes_no_weight():
    model = GlassLM(Config(**CONFIGS[0]))
    before = model.state_dict()
    generate(model, [1, 2], 10, trace=True, seed=0)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)


# -- against Hugging Face generate() with its cache ------------------------------------------

@pytest.fixture
def reference_available():
    require_or_skip(torch is not None,
                    f"torch and transformers are needed for the reference test "
                    f"(pip install torch==2.13.0 transformers): "
                    f"{IMPORT_ERROR if torch is None else ''}", "GLASSLLM_REQUIRE_REFERENCE")


@pytest.mark.reference
@pytest.mark.parametrize("fields", CONFIGS, ids=IDS)
def test_cached_generation_equals_hugging_face_generate(fields, reference_available):
    model = GlassLM(Config(**fields))
    twin = hugging_face_twin(model)
    twin.generation_config.eos_token_id = None  # no token ends the text early
    prompt, n = [3, 1, 4, 1, 5, 9, 2, 6], 24
    settings = GenerationConfig(max_new_tokens=n, do_sample=False, pad_token_id=0,
                                use_cache=True, output_logits=True,
                                return_dict_in_generate=True)
    with torch.no_grad():
        out = twin.generate(torch.tensor([prompt]), generation_config=settings)
    steps = generate(model, prompt, n, greedy=True)
    assert [s.token for s in steps] == out.sequences[0, len(prompt):].tolist()
    for step, logits in zip(steps, out.logits, strict=True):
        expected = torch.softmax(logits[0].double(), dim=-1).numpy()
        np.testing.assert_allclose(step.probs, expected, atol=1e-5, rtol=0)
