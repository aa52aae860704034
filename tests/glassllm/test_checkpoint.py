"""Checkpoints in Hugging Face's layout: round trips, every refusal, and nothing half-done."""

import dataclasses
import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from glassllm import Config, GlassLM
from glassllm.checkpoint import CONFIG_NAME, WEIGHTS_NAME, config_from_hf, config_to_hf

SMALL = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=16, seed=3)
TOKENS = np.arange(12) % 64


def saved(tmp_path, **fields):
    model = GlassLM(Config(**{**SMALL, **fields}))
    model.save_pretrained(tmp_path)
    return model


def edit_config(folder, **changes):
    path = folder / CONFIG_NAME
    hf = json.loads(path.read_text())
    for key, value in changes.items():
        if value is KeyError:
            hf.pop(key, None)
        else:
            hf[key] = value
    path.write_text(json.dumps(hf))


def edit_tensors(folder, edit):
    tensors = load_file(folder / WEIGHTS_NAME)
    edit(tensors)
    save_file(tensors, folder / WEIGHTS_NAME)


@pytest.mark.parametrize("fields", [{}, dict(tie_word_embeddings=True),
                                    dict(n_kv_heads=4, d_ff=100, rope_theta=500000.0, norm_eps=1e-6)],
                         ids=["gqa", "tied", "mha-wide"])
def test_round_trip_keeps_config_and_logits(tmp_path, fields):
    model = saved(tmp_path, **fields)
    assert sorted(p.name for p in tmp_path.iterdir()) == [CONFIG_NAME, WEIGHTS_NAME]
    again = GlassLM.from_pretrained(tmp_path)
    # the seed only chose the random weights; a checkpoint carries the weights themselves
    assert again.config == dataclasses.replace(model.config, seed=0)
    np.testing.assert_array_equal(again.forward(TOKENS), model.forward(TOKENS))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(again.state_dict()[name], value)
        assert again.state_dict()[name].dtype == np.float32


def test_tied_checkpoint_has_no_lm_head_and_shares_the_embedding(tmp_path):
    saved(tmp_path, tie_word_embeddings=True)
    assert "lm_head.weight" not in load_file(tmp_path / WEIGHTS_NAME)
    model = GlassLM.from_pretrained(tmp_path)
    assert model.lm_head is model.embed_tokens
    assert json.loads((tmp_path / CONFIG_NAME).read_text())["tie_word_embeddings"] is True


def test_config_json_is_a_llama_config():
    hf = config_to_hf(Config(**SMALL))
    assert hf["architectures"] == ["LlamaForCausalLM"] and hf["model_type"] == "llama"
    assert (hf["hidden_size"], hf["intermediate_size"], hf["num_key_value_heads"]) == (32, 88, 2)
    assert config_from_hf(hf) == Config(**{**SMALL, "seed": 0})


def test_transformers_5_rope_parameters_are_read():
    hf = {**config_to_hf(Config(**SMALL)), "rope_parameters": {"rope_theta": 500000.0,
                                                              "rope_type": "default"}}
    del hf["rope_theta"]
    assert config_from_hf(hf).rope_theta == 500000.0


def test_half_precision_files_load_as_float32(tmp_path):
    model = saved(tmp_path)
    edit_tensors(tmp_path, lambda t: t.update({k: v.astype(np.float16) for k, v in t.items()}))
    half = GlassLM.from_pretrained(tmp_path)
    assert half.embed_tokens.dtype == np.float32
    np.testing.assert_allclose(half.embed_tokens, model.embed_tokens, rtol=1e-3, atol=1e-3)


