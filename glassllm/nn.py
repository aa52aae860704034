"""The layers of a Llama-style decoder block as small pure functions on NumPy arrays.

Every array is float32 and keeps a leading batch axis of size 1 inside the model, the way
the tracer's ``batched=True`` expects. Each observable step has its ``# @step <id>`` marker
on the line of the operation that computes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from .trace import Tracer, record

# The array type the engine passes around: float32 NumPy arrays.
Tensor: TypeAlias = npt.NDArray[np.float32]


@dataclass
class BlockWeights:
    """The learned parameters of one block; Linear weights are (out, in) as in PyTorch."""

    attn_norm: Tensor  # (d,)
    wq: Tensor         # (H * dh, d)
    wk: Tensor         # (Hkv * dh, d)
    wv: Tensor         # (Hkv * dh, d)
    wo: Tensor         # (d, H * dh)
    mlp_norm: Tensor   # (d,)
    w_gate: Tensor     # (f, d)
    w_up: Tensor       # (f, d)
    w_down: Tensor     # (d, f)


def linear(x: Tensor, w: Tensor) -> Tensor:
    return x @ w.T


def rms_norm(x: Tensor, gain: Tensor, eps: float) -> Tensor:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps)) * gain


def silu(x: Tensor) -> Tensor:
    # x * sigmoid(x), with sigmoid written through tanh so large |x| never overflows exp
    return x * (np.float32(0.5) * (np.float32(1) + np.tanh(np.float32(0.5) * x)))


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def rope_angles(n: int, head_dim: int, theta: float) -> tuple[Tensor, Tensor]:
    """cos and sin of the rotary angles, (n, dh), in Hugging Face's half-split layout."""
    inv_freq = np.float32(1) / np.float32(theta) ** (
        np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim))  # (dh/2,)
    angles = np.outer(np.arange(n, dtype=np.float32), inv_freq)                # (n, dh/2)
    angles = np.concatenate([angles, angles], axis=-1)                         # (n, dh)
    return np.cos(angles), np.sin(angles)


def rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    return x * cos + rotate_half(x) * sin


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    b, n, width = x.shape
    return x.reshape(b, n, n_heads, width // n_heads).transpose(0, 2, 1, 3)  # (1, H, n, dh)


def merge_heads(x: Tensor) -> Tensor:
    b, h, n, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, n, h * dh)  # (1, n, H * dh)


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """Grouped-query attention: KV head j serves query heads j*n_rep ... j*n_rep + n_rep - 1."""
    return x if n_rep == 1 else np.repeat(x, n_rep, axis=1)  # (1, Hkv * n_rep, n, dh)


def causal_mask(scores: Tensor) -> Tensor:
    n = scores.shape[-1]
    future = np.triu(np.ones((n, n), dtype=bool), k=1)
    return np.where(future, np.float32(-np.inf), scores)


def self_attention(x: Tensor, w: BlockWeights, cos: Tensor, sin: Tensor, n_heads: int,
                   n_kv_heads: int, eps: float, trace: Tracer | None, layer: int) -> Tensor:
    h = rms_norm(x, w.attn_norm, eps)  # @step attn.norm
    record(trace, "attn.norm", h, layer)
    q = split_heads(linear(h, w.wq), n_heads)  # @step attn.q  -> (1, H, n, dh)
    record(trace, "attn.q", q, layer)
    k = split_heads(linear(h, w.wk), n_kv_heads)  # @step attn.k  -> (1, Hkv, n, dh)
    record(trace, "attn.k", k, layer)
    v = split_heads(linear(h, w.wv), n_kv_heads)  # @step attn.v  -> (1, Hkv, n, dh)
    record(trace, "attn.v", v, layer)
    q = apply_rope(q, cos, sin)  # @step attn.q_rope
    record(trace, "attn.q_rope", q, layer)
    k = apply_rope(k, cos, sin)  # @step attn.k_rope
    record(trace, "attn.k_rope", k, layer)
    n_rep = n_heads // n_kv_heads
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # (1, H, n, dh)
    scale = np.float32(1.0 / np.sqrt(q.shape[-1]))
    scores = (q @ k.transpose(0, 1, 3, 2)) * scale  # @step attn.scores  -> (1, H, n, n)
    record(trace, "attn.scores", scores, layer)
    masked = causal_mask(scores)  # @step attn.mask
    record(trace, "attn.mask", masked, layer)
    weights = softmax(masked)  # @step attn.softmax
    record(trace, "attn.softmax", weights, layer)
    context = weights @ v  # @step attn.context  -> (1, H, n, dh)
    record(trace, "attn.context", context, layer)
    out = linear(merge_heads(context), w.wo)  # @step attn.out  -> (1, n, d)
    record(trace, "attn.out", out, layer)
    return out


def mlp(x: Tensor, w: BlockWeights, eps: float, trace: Tracer | None, layer: int) -> Tensor:
    h = rms_norm(x, w.mlp_norm, eps)  # @step mlp.norm
    record(trace, "mlp.norm", h, layer)
    gate = linear(h, w.w_gate)  # @step mlp.gate  -> (1, n, f)
    record(trace, "mlp.gate", gate, layer)
    up = linear(h, w.w_up)  # @step mlp.up
    record(trace, "mlp.up", up, layer)
    act = silu(gate) * up  # @step mlp.act
    record(trace, "mlp.act", act, layer)
    down = linear(act, w.w_down)  # @step mlp.down  -> (1, n, d)
    record(trace, "mlp.down", down, layer)
    return down


def transformer_block(x: Tensor, w: BlockWeights, cos: Tensor, sin: Tensor, n_heads: int,
                      n_kv_heads: int, eps: float, trace: Tracer | None, layer: int) -> Tensor:
    """Pre-norm residual block: x + attention(norm(x)), then + mlp(norm(.))."""
    x = x + self_attention(x, w, cos, sin, n_heads, n_kv_heads, eps, trace, layer)  # @step attn.residual
    record(trace, "attn.residual", x, layer)
    x = x + mlp(x, w, eps, trace, layer)  # @step mlp.residual
    record(trace, "mlp.residual", x, layer)
    return x
