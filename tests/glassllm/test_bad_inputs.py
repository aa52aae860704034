"""Inputs that once gave silent wrong results or raw tracebacks (issue 26): each is now a
clear error naming what to change, checked before anything runs or is allocated."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

import glassllm.model
from glassllm import Config, GlassLM, Tracer, decode
from glassllm.edits import Patch
from glassllm.checkpoint import config_from_hf, config_to_hf

SMALL = dict(vocab_size=256, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=32)


# -- Config: values the float32 engine cannot compute with -----------------------------------

@pytest.mark.parametrize("theta", [1e-50, 1e-300, 5e-324])
def test_a_rope_theta_float32_rounds_to_zero_is_refused_as_from_pretrained_does(theta):
    with pytest.raises(ValueError, match="Config.rope_theta") as error:
        Config(**SMALL, rope_theta=theta)
    assert "rounds to 0" in str(error.value)
    # the same value in a config.json is refused by the same rule, in its key's name
    with pytest.raises(ValueError, match="rope_theta is .* rounds to 0"):
        config_from_hf({**config_to_hf(Config(**SMALL)), "rope_theta": theta})


def test_a_rope_theta_whose_angles_overflow_float32_is_refused(monkeypatch):
    # float32 holds 1e-44 (a subnormal), but 1 / 1e-44 ** (126/128) is beyond float32:
    # the angles, then cos and sin, would be inf and NaN, and so every logit
    config = Config(**dict(SMALL, d_model=512, n_heads=4), rope_theta=1e-44)
    with pytest.raises(ValueError, match="Config.rope_theta is 1e-44"):
        GlassLM(config)
    with monkeypatch.context() as patched, np.errstate(all="ignore"):
        patched.setattr(glassllm.model, "check_runnable", lambda config: None)
        assert np.isnan(GlassLM(config).forward([1, 2, 3])).all()  # what the check prevents
    # a small base whose angles float32 holds still runs, finite
    logits = GlassLM(Config(**SMALL, rope_theta=1e-30)).forward([1, 2, 3])
    assert np.isfinite(logits).all()


@pytest.mark.parametrize("name, value", [("rope_theta", 1e39), ("rope_theta", 10**400),
                                         ("norm_eps", 1e300)],
                         ids=["theta-1e39", "theta-400-digits", "eps-1e300"])
def test_numbers_beyond_float32_are_refused_naming_the_field(name, value):
    with pytest.raises(ValueError, match=f"Config.{name} .*beyond float32's range"):
        Config(**SMALL, **{name: value})


# -- sizes: refused before anything is allocated ----------------------------------------------

@pytest.mark.parametrize("fields, name", [
    (dict(n_layers=10**12), "n_layers"), (dict(vocab_size=10**13), "vocab_size"),
    (dict(d_ff=10**13), "d_ff"), (dict(d_model=2**22, n_heads=2**10, n_kv_heads=2**10), "d_model"),
], ids=["layers", "vocab", "d_ff", "d_model"])
def test_a_model_bigger_than_memory_is_refused_before_allocating(fields, name):
    # each of these needs terabytes; allocating them would run until memory runs out
    config = Config(**{**SMALL, **fields})
    with pytest.raises(ValueError, match=rf"parameters.*memory.*lower Config\.{name} "):
        GlassLM(config)


def test_the_memory_limit_counts_exactly_the_parameters_a_model_holds():
    from glassllm.config import parameter_count
    from glassllm.model import check_runnable
    for tied in (False, True):
        config = Config(**SMALL, tie_word_embeddings=tied)
        held = sum(v.size for v in GlassLM(config).state_dict().values())
        assert parameter_count(config) == held
        check_runnable(config, memory=4 * held)  # exactly fits
        with pytest.raises(ValueError, match=f"{held:,} parameters"):
            check_runnable(config, memory=4 * held - 1)


@pytest.mark.parametrize("name", ["vocab_size", "d_model", "n_layers", "max_len", "d_ff"])
def test_a_size_beyond_any_array_is_a_value_error_naming_the_field(name):
    fields = {**SMALL, name: 10**30}
    if name == "d_model":
        fields.update(n_heads=2, n_kv_heads=2)
    with pytest.raises(ValueError, match=f"Config.{name} is {10**30}, larger than any array"):
        Config(**fields)


# -- edits: a source the float32 engine would turn into inf ----------------------------------

@pytest.mark.parametrize("value", [1e40, -1e40, np.float64(3.5e38)])
def test_a_patch_source_beyond_float32_is_refused_like_nan(value):
    tokens = [72, 105, 33]
    source = np.full((3, SMALL["d_model"]), value)
    assert np.isfinite(source).all()  # finite in float64: only float32 overflows
    with pytest.raises(ValueError, match="NaN or infinite values in float32"):
        Patch("embed", source)


def test_a_mask_patch_may_still_say_minus_infinity_in_any_width():
    model = GlassLM(Config(**SMALL))
    trace = Tracer()
    model.forward([72, 105, 33], trace)
    mask = trace.get("attn.mask", layer=0).value.astype(np.float64)
    wide = np.where(np.isinf(mask), -1e40, mask)  # -inf in float32, as the causal mask holds
    patched = model.forward([72, 105, 33], edit=Patch("attn.mask", wide, layer=0))
    np.testing.assert_array_equal(patched, model.forward([72, 105, 33]))


# -- tokens: containers without an order of their own ---------------------------------------

UNORDERED = {"dict": {72: "x"}, "set": {1, 2}, "frozenset": frozenset({3, 4}),
             "keys": {1: 0, 2: 0}.keys(), "values": {"a": 1, "b": 2}.values(),
             "items": {1: 2}.items()}


def _calls(model):
    """Every public entry that takes token IDs, with the container in one argument."""
    from glassllm import circuits, probes
    from glassllm.recording import record_generation, record_loss
    return {
        "forward": lambda t: model.forward(t),
        "loss tokens": lambda t: model.loss(t, [1, 2]),
        "loss targets": lambda t: model.loss([1, 2], t),
        "generate prompt": lambda t: model.generate(t, 1),
        "record_generation": lambda t: record_generation(model, t, 1),
        "record_loss": lambda t: record_loss(model, t),
        "previous_token_scores": lambda t: probes.previous_token_scores(model, t),
        "induction_scores": lambda t: probes.induction_scores(model, t, 2),
        "copy_losses": lambda t: probes.copy_losses(model, t, 2),
        "logit_lens": lambda t: circuits.logit_lens(model, t),
    }


@pytest.mark.parametrize("kind", UNORDERED)
def test_unordered_containers_of_tokens_are_refused_wherever_tokens_are_taken(kind):
    model = GlassLM(Config(**SMALL))
    for name, call in _calls(model).items():
        with pytest.raises(ValueError, match="does not keep the tokens' order") as error:
            call(UNORDERED[kind])
        assert type(UNORDERED[kind]).__name__ in str(error.value), name


def test_ordered_sequences_of_the_same_tokens_still_run():
    model = GlassLM(Config(**SMALL))
    expected = model.forward([1, 2])
    for tokens in ([1, 2], (1, 2), np.array([1, 2]), range(1, 3), iter([1, 2])):
        np.testing.assert_array_equal(model.forward(tokens), expected)


@pytest.mark.parametrize("tokens", [None, 12, 1.5, {104, 105}, {104: 105}, np.array(104)],
                         ids=["None", "int", "float", "set", "dict", "0-d array"])
def test_decode_refuses_what_is_no_sequence_of_tokens_as_encode_does(tokens):
    with pytest.raises(ValueError, match="decode\\(\\) takes a sequence of byte token IDs"):
        decode(tokens)


def test_decode_still_reads_every_kind_of_sequence():
    for tokens in ([104, 105], (104, 105), np.array([104, 105]), b"hi", iter([104, 105])):
        assert decode(tokens) == "hi"


# -- checkpoint paths --------------------------------------------------------------------------

@pytest.mark.parametrize("path", [None, 123, b"model", ["model"]], ids=["None", "int", "bytes", "list"])
def test_a_checkpoint_path_that_is_no_path_is_a_clear_type_error(path, tmp_path):
    model = GlassLM(Config(**SMALL))
    for call, what in ((GlassLM.from_pretrained, "from_pretrained"),
                       (model.save_pretrained, "save_pretrained")):
        with pytest.raises(TypeError, match=f"{what} takes a folder's path, as a str or "
                                            f"pathlib.Path, got {type(path).__name__}"):
            call(path)


def test_saving_inside_a_file_names_the_file_in_the_way(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=f"{tmp_path / 'notes.txt'} is a file") as error:
        GlassLM(Config(**SMALL)).save_pretrained(tmp_path / "notes.txt" / "sub" / "model")
    assert not isinstance(error.value, FileExistsError)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_read_only_parent_is_named_not_the_hidden_temporary_folder(tmp_path, monkeypatch):
    pytest.importorskip("safetensors")  # Pyodide has none: save_pretrained refuses first
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o555)
    if os.geteuid() == 0:  # root writes anyway: the kernel's refusal as anyone else meets it
        mkdir = os.mkdir

        def refused(path, *args, **kwargs):
            if Path(path).parent == parent:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return mkdir(path, *args, **kwargs)
        monkeypatch.setattr(os, "mkdir", refused)
    try:
        with pytest.raises(PermissionError) as error:
            GlassLM(Config(**SMALL)).save_pretrained(parent / "model")
    finally:
        parent.chmod(0o755)
    message = str(error.value)
    assert f"the folder {parent} is not writable" in message and ".new" not in message
    assert error.value.filename == str(parent)
    assert list(parent.iterdir()) == []
