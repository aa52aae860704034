"""Checkpoints in Hugging Face's layout: ``config.json`` of a ``LlamaForCausalLM`` and
``model.safetensors``, so the same directory loads in glassllm and in ``transformers``.

    config, state = read_checkpoint("path/to/dir")   # GlassLM.from_pretrained; no torch
    write_checkpoint("out", config, state)           # GlassLM.save_pretrained
    write_checkpoint("out", config, state, dtype="float16")  # half the bytes, rounded

This module reads and writes a ``Config`` and a state dict; it knows the layout of a
``LlamaForCausalLM``, not the model that runs it.

Reading checks everything before it allocates anything. ``config.json`` is read only as a
regular file of bounded size and parsed with bounded nesting; a key glassllm cannot run
(another architecture, RoPE scaling, biases, a number no float32 holds) is a ``ValueError``
naming it, and a key left out takes ``LlamaConfig``'s default, as in ``transformers``. Then
the weights' header is compared with what that config needs, tensor by tensor, and a
mismatch names the config key it comes from (``num_hidden_layers: 10000000`` beside a file
of 2 blocks is refused at once). Only then are the tensors read, one at a time; float16 and
bfloat16 ones load as float32, the engine's only dtype.

Writing is atomic as a whole: both files go into a new folder beside the target, which
then trades places with it (``glassllm._folder_swap``). After any interruption the folder
holds the old model or the new one, never new weights with an old config.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np

from . import safe_json
from ._folder_swap import finish_interrupted, replace_files
from ..config import MAX_SIZE, Config, float32_problem
from .regular_file import read_bounded
from .safetensors_reader import FLOAT_DTYPES, SafetensorsFile

CONFIG_NAME = "config.json"
STORED_DTYPES = ("float32", "float16")  # what write_checkpoint stores; it reads bfloat16 too
FLOAT16_MAX = float(np.finfo(np.float16).max)  # 65504; a larger float32 rounds to inf
WEIGHTS_NAME = "model.safetensors"
ARCHITECTURE = "LlamaForCausalLM"
SUPPORTED = ("a LlamaForCausalLM with SiLU SwiGLU MLPs, no biases, plain RoPE (no rope_scaling) "
             "and float32/float16/bfloat16 weights")
# A Llama config.json takes a few kilobytes; nesting 4 levels, numbers of 20 characters
MAX_CONFIG_BYTES = 1_000_000
_CONFIG_DEPTH = 32
_CONFIG_NUMBER_CHARS = 64

# LlamaConfig's default for each key a config.json may leave out (transformers 5; None: derived)
LLAMA_DEFAULTS = {
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    "rope_theta": 10000.0, "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
    "head_dim": None,
}
# config.json key -> Config field
_FIELD = {"vocab_size": "vocab_size", "hidden_size": "d_model", "intermediate_size": "d_ff",
          "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
          "num_key_value_heads": "n_kv_heads", "max_position_embeddings": "max_len",
          "rms_norm_eps": "norm_eps", "tie_word_embeddings": "tie_word_embeddings",
          "rope_theta": "rope_theta"}
# Buffers older transformers versions saved; glassllm derives them from rope_theta.
_DERIVED_SUFFIX = ".self_attn.rotary_emb.inv_freq"
_BLOCK = re.compile(r"model\.layers\.(0|[1-9][0-9]*)\.")


# -- the folder: (config, state) in, (config, state) out ----------------------------------

def read_checkpoint(path) -> tuple[Config, dict[str, np.ndarray]]:
    """The ``Config`` and float32 state dict (Hugging Face names) of a checkpoint folder;
    ``ValueError`` for anything glassllm cannot load, before any tensor is allocated."""
    folder = folder_path(path, "from_pretrained")
    finish_interrupted(folder, (CONFIG_NAME, WEIGHTS_NAME))
    hf = read_config_json(folder)
    config = config_from_hf(hf, str(folder / CONFIG_NAME))
    weights = folder / WEIGHTS_NAME
    with SafetensorsFile(weights) as file:
        names = check_tensors(file, config, hf, str(folder / CONFIG_NAME))
        state = {}
        for name in names:
            array = file.read_float32(name)
            if not np.isfinite(array).all():
                raise ValueError(f"{weights}: tensor {name!r} holds NaN or infinite values")
            state[name] = array
    return config, state


def read_config(folder) -> Config:
    """The ``Config`` of a checkpoint folder's ``config.json``, without its weights."""
    folder = folder_path(folder, "read_config")
    return config_from_hf(read_config_json(folder), str(folder / CONFIG_NAME))


