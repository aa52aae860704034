"""Checkpoints in Hugging Face's layout: ``config.json`` of a ``LlamaForCausalLM`` and
``model.safetensors``, so the same directory loads in glassllm and in ``transformers``.

    model = GlassLM.from_pretrained("path/to/dir")   # no torch needed
    model.save_pretrained("out")                     # LlamaForCausalLM.from_pretrained("out") too

Loading checks everything before it builds anything: a config or tensor glassllm cannot run
(another architecture, RoPE scaling, biases, a missing or misshaped tensor, a dtype that is not
a float) is a ``ValueError`` naming the key and saying what is supported. float16 and bfloat16
tensors load as float32, the engine's only dtype.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from .model import Config, GlassLM
from .safetensors_reader import FLOAT_DTYPES, SafetensorsFile

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
ARCHITECTURE = "LlamaForCausalLM"
SUPPORTED = ("a LlamaForCausalLM with SiLU SwiGLU MLPs, no biases, plain RoPE (no rope_scaling) "
             "and float32/float16/bfloat16 weights")

# config.json key -> Config field; the first group is required
_REQUIRED = {"hidden_size": "d_model", "num_hidden_layers": "n_layers",
             "num_attention_heads": "n_heads", "vocab_size": "vocab_size",
             "max_position_embeddings": "max_len"}
_OPTIONAL = {"intermediate_size": "d_ff", "num_key_value_heads": "n_kv_heads",
             "rms_norm_eps": "norm_eps", "tie_word_embeddings": "tie_word_embeddings"}
# Buffers older transformers versions saved; glassllm derives them from rope_theta.
_DERIVED_SUFFIX = ".self_attn.rotary_emb.inv_freq"


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
    for anything glassllm cannot represent."""
    def refuse(key: str, why: str):
        return ValueError(f"{source}: {key} {why}; glassllm runs {SUPPORTED}")

    if not isinstance(hf, dict):
        raise ValueError(f"{source}: must hold a JSON object (a LlamaForCausalLM config)")
    architectures = hf.get("architectures", [ARCHITECTURE])
    if architectures != [ARCHITECTURE]:
        raise refuse("architectures", f"is {architectures!r}, not [{ARCHITECTURE!r}]")
    if hf.get("model_type", "llama") != "llama":
        raise refuse("model_type", f"is {hf['model_type']!r}, not 'llama'")
    if hf.get("hidden_act", "silu") != "silu":
        raise refuse("hidden_act", f"is {hf['hidden_act']!r}, not 'silu'")
    for key in ("attention_bias", "mlp_bias"):
        if hf.get(key, False) is not False:
            raise refuse(key, "is set: glassllm's linear layers have no biases")
    fields = {}
    for key, name in {**_REQUIRED, **_OPTIONAL}.items():
        value = hf.get(key)
        if value is None:
            if key in _REQUIRED:
                raise refuse(key, "is missing")
            continue
        if name == "tie_word_embeddings":
            ok, kind = isinstance(value, bool), "true or false"
        elif name == "norm_eps":
            ok, kind = _is_int(value) or isinstance(value, float), "a number"
        else:
            ok, kind = _is_int(value), "an integer"
        if not ok:
            raise refuse(key, f"is {value!r}, not {kind}")
        fields[name] = value
    fields.setdefault("n_kv_heads", fields["n_heads"])
    fields["rope_theta"] = _rope_theta(hf, refuse)
    head_dim = hf.get("head_dim")
    if head_dim is not None and fields["n_heads"] > 0 and head_dim * fields["n_heads"] != fields["d_model"]:
        raise refuse("head_dim", f"is {head_dim!r}, but glassllm's head width is hidden_size / "
                                 f"num_attention_heads = {fields['d_model'] / fields['n_heads']:g}")
    try:
        return Config(**fields)
    except ValueError as error:  # say it in config.json's words, not Config's
        message = str(error)
        for key, name in {**_REQUIRED, **_OPTIONAL, "rope_theta": "rope_theta"}.items():
            message = message.replace(f"Config.{name}", key)
        raise ValueError(f"{source}: {message}") from None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rope_theta(hf: dict, refuse) -> float:
    """RoPE's base, from ``rope_theta`` (transformers 4) or ``rope_parameters`` (5)."""
    for key in ("rope_scaling", "rope_parameters"):
        params = hf.get(key)
        if params is None:
            continue
        if not isinstance(params, dict):
            raise refuse(key, f"is {params!r}, not an object")
        kind = params.get("rope_type", params.get("type", "default"))
        if kind != "default":
            raise refuse(key, f"asks for rope_type {kind!r}: only plain RoPE ('default') is supported")
    theta = hf.get("rope_theta")
    if theta is None and isinstance(hf.get("rope_parameters"), dict):
        theta = hf["rope_parameters"].get("rope_theta")
    theta = 10000.0 if theta is None else theta
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not (
            math.isfinite(theta) and theta > 0):
        raise refuse("rope_theta", f"is {theta!r}, not a positive finite number")
    return float(theta)


