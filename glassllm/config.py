"""The model's shape: ``Config``, a frozen dataclass every other part of glassllm reads.

It knows nothing of weights or running; ``GlassLM(config)`` builds a model of this shape and
``glassllm.checkpoint`` turns it into the ``config.json`` of a ``LlamaForCausalLM`` and back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from numbers import Integral, Real

import numpy as np


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
