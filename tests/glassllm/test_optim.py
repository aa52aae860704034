"""glassllm.optim: AdamW against torch.optim.AdamW step for step, the learning-rate schedule
against a hand computation, and gradient clipping against torch.nn.utils.clip_grad_norm_."""

import math

import numpy as np
import pytest

from glassllm import Config, GlassLM
from glassllm.checkpoint import config_to_hf
from glassllm.nn import LINEAR_ORDER
from glassllm.optim import AdamW, clip_grad_norm, lr_at
from tests.conftest import require_or_skip

try:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as error:  # pragma: no cover - depends on the machine
    torch = None
    IMPORT_ERROR = error

SMALL = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=16)


def need_torch():
    require_or_skip(torch is not None,
                    f"torch and transformers are needed for the reference test "
                    f"(pip install torch==2.13.0 transformers): "
                    f"{IMPORT_ERROR if torch is None else ''}", "GLASSLLM_REQUIRE_REFERENCE")


def torch_twin(model: GlassLM):
    """transformers' Llama holding ``model``'s weights (tied if the model is)."""
    torch.manual_seed(0)
    twin = LlamaForCausalLM(LlamaConfig(**config_to_hf(model.config),
                                        attn_implementation="eager"))
    twin.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()},
                         strict=not model.config.tie_word_embeddings)
    if model.config.tie_word_embeddings:
        assert twin.lm_head.weight is twin.model.embed_tokens.weight
    return twin


def torch_gradients(twin, rows: np.ndarray) -> tuple[float, dict]:
    """Mean cross-entropy of ``rows[:, 1:]`` after ``rows[:, :-1]`` and every parameter's
    gradient, by autograd."""
    twin.zero_grad(set_to_none=True)
    rows = torch.from_numpy(rows)
    logits = twin(rows[:, :-1]).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             rows[:, 1:].reshape(-1))
    loss.backward()
    return float(loss.detach()), {name: p.grad.numpy().copy()
                                  for name, p in twin.named_parameters()}


def assert_same_weights(model: GlassLM, twin, atol: float) -> None:
    expected = twin.state_dict()
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(value, expected[name].numpy(), atol=atol, rtol=0,
                                   err_msg=name)


# -- AdamW ----------------------------------------------------------------------------------

