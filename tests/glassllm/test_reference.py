"""GlassLM against an independent implementation: Hugging Face's LlamaForCausalLM in PyTorch,
loaded with our ``state_dict()``. Equal logits mean our RMSNorm, RoPE layout, grouped-query
attention, SwiGLU and parameter naming all agree with the reference."""

import numpy as np
import pytest

from glassllm import Config, GlassLM, Tracer
from tests.conftest import require_or_skip

try:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as error:  # pragma: no cover - depends on the machine
    torch = None
    IMPORT_ERROR = error

pytestmark = pytest.mark.reference


def require_reference() -> None:
    """Skip without torch and transformers, unless GLASSLLM_REQUIRE_REFERENCE=1 demands them."""
    require_or_skip(torch is not None,
                    f"torch and transformers are needed for the reference test "
                    f"(pip install torch==2.13.0 transformers): "
                    f"{IMPORT_ERROR if torch is None else ''}", "GLASSLLM_REQUIRE_REFERENCE")


@pytest.fixture(autouse=True)
def reference_available():
    require_reference()


def hugging_face_twin(model: GlassLM):
    c = model.config
    hf_config = LlamaConfig(
        vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.d_ff,
        num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_kv_heads, max_position_embeddings=c.max_len,
        rms_norm_eps=c.norm_eps, rope_theta=c.rope_theta, hidden_act="silu",
        attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
        attn_implementation="eager")
    twin = LlamaForCausalLM(hf_config).eval()
    state = {name: torch.from_numpy(value) for name, value in model.state_dict().items()}
    twin.load_state_dict(state, strict=True)
    return twin


CONFIGS = [
    dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=4, max_len=16),
    dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=16),
    dict(vocab_size=256, d_model=48, n_layers=3, n_heads=6, n_kv_heads=1, max_len=24, seed=4),
    dict(vocab_size=97, d_model=64, n_layers=1, n_heads=8, n_kv_heads=2, max_len=32,
         d_ff=100, rope_theta=500000.0, norm_eps=1e-6, seed=9),
]


@pytest.mark.parametrize("fields", CONFIGS, ids=lambda f: "d{d_model}-L{n_layers}-H{n_heads}-KV{n_kv_heads}".format(**f))
def test_logits_equal_hugging_face_llama(fields):
    model = GlassLM(Config(**fields))
    twin = hugging_face_twin(model)
    tokens = np.random.default_rng(0).integers(0, fields["vocab_size"], fields["max_len"])
    with torch.no_grad():
        expected = twin(torch.tensor(tokens[None])).logits[0].numpy()
    np.testing.assert_allclose(model.forward(tokens), expected, atol=1e-4, rtol=0)


def test_attention_weights_and_hidden_states_equal_hugging_face():
    model = GlassLM(Config(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2,
                           max_len=10, seed=2))
    twin = hugging_face_twin(model)
    tokens = [5, 7, 11, 13, 17, 19]
    with torch.no_grad():
        out = twin(torch.tensor([tokens]), output_attentions=True, output_hidden_states=True)
    trace = Tracer()
    model.forward(tokens, trace)
    for layer in range(2):
        np.testing.assert_allclose(trace.get("attn.softmax", layer=layer).value,
                                   out.attentions[layer][0].numpy(), atol=1e-5)
    # hidden_states: the embeddings, the stream after each block but the last, and then the
    # last block's output already passed through the final norm
    np.testing.assert_allclose(trace.get("embed").value, out.hidden_states[0][0].numpy())
    np.testing.assert_allclose(trace.get("mlp.residual", layer=0).value,
                               out.hidden_states[1][0].numpy(), atol=1e-4)
    np.testing.assert_allclose(trace.get("final_norm").value,
                               out.hidden_states[2][0].numpy(), atol=1e-4)


def test_loss_and_its_gradient_equal_pytorch():
    model = GlassLM(Config(vocab_size=64, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2,
                           max_len=8, seed=3))
    tokens, targets = [1, 2, 3, 4, 5], [2, 3, 4, 5, 6]
    trace = Tracer()
    loss = model.loss(tokens, targets, trace)
    logits = torch.tensor(trace.get("logits").value, requires_grad=True)
    reference = torch.nn.functional.cross_entropy(logits, torch.tensor(targets))
    reference.backward()
    assert loss == pytest.approx(reference.item(), abs=1e-5)
    np.testing.assert_allclose(trace.get("loss.grad").value, logits.grad.numpy(), atol=1e-6)


CHECKPOINT_CONFIGS = CONFIGS + [
    dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=16, seed=5,
         tie_word_embeddings=True),
]


def hugging_face_logits(folder, tokens):
    twin = LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        return twin(torch.tensor(np.asarray(tokens)[None])).logits[0].numpy()


@pytest.mark.parametrize("fields", CHECKPOINT_CONFIGS,
                         ids=lambda f: "d{d_model}-KV{n_kv_heads}".format(**f)
                         + ("-tied" if f.get("tie_word_embeddings") else ""))
def test_saved_checkpoint_loads_in_transformers_with_our_logits(tmp_path, fields):
    model = GlassLM(Config(**fields))
    model.save_pretrained(tmp_path)
    tokens = np.random.default_rng(1).integers(0, fields["vocab_size"], fields["max_len"])
    np.testing.assert_allclose(model.forward(tokens), hugging_face_logits(tmp_path, tokens),
                               atol=1e-4, rtol=0)


def test_checkpoint_saved_by_transformers_loads_in_glassllm(tmp_path):
    """The other direction: transformers 5 writes rope_parameters, dtype and extra files."""
    hf_config = LlamaConfig(vocab_size=96, hidden_size=48, intermediate_size=128,
                            num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
                            max_position_embeddings=20, rms_norm_eps=1e-6, rope_theta=30000.0,
                            tie_word_embeddings=True)
    torch.manual_seed(0)
    LlamaForCausalLM(hf_config).save_pretrained(tmp_path)
    model = GlassLM.from_pretrained(tmp_path)
    assert (model.config.n_kv_heads, model.config.rope_theta) == (2, 30000.0)
    tokens = list(range(0, 96, 5))
    np.testing.assert_allclose(model.forward(tokens), hugging_face_logits(tmp_path, tokens),
                               atol=1e-4, rtol=0)
