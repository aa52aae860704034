"""The model's shape: ``Config``, a frozen dataclass every other part of glassllm reads.

It knows nothing of weights or running; ``GlassLM(config)`` builds a model of this shape and
``glassllm.checkpoint`` turns it into the ``config.json`` of a ``LlamaForCausalLM`` and back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from numbers import Integral, Real

import numpy as np

FLOAT32_MAX = float(np.finfo(np.float32).max)  # a Python float: compares with any int
MAX_SIZE = 2**63 - 1  # NumPy's shapes are int64: no array dimension is larger
_USUAL = {"rope_theta": "RoPE's base is usually 10000 (Llama 2) or 500000 (Llama 3)",
          "norm_eps": "RMSNorm's epsilon is usually 1e-5 or 1e-6"}


def default_mlp_width(d_model: int) -> int:
    """Llama's SwiGLU width: 8/3 of d_model rounded up to a multiple of 8."""
    width = -(-8 * d_model // 3)  # ceil(8d/3)
    return -(-width // 8) * 8


@dataclass(frozen=True)
class Config:
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    max_len: int
    d_ff: int | None = None  # MLP width; None means default_mlp_width(d_model)
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    seed: int = 0
    tie_word_embeddings: bool = False  # the logits reuse the embedding matrix (no lm_head)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = _python_number(getattr(self, f.name))
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"Config.{f.name} must be a finite number, got {value!r}")
            object.__setattr__(self, f.name, value)
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "max_len"):
            _check_positive_int(name, getattr(self, name))
        if self.d_ff is None:
            object.__setattr__(self, "d_ff", default_mlp_width(self.d_model))
        _check_positive_int("d_ff", self.d_ff)
        for name in ("rope_theta", "norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real) or not value > 0:
                raise ValueError(f"Config.{name} must be a positive number, got {value!r}")
            problem = float32_problem(value, nonzero=name == "rope_theta")
            if problem:  # the engine computes in float32: the value would be inf or 0 there
                raise ValueError(f"Config.{name} {problem}; {_USUAL[name]}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, Integral) or self.seed < 0:
            raise ValueError(f"Config.seed must be a non-negative integer, got {self.seed!r}")
        if not isinstance(self.tie_word_embeddings, bool):
            raise ValueError(f"Config.tie_word_embeddings must be True or False, "
                             f"got {self.tie_word_embeddings!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"Config.d_model ({self.d_model}) must be divisible by "
                             f"Config.n_heads ({self.n_heads})")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"Config.n_heads ({self.n_heads}) must be divisible by "
                             f"Config.n_kv_heads ({self.n_kv_heads}) for grouped-query attention")
        if self.head_dim % 2:
            raise ValueError(f"Config.d_model / Config.n_heads = {self.head_dim} is the head width "
                             f"and must be even for RoPE; change Config.d_model or Config.n_heads")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def parameter_count(c: Config) -> int:
    """GlassLM's parameters, from the Config alone (embeddings, blocks, final norm, head)."""
    return embedding_parameters(c) + c.n_layers * block_parameters(c) + c.d_model


def embedding_parameters(c: Config) -> int:
    """The embedding matrix, and the output layer unless it is the same matrix (tied)."""
    return (1 if c.tie_word_embeddings else 2) * c.vocab_size * c.d_model


def block_parameters(c: Config) -> int:
    """One block: two RMSNorm gains, the attention's q, k, v, o and the MLP's three."""
    attention = c.d_model * c.head_dim * (2 * c.n_heads + 2 * c.n_kv_heads)  # q, o; k, v
    return 2 * c.d_model + attention + 3 * c.d_model * c.d_ff


def _python_number(value):
    """NumPy scalars as Python's bool, int or float, so a Config is plain JSON (asdict)."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value <= 0:
        raise ValueError(f"Config.{name} must be a positive integer, got {value!r}")
    if value > MAX_SIZE:
        raise ValueError(f"Config.{name} is {_digits(value)}, larger than any array "
                         f"dimension (2**63 - 1)")


def float32_problem(value, nonzero: bool = False) -> str | None:
    """Why a positive number is not one the engine's float32 holds, said after its name
    ("is 1e+40, beyond float32's range"); None when float32 holds it. ``nonzero``: a value
    float32 rounds to 0 is refused too (a divisor, as RoPE's base)."""
    if isinstance(value, Integral) and value > FLOAT32_MAX:  # maybe beyond any float64 too
        return f"is {_digits(value)}, beyond float32's range (±{FLOAT32_MAX:.4g})"
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        return f"is {value!r}, not a positive finite number"
    if value > FLOAT32_MAX:
        return f"is {value!r}, beyond float32's range (±{FLOAT32_MAX:.4g})"
    if nonzero and np.float32(value) == 0:
        return f"is {value!r}, which float32 (the engine's dtype) rounds to 0"
    return None


def _digits(value: int) -> str:
    """A huge integer by its length: a number of thousands of digits is no message."""
    text = str(value)
    return text if len(text) <= 40 else f"an integer of {len(text)} digits"