def read_config_json(folder: Path) -> dict:
    """``config.json`` as a dict: a regular file of at most ``MAX_CONFIG_BYTES``, nested at
    most ``_CONFIG_DEPTH`` levels; ``ValueError`` saying what it is otherwise."""
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a directory; from_pretrained takes a local folder "
                         f"holding {CONFIG_NAME} and {WEIGHTS_NAME} (Hugging Face's layout)")
    path = folder / CONFIG_NAME
    data = read_bounded(path, MAX_CONFIG_BYTES, f"a checkpoint folder holds {CONFIG_NAME} and "
                                               f"{WEIGHTS_NAME} (save one with "
                                               f"GlassLM.save_pretrained)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text: {error}") from None
    try:
        # NaN and Infinity as Python's json (and so transformers) reads them, to be
        # refused below naming their key
        hf = safe_json.loads(text, str(path), _CONFIG_DEPTH, _CONFIG_NUMBER_CHARS,
                             "a model config", constants=True)
    except safe_json.NotJSON as error:
        raise ValueError(f"{path} is {error}") from None
    if not isinstance(hf, dict):
        raise ValueError(f"{path}: must hold a JSON object (a LlamaForCausalLM config)")
    return hf


def write_checkpoint(path, config: Config, state: dict[str, np.ndarray],
                     dtype: str = "float32") -> None:
    """Write ``config.json`` and ``model.safetensors`` into folder ``path`` (created if
    needed; its other files stay), atomically as a whole.

    ``dtype="float16"`` stores each weight rounded to the nearest float16 (half the bytes;
    a relative change of at most 2**-11 for normal values): a weight beyond float16's range
    is a ``ValueError`` naming its tensor, never an infinity. The config still says float32,
    the dtype glassllm (and ``transformers``, by the config) computes in after reading."""
    if dtype not in STORED_DTYPES:
        raise ValueError(f"dtype={dtype!r}: save_pretrained writes "
                         f"{' or '.join(map(repr, STORED_DTYPES))}")
    folder = folder_path(path, "save_pretrained")
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} exists and is not a directory; save_pretrained writes a folder")
    for parent in folder.parents:  # the nearest that exists must be a folder to create in
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{parent} is a file, so save_pretrained cannot create the "
                                 f"folder {folder} inside it; give a path beside it")
            break
    try:
        from safetensors.numpy import save_file
    except ImportError:
        raise ImportError("save_pretrained writes model.safetensors with the safetensors "
                          "package: pip install safetensors") from None
    tensors = {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in state.items()}
    if dtype == "float16":
        tensors = {name: _float16(name, value) for name, value in tensors.items()}
    text = json.dumps(config_to_hf(config), indent=2, sort_keys=True) + "\n"

    def write(new: Path) -> None:
        save_file(tensors, str(new / WEIGHTS_NAME), metadata={"format": "pt"})
        (new / CONFIG_NAME).write_text(text, encoding="utf-8")

    replace_files(folder, write, (CONFIG_NAME, WEIGHTS_NAME))


def _float16(name: str, value: np.ndarray) -> np.ndarray:
    """``value`` rounded to float16, refused (naming ``name``) where it would overflow."""
    largest = float(np.max(np.abs(value), initial=0.0))
    if not largest <= FLOAT16_MAX:  # NaN fails this too
        raise ValueError(f"{name}: a weight of magnitude {largest:g} has no float16 "
                         f"(largest {FLOAT16_MAX:g}); save it with dtype='float32'")
    return value.astype(np.float16)