@pytest.mark.reference
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("kv_heads", [4, 2, 1], ids=lambda h: f"kv{h}")
def test_ten_adamw_steps_equal_torch_given_the_same_gradients(tied, kv_heads):
    need_torch()
    torch.set_num_threads(1)
    model = GlassLM(Config(**{**SMALL, "n_kv_heads": kv_heads}, tie_word_embeddings=tied,
                           seed=3))
    twin = torch_twin(model)
    settings = dict(lr=3e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
    ours = AdamW(model, **settings)
    theirs = torch.optim.AdamW(twin.parameters(), **settings)
    rng = np.random.default_rng(0)
    for _ in range(10):
        _, grads = torch_gradients(twin, rng.integers(0, 64, (3, 9)))
        assert set(grads) == set(model.state_dict())  # tied: no lm_head.weight
        theirs.step()
        ours.step(grads)
    assert ours.step_count == 10
    assert_same_weights(model, twin, atol=1e-4)
    # the moments too, under state_dict() names
    state = ours.state_dict()
    for name, p in twin.named_parameters():
        np.testing.assert_allclose(state["exp_avg"][name], theirs.state[p]["exp_avg"].numpy(),
                                   atol=1e-6, rtol=1e-4, err_msg=name)
        np.testing.assert_allclose(state["exp_avg_sq"][name],
                                   theirs.state[p]["exp_avg_sq"].numpy(), atol=1e-9,
                                   rtol=1e-4, err_msg=name)
    # the update went into the model's own storage: the output layer is still the embedding
    # (tied), the stacked matrices still laid out as nn.LINEAR_ORDER says
    if tied:
        assert model.lm_head is model.embed_tokens
    order = "f_contiguous" if LINEAR_ORDER == "F" else "c_contiguous"
    assert all(getattr(block.w_qkv.flags, order) and getattr(block.w_gate_up.flags, order)
               for block in model.layers)


@pytest.mark.reference
def test_no_decay_equals_torch_with_a_second_group_without_weight_decay():
    need_torch()
    model = GlassLM(Config(**SMALL, seed=5))
    twin = torch_twin(model)
    flat = [name for name, value in model.state_dict().items() if value.ndim < 2]
    ours = AdamW(model, lr=1e-2, betas=(0.9, 0.95), weight_decay=0.5, no_decay=flat)
    params = dict(twin.named_parameters())
    theirs = torch.optim.AdamW(
        [{"params": [p for n, p in params.items() if n not in flat]},
         {"params": [params[n] for n in flat], "weight_decay": 0.0}],
        lr=1e-2, betas=(0.9, 0.95), weight_decay=0.5)
    rng = np.random.default_rng(1)
    for _ in range(10):
        _, grads = torch_gradients(twin, rng.integers(0, 64, (2, 12)))
        theirs.step()
        ours.step(grads)
    assert_same_weights(model, twin, atol=1e-4)


def test_one_step_by_hand():
    # t = 1: m = (1 - b1) g, v = (1 - b2) g^2, so m_hat / sqrt(v_hat) = sign(g) and each
    # weight moves by lr * sign(g) (up to eps), after the decay p (1 - lr wd)
    model = GlassLM(Config(**SMALL, tie_word_embeddings=True))
    before = model.state_dict()
    grads = {name: np.random.default_rng(2).standard_normal(value.shape).astype(np.float32)
             for name, value in before.items()}
    AdamW(model, lr=0.01, weight_decay=0.1, eps=0.0).step(grads)
    for name, value in model.state_dict().items():
        expected = before[name] * (1 - 0.01 * 0.1) - 0.01 * np.sign(grads[name])
        np.testing.assert_allclose(value, expected, atol=1e-6, err_msg=name)


def test_state_dict_resumes_to_the_same_bits():
    rng = np.random.default_rng(3)
    steps = [{name: rng.standard_normal(value.shape).astype(np.float32)
              for name, value in GlassLM(Config(**SMALL)).state_dict().items()}
             for _ in range(6)]
    straight = GlassLM(Config(**SMALL))
    opt = AdamW(straight, lr=1e-2, betas=(0.9, 0.95))
    for grads in steps:
        opt.step(grads)
    half = GlassLM(Config(**SMALL))
    first = AdamW(half, lr=1e-2, betas=(0.9, 0.95))
    for grads in steps[:3]:
        first.step(grads)
    saved_weights, saved_state = half.state_dict(), first.state_dict()
    resumed = GlassLM(Config(**SMALL, seed=9))  # other weights, replaced below
    resumed.load_state_dict(saved_weights)
    second = AdamW(resumed)  # other hyperparameters, replaced by the state
    second.load_state_dict(saved_state)
    assert second.step_count == 3 and second.betas == (0.9, 0.95)
    for grads in steps[3:]:
        second.step(grads)
    for name, value in straight.state_dict().items():
        np.testing.assert_array_equal(resumed.state_dict()[name], value, err_msg=name)


@pytest.mark.parametrize("kwargs, named", [
    (dict(lr=-1e-3), "lr"), (dict(lr=float("nan")), "lr"), (dict(lr="0.1"), "lr"),
    (dict(betas=(1.0, 0.999)), "betas[0]"), (dict(betas=(0.9, -0.1)), "betas[1]"),
    (dict(betas=(0.9,)), "betas"), (dict(eps=-1.0), "eps"),
    (dict(weight_decay=-0.1), "weight_decay"), (dict(no_decay=["nope"]), "no_decay"),
    (dict(no_decay=["model.layers.0.self_attn.q_proj.weight"]), "no_decay"),
])
def test_bad_arguments_are_value_errors_naming_them(kwargs, named):
    with pytest.raises(ValueError, match=named.replace("[", r"\[").replace("]", r"\]")):
        AdamW(GlassLM(Config(**SMALL)), **kwargs)


def test_setting_a_negative_lr_is_refused():
    opt = AdamW(GlassLM(Config(**SMALL)))
    with pytest.raises(ValueError, match="lr"):
        opt.lr = -0.5
    assert opt.lr == 1e-3


def _good_grads(model):
    return {name: np.full(value.shape, 0.5, dtype=np.float32)
            for name, value in model.state_dict().items()}


@pytest.mark.parametrize("spoil, message", [
    (lambda g: g.pop("model.norm.weight"), "missing"),
    (lambda g: g.update({"lm_head.weight": g["model.embed_tokens.weight"]}), "unexpected"),
    (lambda g: g.update({"model.layers.1.self_attn.k_proj.weight": np.zeros((32, 32),
                                                                              np.float32)}),
     "shape"),
    (lambda g: g["model.layers.1.mlp.up_proj.weight"].__setitem__((3, 4), np.nan), "NaN"),
    (lambda g: g["model.layers.1.mlp.down_proj.weight"].__setitem__((0, 0), -np.inf), "NaN"),
    (lambda g: g.update({"model.norm.weight": np.ones(32, dtype=np.int64)}), "dtype"),
])
def test_bad_gradients_change_no_weight(spoil, message):
    model = GlassLM(Config(**SMALL, tie_word_embeddings=True))
    opt = AdamW(model)
    opt.step(_good_grads(model))
    before, state = model.state_dict(), opt.state_dict()
    grads = _good_grads(model)
    spoil(grads)
    with pytest.raises(ValueError, match=message):
        opt.step(grads)
    after = model.state_dict()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    assert opt.step_count == 1
    for name in state["exp_avg"]:
        np.testing.assert_array_equal(opt.state_dict()["exp_avg"][name], state["exp_avg"][name])


def test_huge_finite_gradients_are_not_taken_for_infinite():
    model = GlassLM(Config(**SMALL))
    grads = {name: np.full(value.shape, 3e38, dtype=np.float32)
             for name, value in model.state_dict().items()}
    AdamW(model).step(grads)  # the sum overflows; every entry is finite
    assert all(np.isfinite(v).all() for v in model.state_dict().values())


def test_bad_optimiser_state_is_refused_before_anything_changes():
    model = GlassLM(Config(**SMALL))
    opt = AdamW(model)
    opt.step(_good_grads(model))
    state = opt.state_dict()
    bad = {**state, "exp_avg_sq": {**state["exp_avg_sq"],
                                   "model.norm.weight": -np.ones(32, np.float32)}}
    other = AdamW(model, lr=0.5)
    with pytest.raises(ValueError, match="negative"):
        other.load_state_dict(bad)
    assert other.step_count == 0 and other.lr == 0.5
    with pytest.raises(ValueError, match="keys"):
        other.load_state_dict({"step": 1})
    with pytest.raises(ValueError, match="step"):
        other.load_state_dict({**state, "step": -1})


# -- the schedule -----------------------------------------------------------------------------

def test_warmup_then_cosine_by_hand():
    kw = dict(lr=1e-3, min_lr=1e-4, warmup=10, steps=110)
    assert lr_at(0, **kw) == pytest.approx(1e-4)        # 1e-3 * 1 / 10
    assert lr_at(4, **kw) == pytest.approx(5e-4)
    assert lr_at(9, **kw) == pytest.approx(1e-3)        # the end of the warm-up
    assert lr_at(10, **kw) == pytest.approx(1e-3)       # cos(0) = 1
    assert lr_at(60, **kw) == pytest.approx(5.5e-4)     # half-way: (lr + min_lr) / 2
    # a quarter of the way: min + (lr - min) (1 + cos(pi / 4)) / 2
    assert lr_at(35, **kw) == pytest.approx(1e-4 + 9e-4 * (1 + math.sqrt(0.5)) / 2)
    assert lr_at(110, **kw) == pytest.approx(1e-4)      # the end
    assert lr_at(500, **kw) == pytest.approx(1e-4)      # after the end: min_lr
    assert lr_at(3, lr=1e-3, min_lr=0.0, warmup=0, steps=4) == pytest.approx(
        0.5e-3 * (1 + math.cos(math.pi * 3 / 4)))


@pytest.mark.parametrize("kwargs, named", [
    (dict(step=-1), "step"), (dict(warmup=1.5), "warmup"), (dict(lr=-1.0), "lr"),
    (dict(min_lr=2e-3), "min_lr"), (dict(steps=True), "steps"),
])
def test_bad_schedule_arguments(kwargs, named):
    with pytest.raises(ValueError, match=named):
        lr_at(**{"step": 0, "lr": 1e-3, "min_lr": 1e-4, "warmup": 10, "steps": 100, **kwargs})


# -- clipping ---------------------------------------------------------------------------------

def test_clipping_by_hand():
    grads = {"a": np.array([3.0, 0.0], np.float32), "b": np.array([[0.0], [4.0]], np.float32)}
    assert clip_grad_norm(grads, 10.0) == pytest.approx(5.0)  # below: unchanged
    np.testing.assert_array_equal(grads["a"], [3.0, 0.0])
    assert clip_grad_norm(grads, 1.0) == pytest.approx(5.0)
    np.testing.assert_allclose(grads["a"], [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(grads["b"], [[0.0], [0.8]], rtol=1e-6)
    grads["a"][0] = np.nan
    with pytest.raises(ValueError, match="'a'.*NaN"):
        clip_grad_norm(grads, 1.0)
    with pytest.raises(ValueError, match="max_norm"):
        clip_grad_norm({"a": np.ones(2, np.float32)}, -1.0)


@pytest.mark.reference
@pytest.mark.parametrize("max_norm", [0.1, 1.0, 1e6])
def test_clipping_equals_torch(max_norm):
    need_torch()
    rng = np.random.default_rng(4)
    shapes = {"w": (30, 20), "f": (20, 30), "n": (20,)}
    grads = {name: (rng.standard_normal(shape) * 0.3).astype(np.float32)
             for name, shape in shapes.items()}
    grads["f"] = np.asfortranarray(grads["f"])  # as glassllm lays out Linear weights
    params = {name: torch.zeros(shape, requires_grad=True) for name, shape in shapes.items()}
    for name, p in params.items():
        p.grad = torch.from_numpy(grads[name].copy())
    expected = float(torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm))
    assert clip_grad_norm(grads, max_norm) == pytest.approx(expected, rel=1e-6)
    for name, p in params.items():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-6, atol=1e-9)


# -- llm.c's test_gpt2: whole training steps against PyTorch ----------------------------------

@pytest.mark.reference
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_ten_training_steps_equal_transformers_and_torch_adamw(tied):
    # glassllm's own gradients and AdamW against autograd through transformers' Llama and
    # torch.optim.AdamW, from the same weights on the same batch: every loss and, at the
    # end, every weight agree
    need_torch()
    torch.set_num_threads(1)
    model = GlassLM(Config(vocab_size=96, d_model=48, n_layers=2, n_heads=6, n_kv_heads=2,
                           max_len=24, tie_word_embeddings=tied, seed=7))
    twin = torch_twin(model)
    settings = dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    ours = AdamW(model, **settings)
    theirs = torch.optim.AdamW(twin.parameters(), **settings)
    rows = np.random.default_rng(5).integers(0, 96, (4, 17))  # llm.c: one batch, ten steps
    losses, expected = [], []
    for _ in range(10):
        loss, grads = model.gradients(rows[:, :-1], rows[:, 1:])
        ours.step(grads)
        losses.append(loss)
        expected.append(torch_gradients(twin, rows)[0])
        theirs.step()
    np.testing.assert_allclose(losses, expected, atol=1e-4, rtol=0)
    assert losses[-1] < losses[0] - 1  # it learned the batch
    assert_same_weights(model, twin, atol=1e-4)