# -- reading and writing ------------------------------------------------------------------

def load_pretrained(path) -> GlassLM:
    """The model of a checkpoint directory; nothing is built unless every check passes."""
    folder = Path(path)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a directory; from_pretrained takes a local folder "
                         f"holding {CONFIG_NAME} and {WEIGHTS_NAME} (Hugging Face's layout)")
    config_path, weights_path = folder / CONFIG_NAME, folder / WEIGHTS_NAME
    for needed in (config_path, weights_path):
        if not needed.is_file():
            raise ValueError(f"{needed} is missing; a checkpoint folder holds {CONFIG_NAME} "
                             f"and {WEIGHTS_NAME} (save one with GlassLM.save_pretrained)")
    try:
        hf = json.loads(config_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{config_path} is not valid JSON: {error}") from None
    config = config_from_hf(hf, str(config_path))
    model = GlassLM(config)
    model.load_state_dict(read_tensors(weights_path, expected=model._parameters()))
    return model


def read_tensors(path: Path, expected: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor of ``expected`` from a safetensors file, as float32, shapes checked.

    Read with NumPy alone (``glassllm.safetensors_reader``), so loading needs no
    ``safetensors`` package (there is none in the browser's Pyodide)."""
    arrays = {}
    with SafetensorsFile(path) as file:
        names = set(file.tensors)
        unexpected = sorted(n for n in names - set(expected) if not n.endswith(_DERIVED_SUFFIX))
        if unexpected:
            raise ValueError(f"{path}: unexpected tensor {unexpected[0]!r}"
                             f"{f' (and {len(unexpected) - 1} more)' if len(unexpected) > 1 else ''}"
                             f"; glassllm runs {SUPPORTED}")
        for name, ref in expected.items():
            if name not in names:
                hint = (" (set tie_word_embeddings: true in config.json if the output layer "
                        "reuses the embeddings)" if name == "lm_head.weight" else "")
                raise ValueError(f"{path}: tensor {name!r} is missing{hint}")
            info = file.tensors[name]
            if info.dtype not in FLOAT_DTYPES:
                raise ValueError(f"{path}: tensor {name!r} has dtype {info.dtype}; glassllm "
                                 f"loads {', '.join(FLOAT_DTYPES)} (as float32)")
            if info.shape != ref.shape:
                raise ValueError(f"{path}: tensor {name!r} has shape {info.shape}, config.json "
                                 f"needs {ref.shape}")
        for name in expected:
            array = file.read_float32(name)
            if not np.isfinite(array).all():
                raise ValueError(f"{path}: tensor {name!r} holds NaN or infinite values")
            arrays[name] = array
    return arrays


def save_pretrained(model: GlassLM, path) -> None:
    """Write ``config.json`` and ``model.safetensors`` into ``path`` (created if needed).

    Each file is written to a temporary name beside it and renamed into place, so a failure
    never leaves a half-written file behind.
    """
    try:
        from safetensors.numpy import save_file
    except ImportError:
        raise ImportError("save_pretrained writes model.safetensors with the safetensors "
                          "package: pip install safetensors") from None

    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} exists and is not a directory; save_pretrained writes a folder")
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {name: np.ascontiguousarray(value, dtype=np.float32)
               for name, value in model._parameters().items()}
    config = json.dumps(config_to_hf(model.config), indent=2, sort_keys=True) + "\n"
    _write_atomic(folder / WEIGHTS_NAME,
                  lambda tmp: save_file(tensors, tmp, metadata={"format": "pt"}))
    _write_atomic(folder / CONFIG_NAME,
                  lambda tmp: Path(tmp).write_text(config, encoding="utf-8"))


def _write_atomic(target: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a saved model is for sharing
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