def folder_path(path, what: str) -> Path:
    """``path`` (a str or ``os.PathLike``) as a ``Path``; ``TypeError`` for anything else."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"{what} takes a folder's path, as a str or pathlib.Path, got "
                        f"{type(path).__name__}")
    if not path:
        raise ValueError(f"{what} takes a folder's path, got an empty string; use '.' for "
                         f"the working folder")
    return Path(path)


# -- config.json <-> Config -------------------------------------------------------------------

def config_to_hf(config: Config) -> dict:
    """The ``LlamaForCausalLM`` config of a glassllm ``Config``."""
    return {
        "architectures": [ARCHITECTURE], "model_type": "llama",
        "vocab_size": config.vocab_size, "hidden_size": config.d_model,
        "intermediate_size": config.d_ff, "num_hidden_layers": config.n_layers,
        "num_attention_heads": config.n_heads, "num_key_value_heads": config.n_kv_heads,
        "head_dim": config.head_dim, "max_position_embeddings": config.max_len,
        "rms_norm_eps": config.norm_eps, "rope_theta": config.rope_theta, "rope_scaling": None,
        "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
        "tie_word_embeddings": config.tie_word_embeddings, "torch_dtype": "float32",
    }


def config_from_hf(hf: dict, source: str = CONFIG_NAME) -> Config:
    """A glassllm ``Config`` from a ``LlamaForCausalLM`` config; ValueError naming the key
    for anything glassllm cannot represent. A key left out (or null) takes LlamaConfig's
    default, as in ``transformers``."""
    def refuse(key: str, why: str):
        return ValueError(f"{source}: {key} {why}; glassllm runs {SUPPORTED}")

    if not isinstance(hf, dict):
        raise ValueError(f"{source}: must hold a JSON object (a LlamaForCausalLM config)")
    architectures = hf.get("architectures") or [ARCHITECTURE]
    if architectures != [ARCHITECTURE]:
        raise refuse("architectures", f"is {_short(architectures)}, not [{ARCHITECTURE!r}]")
    for key, expected in (("model_type", "llama"), ("hidden_act", "silu")):
        if hf.get(key, expected) not in (None, expected):
            raise refuse(key, f"is {_short(hf[key])}, not {expected!r}")
    for key in ("attention_bias", "mlp_bias"):
        if hf.get(key) not in (None, False):  # null means false, as in transformers 4
            raise refuse(key, "is set: glassllm's linear layers have no biases")
    if hf.get("transformers_weights") not in (None, WEIGHTS_NAME):
        raise refuse("transformers_weights", f"is {_short(hf['transformers_weights'])}: "
                                             f"transformers would load that file, glassllm "
                                             f"reads {WEIGHTS_NAME}")
    fields = {}
    for key, name in _FIELD.items():
        if key == "rope_theta":
            continue
        value = hf.get(key)
        if value is None:
            value = LLAMA_DEFAULTS[key]
            if value is None:  # num_key_value_heads: as many as the query heads
                continue
        if name == "tie_word_embeddings":
            ok, kind = isinstance(value, bool), "true or false"
        elif name == "norm_eps":
            ok, kind = _is_number(value), "a number"
        else:
            ok, kind = _is_int(value), "an integer"
        if not ok:
            raise refuse(key, f"is {_short(value)}, not {kind}")
        if kind == "an integer" and value > MAX_SIZE:
            raise refuse(key, f"is {_short(value)}, larger than any array (2**63 - 1)")
        if name == "norm_eps":
            value = _float32_number(key, value, refuse)
        fields[name] = value
    fields.setdefault("n_kv_heads", fields["n_heads"])
    fields["rope_theta"] = _rope_theta(hf, refuse)
    head_dim = hf.get("head_dim")
    if head_dim is not None and (not _is_int(head_dim) or (
            fields["n_heads"] > 0 and head_dim * fields["n_heads"] != fields["d_model"])):
        raise refuse("head_dim", f"is {_short(head_dim)}, but glassllm's head width is "
                                 f"hidden_size / num_attention_heads"
                                 + (f" = {fields['d_model'] / fields['n_heads']:g}"
                                    if fields["n_heads"] > 0 else ""))
    try:
        return Config(**fields)
    except ValueError as error:  # say it in config.json's words, not Config's
        message = str(error)
        for key, name in _FIELD.items():
            message = message.replace(f"Config.{name}", key)
        raise ValueError(f"{source}: {message}") from None


def _rope_theta(hf: dict, refuse) -> float:
    """RoPE's base as transformers 5 reads it: ``rope_parameters`` (replaced by
    ``rope_scaling`` when that is set) and its ``rope_theta`` first, then the top-level
    ``rope_theta`` of transformers 4, then 10000."""
    for key in ("rope_scaling", "rope_parameters"):
        params = hf.get(key)
        if params is not None and not isinstance(params, dict):
            raise refuse(key, f"is {_short(params)}, not an object")
    key = "rope_scaling" if hf.get("rope_scaling") else "rope_parameters"
    params = hf.get(key) or {}
    kind = params.get("rope_type", params.get("type", "default"))
    if kind != "default":
        raise refuse(key, f"asks for rope_type {_short(kind)}: only plain RoPE ('default') "
                          f"is supported")
    if params.get("rope_theta") is not None:
        key, theta = f"{key}.rope_theta", params["rope_theta"]
    elif hf.get("rope_theta") is not None:
        key, theta = "rope_theta", hf["rope_theta"]
    else:
        return LLAMA_DEFAULTS["rope_theta"]
    if not _is_number(theta):
        raise refuse(key, f"is {_short(theta)}, not a number")
    return _float32_number(key, theta, refuse, nonzero=True)


def _float32_number(key: str, value, refuse, nonzero: bool = False) -> float:
    """A positive number as a float that float32 holds too (finite; with ``nonzero``, not
    rounded to 0), or a refusal: Config's rule, said in config.json's words."""
    problem = float32_problem(value, nonzero)
    if problem:
        raise refuse(key, problem)
    return float(value)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters: a config may hold values of any size."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


# -- the weights: what a LlamaForCausalLM of a config holds ----------------------------------

def tensor_shapes(config: Config) -> dict[str, tuple[tuple[int, str], ...]]:
    """Every tensor of a ``LlamaForCausalLM`` of ``config``, in the order a model runs
    them: name -> its dimensions, each with the config.json key it comes from."""
    width = (config.d_model, "hidden_size")
    vocab = (config.vocab_size, "vocab_size")
    mlp = (config.d_ff, "intermediate_size")
    kv = (config.n_kv_heads * config.head_dim, "num_key_value_heads")
    tensors = {"model.embed_tokens.weight": (vocab, width)}
    for i in range(config.n_layers):
        block = f"model.layers.{i}."
        tensors.update({
            block + "input_layernorm.weight": (width,),
            block + "self_attn.q_proj.weight": (width, width),
            block + "self_attn.k_proj.weight": (kv, width),
            block + "self_attn.v_proj.weight": (kv, width),
            block + "self_attn.o_proj.weight": (width, width),
            block + "post_attention_layernorm.weight": (width,),
            block + "mlp.gate_proj.weight": (mlp, width),
            block + "mlp.up_proj.weight": (mlp, width),
            block + "mlp.down_proj.weight": (width, mlp),
        })
    tensors["model.norm.weight"] = (width,)
    if not config.tie_word_embeddings:
        tensors["lm_head.weight"] = (vocab, width)
    return tensors


def check_tensors(file: SafetensorsFile, config: Config, hf: dict, source: str) -> list[str]:
    """Compare the header of ``file`` with what ``config`` needs, before reading any tensor:
    the number of blocks first (from the names alone), then each tensor's name, dtype and
    shape. A mismatch names the config.json key it comes from. Returns the names to read."""
    path = file.path
    names = {name for name in file.tensors if not name.endswith(_DERIVED_SUFFIX)}
    blocks = {int(match.group(1)) for match in map(_BLOCK.match, names) if match}
    if len(blocks) != config.n_layers:
        held = (f"{len(blocks)} blocks (model.layers.0 to model.layers.{len(blocks) - 1})"
                if blocks == set(range(len(blocks))) and blocks else f"{len(blocks)} blocks")
        raise ValueError(f"{source}: {_described(hf, 'num_hidden_layers', config.n_layers)}, "
                         f"but {path} holds the tensors of {held}")
    expected = tensor_shapes(config)
    unexpected = sorted(names - set(expected))
    if unexpected:
        raise ValueError(f"{path}: unexpected tensor {unexpected[0]!r}"
                         f"{f' (and {len(unexpected) - 1} more)' if len(unexpected) > 1 else ''}"
                         f"; glassllm runs {SUPPORTED}")
    for name, dims in expected.items():
        if name not in names:
            hint = (" (set tie_word_embeddings: true in config.json if the output layer "
                    "reuses the embeddings)" if name == "lm_head.weight" else "")
            raise ValueError(f"{path}: tensor {name!r} is missing{hint}")
        info = file.tensors[name]
        if info.dtype not in FLOAT_DTYPES:
            raise ValueError(f"{path}: tensor {name!r} has dtype {info.dtype}; glassllm "
                             f"loads {', '.join(FLOAT_DTYPES)} (as float32)")
        needed = tuple(size for size, _ in dims)
        if info.shape != needed:
            keys = [key for (size, key), held in zip(dims, info.shape) if size != held] or [
                key for _, key in dims]
            sizes = {"hidden_size": config.d_model, "vocab_size": config.vocab_size,
                     "intermediate_size": config.d_ff, "num_key_value_heads": config.n_kv_heads}
            said = " and ".join(dict.fromkeys(_described(hf, key, sizes[key]) for key in keys))
            raise ValueError(f"{source}: {said}, so tensor {name!r} needs shape {needed}, but "
                             f"{path} holds it with shape {info.shape}")
    return list(expected)


def _described(hf: dict, key: str, value) -> str:
    """How config.json gave ``key``: its value, or LlamaConfig's default."""
    if hf.get(key) is None and key != "num_key_value_heads":
        return f"{key} is missing, so it is LlamaConfig's default {value}"
    return f"{key} is {value}"