def test_a_float16_save_rounds_each_weight_and_transformers_reads_it_as_float32(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = GlassLM(Config(**SMALL))
    model.save_pretrained(tmp_path, dtype="float16")
    stored = load_file(tmp_path / WEIGHTS_NAME)
    assert {v.dtype for v in stored.values()} == {np.dtype(np.float16)}
    for name, value in model.state_dict().items():  # rounded to nearest, as NumPy does
        np.testing.assert_array_equal(stored[name], value.astype(np.float16))
    half = GlassLM.from_pretrained(tmp_path)
    assert half.embed_tokens.dtype == np.float32
    twin = transformers.LlamaForCausalLM.from_pretrained(tmp_path).eval()
    assert twin.dtype == torch.float32  # the config's dtype: it computes in float32 too
    with torch.no_grad():
        expected = twin(torch.from_numpy(TOKENS[None])).logits[0].numpy()
    np.testing.assert_allclose(half.forward(TOKENS), expected, atol=1e-5)
    half.save_pretrained(tmp_path / "again", dtype="float16")  # rounding twice changes nothing
    assert (tmp_path / "again" / WEIGHTS_NAME).read_bytes() == (tmp_path / WEIGHTS_NAME).read_bytes()


def test_a_weight_float16_cannot_hold_is_refused_naming_it_and_nothing_is_written(tmp_path):
    saved(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    model = GlassLM(Config(**SMALL))
    model.layers[1].w_down[2, 3] = 70000.0  # float16's largest is 65504: it would be inf
    with pytest.raises(ValueError, match=r"layers\.1\.mlp\.down_proj.*70000.*dtype='float32'"):
        model.save_pretrained(tmp_path, dtype="float16")
    with pytest.raises(ValueError, match="'float32' or 'float16'"):
        model.save_pretrained(tmp_path, dtype="bfloat16")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_bfloat16_file_loads_as_float32(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch
    model = saved(tmp_path)
    state = {k: torch.from_numpy(v).to(torch.bfloat16) for k, v in model.state_dict().items()}
    save_torch(state, tmp_path / WEIGHTS_NAME)
    loaded = GlassLM.from_pretrained(tmp_path)
    expected = {k: v.float().numpy() for k, v in state.items()}
    np.testing.assert_array_equal(loaded.embed_tokens, expected["model.embed_tokens.weight"])
    np.testing.assert_allclose(loaded.embed_tokens, model.embed_tokens, rtol=1e-2, atol=1e-2)


BAD_CONFIGS = [
    (dict(architectures=["MistralForCausalLM"]), "architectures"),
    (dict(model_type="gpt2"), "model_type"),
    (dict(rope_scaling={"rope_type": "llama3", "factor": 8.0}), "rope_scaling"),
    (dict(rope_parameters={"rope_type": "yarn", "rope_theta": 1e4}), "rope_parameters"),
    (dict(attention_bias=True), "attention_bias"),
    (dict(mlp_bias=True), "mlp_bias"),
    (dict(hidden_act="gelu"), "hidden_act"),
    (dict(hidden_size=KeyError), "hidden_size"),
    (dict(hidden_size=32.5), "hidden_size"),
    (dict(num_attention_heads=3), "num_attention_heads"),
    (dict(head_dim=16), "head_dim"),
    (dict(rope_theta=float("inf")), "rope_theta"),
    (dict(tie_word_embeddings="yes"), "tie_word_embeddings"),
]


@pytest.mark.parametrize("changes, key", BAD_CONFIGS, ids=[k for _, k in BAD_CONFIGS])
def test_unsupported_config_is_refused_naming_the_key(tmp_path, changes, key):
    saved(tmp_path)
    edit_config(tmp_path, **changes)
    with pytest.raises(ValueError, match=key) as error:
        GlassLM.from_pretrained(tmp_path)
    assert "config.json" in str(error.value)


def drop(name):
    return lambda t: t.pop(name)


def put(name, value):
    return lambda t: t.update({name: value})


BAD_TENSORS = [
    (drop("model.layers.1.mlp.up_proj.weight"), "model.layers.1.mlp.up_proj.weight"),
    (drop("lm_head.weight"), "tie_word_embeddings"),
    (put("model.norm.weight", np.ones(31, np.float32)), "model.norm.weight"),
    (put("model.layers.0.self_attn.q_proj.bias", np.zeros(32, np.float32)), "q_proj.bias"),
    (put("model.embed_tokens.weight", np.ones((64, 32), np.int32)), "dtype I32"),
    (put("model.norm.weight", np.full(32, np.nan, np.float32)), "NaN"),
]


@pytest.mark.parametrize("edit, key", BAD_TENSORS, ids=[k for _, k in BAD_TENSORS])
def test_bad_tensors_are_refused_naming_the_key(tmp_path, edit, key):
    saved(tmp_path)
    edit_tensors(tmp_path, edit)
    with pytest.raises(ValueError, match=key):
        GlassLM.from_pretrained(tmp_path)


def test_old_rotary_buffers_are_ignored(tmp_path):
    model = saved(tmp_path)
    edit_tensors(tmp_path, put("model.layers.0.self_attn.rotary_emb.inv_freq",
                               np.ones(4, np.float32)))
    np.testing.assert_array_equal(GlassLM.from_pretrained(tmp_path).forward(TOKENS),
                                  model.forward(TOKENS))


@pytest.mark.parametrize("problem", ["no folder", "no config", "no weights", "bad json",
                                     "not safetensors"])
def test_unreadable_checkpoints_say_what_is_wrong(tmp_path, problem):
    saved(tmp_path)
    target = tmp_path
    if problem == "no folder":
        target = tmp_path / "absent"
    elif problem == "no config":
        (tmp_path / CONFIG_NAME).unlink()
    elif problem == "no weights":
        (tmp_path / WEIGHTS_NAME).unlink()
    elif problem == "bad json":
        (tmp_path / CONFIG_NAME).write_text("{hidden_size: 32")
    else:
        (tmp_path / WEIGHTS_NAME).write_bytes(b"not a safetensors file at all")
    with pytest.raises(ValueError, match="absent|config.json|model.safetensors"):
        GlassLM.from_pretrained(target)


def test_a_failed_load_state_dict_changes_nothing():
    model = GlassLM(Config(**SMALL))
    before = model.forward(TOKENS)
    state = model.state_dict()
    state["model.norm.weight"] = np.ones(31, np.float32)
    state["model.embed_tokens.weight"] = np.zeros((64, 32), np.float32)
    with pytest.raises(ValueError, match="model.norm.weight"):
        model.load_state_dict(state)
    np.testing.assert_array_equal(model.forward(TOKENS), before)


def test_save_leaves_no_partial_file_when_writing_fails(tmp_path, monkeypatch):
    import glassllm.checkpoint as checkpoint
    saved(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def broken_write(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr("safetensors.numpy.save_file", broken_write)
    with pytest.raises(OSError, match="disk full"):
        model = GlassLM(Config(**{**SMALL, "seed": 5}))
        checkpoint.write_checkpoint(tmp_path, model.config, model.state_dict())
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_save_into_a_file_is_refused(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        GlassLM(Config(**SMALL)).save_pretrained(target)


def test_saved_files_are_readable_by_others_as_the_umask_allows(tmp_path):
    import os
    mask = os.umask(0o022)
    try:
        saved(tmp_path)
    finally:
        os.umask(mask)
    for name in (CONFIG_NAME, WEIGHTS_NAME):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644
