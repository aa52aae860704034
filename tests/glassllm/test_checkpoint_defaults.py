"""A config.json that leaves keys out, or gives RoPE's base twice, means in glassllm what it
means in transformers: each folder here loads in both with the same logits (issue 17)."""

import json

import numpy as np
import pytest

from glassllm import GlassLM
from glassllm.checkpoint import CONFIG_NAME, LLAMA_DEFAULTS
from tests.conftest import require_or_skip

try:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as error:  # pragma: no cover - depends on the machine
    torch = None
    IMPORT_ERROR = error

pytestmark = pytest.mark.reference
TOKENS = [5, 17, 3, 60, 2, 44, 9, 31, 7, 12]


@pytest.fixture(autouse=True)
def reference_available():
    require_or_skip(torch is not None,
                    f"torch and transformers are needed to compare with Hugging Face: "
                    f"{IMPORT_ERROR if torch is None else ''}", "GLASSLLM_REQUIRE_REFERENCE")


def test_the_defaults_are_llama_configs():
    config = LlamaConfig()
    for key, default in LLAMA_DEFAULTS.items():
        if default is None:  # derived from other keys: head_dim, num_key_value_heads
            continue
        given = config.rope_parameters["rope_theta"] if key == "rope_theta" else getattr(config, key)
        assert given == default, key


def saved_twin(folder, **fields):
    """A random LlamaForCausalLM saved by transformers itself, with a small vocabulary."""
    torch.manual_seed(0)
    shape = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)
    LlamaForCausalLM(LlamaConfig(**{**shape, **fields})).save_pretrained(folder)


def edited(folder, edit):
    path = folder / CONFIG_NAME
    hf = json.loads(path.read_text())
    edit(hf)
    path.write_text(json.dumps(hf))


def drop(*keys):
    def edit(hf):
        for key in keys:
            hf.pop(key, None)
    return edit


def rope(top=None, parameters=None, scaling=None):
    def edit(hf):
        hf.pop("rope_parameters", None)
        for key, value in (("rope_theta", top), ("rope_parameters", parameters),
                           ("rope_scaling", scaling)):
            if value is not None:
                hf[key] = value
    return edit


FOLDERS = {
    # a key left out is LlamaConfig's default
    "no-rms_norm_eps": (dict(rms_norm_eps=1e-6), drop("rms_norm_eps")),
    "no-intermediate_size": (dict(intermediate_size=11008), drop("intermediate_size")),
    "no-num_key_value_heads": (dict(num_key_value_heads=4), drop("num_key_value_heads")),
    "no-head_dim": ({}, drop("head_dim")),
    "no-tie_word_embeddings": ({}, drop("tie_word_embeddings")),
    "no-rope-at-all": ({}, rope()),
    # RoPE's base: transformers 4 wrote rope_theta, transformers 5 writes rope_parameters
    "rope_theta-only": ({}, rope(top=500.0)),
    "rope_parameters-only": ({}, rope(parameters={"rope_type": "default", "rope_theta": 50.0})),
    "both-disagreeing": ({}, rope(top=500000.0,
                                  parameters={"rope_type": "default", "rope_theta": 50.0})),
    "rope_parameters-without-theta": ({}, rope(top=300.0,
                                               parameters={"rope_type": "default"})),
    "rope_scaling-default-over-parameters": ({}, rope(
        parameters={"rope_type": "default", "rope_theta": 50.0},
        scaling={"rope_type": "default", "rope_theta": 7.0})),
}


@pytest.mark.parametrize("name", FOLDERS)
def test_each_folder_loads_with_the_logits_transformers_gives(tmp_path, name):
    fields, edit = FOLDERS[name]
    saved_twin(tmp_path, **fields)
    edited(tmp_path, edit)
    twin = LlamaForCausalLM.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        expected = twin(torch.tensor([TOKENS])).logits[0].numpy()
    model = GlassLM.from_pretrained(tmp_path)
    np.testing.assert_allclose(model.forward(TOKENS), expected, atol=1e-4, rtol=0)
    assert model.config.rope_theta == twin.config.rope_parameters["rope_theta"]
    assert model.config.norm_eps == twin.config.rms_norm_eps
