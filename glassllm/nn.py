"""The layers of a Llama-style decoder block as small pure functions on NumPy arrays.

Every array is float32 and keeps a leading batch axis of size 1 inside the model, the way
the tracer's ``batched=True`` expects. Each observable step has its ``# @step <id>`` marker
on the line of the operation that computes it; the two lines after it apply the run's edits
to that value (``glassllm.edits``) and record it, so the rest of the block and the tracer
both see the edited value.

A block reads ``x`` of shape ``(1, m, d)``: the m positions this pass computes. A forward
pass computes every position (m = n). During cached generation (``KVCache``) a pass
computes only the new position (m = 1) and attends to the keys and values of all n
positions so far, so the attention tables are ``(1, H, m, n)``: m query rows, n key columns.

The backward pass (``GlassLM.gradients``) is written by hand beside the forward, as llm.c's
train_gpt2.c does: each ``*_backward`` function takes ∂L/∂(its forward's output) and returns
∂L/∂(its inputs), plus its weights' gradients. A forward run for the backward pass keeps, per
block, the arrays the backward reads (``BlockCache``: references, nothing copied), and may
hold a batch ``(b, n, ...)`` of sequences: every function here works on any leading batch.
Each step's backward carries a ``# @grad <id>`` marker on the line that computes it.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from .edits import Edits, edit
from .trace import Tracer, record

# The array type the engine passes around: float32 NumPy arrays.
Tensor: TypeAlias = npt.NDArray[np.float32]


class _Rows:
    """A weight that is a band of rows of a stacked matrix. Reading gives a view, so writing
    into it (an ablation) changes what the block computes; assigning copies into the band."""

    def __init__(self, matrix: str, part: int) -> None:
        self.matrix, self.part = matrix, part

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, block, owner=None):
        if block is None:
            return self
        return getattr(block, self.matrix)[block.bands(self.matrix)[self.part]]

    def __set__(self, block, value) -> None:
        band = self.__get__(block)
        value = np.asarray(value, dtype=np.float32)
        if value.shape != band.shape:
            raise ValueError(f"{self.name} must have shape {band.shape}, got {value.shape}")
        band[...] = value


class _Matrix:
    """A Linear weight of a block, always ``column_major``: assigning a row-major array
    stores a column-major copy of it."""

    def __set_name__(self, owner, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, block, owner=None):
        return self if block is None else getattr(block, self.slot)

    def __set__(self, block, value) -> None:
        setattr(block, self.slot, column_major(value))


class BlockWeights:
    """The learned parameters of one block; Linear weights are (out, in) as in PyTorch.

    The q, k and v projections are stored stacked in one matrix, and so are gate and up, so
    that one matmul computes each group (fewer, larger BLAS calls are faster). ``wq``, ``wk``,
    ``wv``, ``w_gate`` and ``w_up`` are views into those matrices.
    """

    w_qkv, wo, w_gate_up, w_down = _Matrix(), _Matrix(), _Matrix(), _Matrix()
    wq, wk, wv = _Rows("w_qkv", 0), _Rows("w_qkv", 1), _Rows("w_qkv", 2)
    w_gate, w_up = _Rows("w_gate_up", 0), _Rows("w_gate_up", 1)

    def __init__(self, attn_norm: Tensor, wq: Tensor, wk: Tensor, wv: Tensor, wo: Tensor,
                 mlp_norm: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> None:
        self.attn_norm = attn_norm                            # (d,)
        self.w_qkv = np.concatenate([wq, wk, wv])             # ((H + 2 Hkv) * dh, d)
        self.q_width, self.kv_width = len(wq), len(wk)        # H * dh, Hkv * dh
        self.wo = wo                                          # (d, H * dh)
        self.mlp_norm = mlp_norm                              # (d,)
        self.w_gate_up = np.concatenate([w_gate, w_up])       # (2f, d)
        self.w_down = w_down                                  # (d, f)

    def bands(self, matrix: str) -> tuple[slice, ...]:
        """The row ranges of the weights stacked in ``matrix``."""
        if matrix == "w_qkv":
            q, kv = self.q_width, self.kv_width
            return slice(0, q), slice(q, q + kv), slice(q + kv, q + 2 * kv)
        f = len(self.w_gate_up) // 2
        return slice(0, f), slice(f, 2 * f)


def embedding_backward(dweight: Tensor, ids: np.ndarray, dx: Tensor) -> Tensor:
    """x_i = E[t_i]: ∂L/∂E_v += Σ_(i: t_i = v) ∂L/∂x_i, added into ``dweight`` (V, d). A token
    that occurs twice gets both rows: np.add.at adds at repeated indices, where
    ``dweight[ids] += dx`` would keep one. On the flattened matrix, numpy's fast 1-D path."""
    d = dweight.shape[-1]
    flat = (ids.reshape(-1, 1) * d + np.arange(d)).reshape(-1)  # (N d,) indices of the entries
    np.add.at(dweight.reshape(-1), flat, dx.reshape(-1))
    return dweight


def linear(x: Tensor, w: Tensor) -> Tensor:
    # the rows of every sequence of a batch in one matmul: matmul on (b, n, d) runs b of them
    return (x.reshape(-1, x.shape[-1]) @ w.T).reshape(*x.shape[:-1], w.shape[0])


def linear_backward(dy: Tensor, x: Tensor, w: Tensor) -> tuple[Tensor, Tensor]:
    """y = x Wᵀ: ∂L/∂x = ∂L/∂y W and ∂L/∂W = ∂L/∂yᵀ x summed over every row (all
    positions of all sequences). One matmul each, on the rows flattened to 2-D."""
    dy2 = dy.reshape(-1, dy.shape[-1])                                    # (N, out)
    dx = (dy2 @ w).reshape(*dy.shape[:-1], w.shape[1])                    # (..., in)
    return dx, weight_gradient(dy2, x.reshape(-1, x.shape[-1]), w)        # (out, in)


def weight_gradient(dy2: Tensor, x2: Tensor, w: Tensor) -> Tensor:
    """∂L/∂W = ∂L/∂yᵀ x (out, in) from the rows ``dy2`` (N, out) and ``x2`` (N, in), laid
    out in memory like ``w``: for a ``column_major`` weight it is computed as (xᵀ ∂L/∂y)ᵀ,
    the same numbers, so that the optimiser reads it beside the weight without a copy."""
    if w.flags.f_contiguous and not w.flags.c_contiguous:
        return (x2.T @ dy2).T
    return dy2.T @ x2


# How Linear weights sit in memory (``column_major``): "F", as their transpose, where NumPy
# multiplies with BLAS; "C", row-major, in WebAssembly (Pyodide, the site's browser runtime),
# whose NumPy has no BLAS: its own matmul loops run the demo's 11-token forward 1.4-1.6x faster
# on row-major weights there, with the same bits (measured in Node's Pyodide; the worker's
# figure is scripts/bench_browser.py's).
LINEAR_ORDER = "C" if sys.platform == "emscripten" else "F"


def column_major(w) -> Tensor:
    """A Linear weight, (out, in) as in PyTorch, laid out in memory as its transpose: ``w.T``
    in ``linear`` is then a row-major matrix, which OpenBLAS multiplies 1.2-1.3x faster than
    a transposed one at this model's shapes (scripts/bench_engine.py); the result is the
    same up to float32 rounding (at d288 and SmolLM's shape, the same bits). Without BLAS
    (``LINEAR_ORDER``) the weight stays row-major."""
    return np.asarray(w, dtype=np.float32, order=LINEAR_ORDER)


def rms_norm(x: Tensor, gain: Tensor, eps: float) -> Tensor:
    mean_square = np.einsum("...i,...i->...", x, x) / np.float32(x.shape[-1])
    # x · r, each row by its own r, into a new array: einsum does it faster than
    # x * r[..., None] (1.3x at (1024, 128)), the same products
    y = np.einsum("...i,...->...i", x, np.float32(1) / np.sqrt(mean_square + np.float32(eps)))
    y *= gain  # in place: one buffer for the whole norm
    return y


def rms_norm_backward(dy: Tensor, x: Tensor, gain: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """y = x̂ ⊙ γ with x̂ = x·r, r = 1/√(mean_c x² + ε). ∂L/∂γ = Σ_rows ∂L/∂y ⊙ x̂, and with
    g = ∂L/∂y ⊙ γ: ∂L/∂x = r (g − x̂ · mean_c(g ⊙ x̂)) (r depends on every feature of its row,
    which gives the second term). r is recomputed from x: one pass, cheaper than keeping it."""
    d = x.shape[-1]
    x2, dy2 = x.reshape(-1, d), dy.reshape(-1, d)                              # (N, d)
    dx, dgain = np.empty_like(dy2), np.zeros(d, dtype=np.float32)
    for rows in row_blocks(len(x2), d):
        x_rows, dy_rows = x2[rows], dy2[rows]                                  # (B, d)
        r = np.float32(1) / np.sqrt(np.einsum("ni,ni->n", x_rows, x_rows)
                                    / np.float32(d) + np.float32(eps))         # (B,)
        # a new array of rows times their r by einsum, as rms_norm (in place, *= is as fast)
        x_hat = np.einsum("ni,n->ni", x_rows, r)
        dgain += np.einsum("ni,ni->i", dy_rows, x_hat)
        g = np.multiply(dy_rows, gain, out=dx[rows])
        x_hat *= np.einsum("ni,ni->n", g, x_hat)[:, None] / np.float32(d)      # x̂ · mean(g ⊙ x̂)
        g -= x_hat
        g *= r[:, None]
    return dx.reshape(x.shape), dgain


# elements in one block of rows (256 KB of float32)
_BLOCK = 1 << 16


def row_blocks(rows: int, width: int) -> list[slice]:
    """Slices of consecutive rows, about 64K elements each. A backward function that runs
    several elementwise passes does them a block at a time, so its temporaries stay in the
    CPU's L2 cache instead of streaming whole (N, width) arrays through memory: 1.5x faster
    at d288 (the passes are the same, on fewer numbers at a time)."""
    step = max(1, _BLOCK // width)
    return [slice(start, start + step) for start in range(0, rows, step)]


def silu_denominator(x: Tensor) -> Tensor:
    """1 + exp(−x), the denominator of σ(x) = 1 / (1 + exp(−x)); where exp(−x) overflows
    it is inf, and x / inf = −0 is silu's limit, so the overflow is harmless."""
    denominator = np.negative(x)
    with np.errstate(over="ignore"):
        np.exp(denominator, out=denominator)
    denominator += np.float32(1)
    return denominator


def silu(x: Tensor, denominator: Tensor | None = None) -> Tensor:
    # x * sigmoid(x) = x / (1 + exp(-x)). With the denominator given (a training step keeps
    # it for swiglu_backward), a fresh array; else in place in the denominator's buffer
    if denominator is not None:
        return x / denominator
    denominator = silu_denominator(x)
    return np.divide(x, denominator, out=denominator)


def swiglu_backward(gate: Tensor, up: Tensor, dact: Tensor, out: Tensor,
                    denominator: Tensor | None = None) -> Tensor:
    """u = silu(a) ⊙ b, with a = ``gate`` and b = ``up`` (..., f): ∂L/∂b = ∂L/∂u ⊙ silu(a),
    ∂L/∂a = ∂L/∂u ⊙ b ⊙ silu′(a), silu′(a) = σ(a) (1 + a (1 − σ(a))). With D = 1 + e^(−a)
    (``denominator``, kept by the forward, else recomputed): silu(a) = a / D and
    silu′(a) = (1 + (a − silu(a))) / D, seven passes and no exponential. Writes
    [∂L/∂a | ∂L/∂b] into ``out`` (..., 2f), the layout of the fused gate/up matrix."""
    f = gate.shape[-1]
    gate2, up2, dact2 = (part.reshape(-1, f) for part in (gate, up, dact))     # (N, f)
    out2 = out.reshape(-1, 2 * f)                                               # (N, 2f)
    kept = None if denominator is None else denominator.reshape(-1, f)
    for rows in row_blocks(len(gate2), f):
        a = gate2[rows]
        d = silu_denominator(a) if kept is None else kept[rows]               # D (inf: σ = 0)
        silu_a = a / d                                                         # silu(a)
        np.multiply(dact2[rows], silu_a, out=out2[rows, f:])                   # ∂L/∂b
        # silu′(a) = (1 + (a − silu(a))) / D, built in the silu buffer: a − silu(a) = a (1 − σ)
        deriv = np.subtract(a, silu_a, out=silu_a)
        deriv += np.float32(1)
        deriv /= d
        deriv *= up2[rows]
        np.multiply(dact2[rows], deriv, out=out2[rows, :f])                    # ∂L/∂a
    return out


def row_max(x: Tensor, axis: int = -1) -> Tensor:
    """The maximum along ``axis``, kept as an axis of 1. np.fmax skips NaN where np.max
    returns it, and is faster (up to 1.6x on 128-wide rows); a row holding a NaN still comes
    out all NaN from the softmax and the cross-entropy below, whose sums read the NaN."""
    return np.fmax.reduce(x, axis=axis, keepdims=True)


def softmax(x: Tensor, axis: int = -1, out: Tensor | None = None) -> Tensor:
    # out: the buffer to compute it in (x itself when x is not read after)
    e = np.subtract(x, row_max(x, axis=axis), out=out)
    np.exp(e, out=e)  # in place: one buffer for the whole softmax
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


def softmax_backward(dy: Tensor, y: Tensor, out: Tensor | None = None) -> Tensor:
    """The softmax's Jacobian-vector product along the last axis: with y = softmax(x),
    ∂L/∂x_j = y_j (∂L/∂y_j − Σ_j′ ∂L/∂y_j′ y_j′). Where y_j = 0 exactly (a masked entry,
    −∞ before the softmax) the result is 0: a finite ∂L/∂y never makes it NaN.
    ``out``: the buffer to compute it in (``dy`` itself when it is not needed after)."""
    dot = np.einsum("...j,...j->...", dy, y)[..., None]                        # (..., 1)
    dx = np.subtract(dy, dot, out=out)
    dx *= y
    return dx


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# exp(-86) = 4.4e-38 is a normal float32; below about -87.3, exp gives subnormal numbers
# (under 1.2e-38), which CPUs make and use tens of times slower than normal ones
_EXP_FLOOR = -86.0


def cross_entropy(logits: Tensor, targets: np.ndarray) -> tuple[Tensor, Tensor]:
    """−log softmax(ℓ_i)_(y_i) of each row of ``logits`` (N, V), as log Σ_j exp(ℓ_ij − max ℓ_i)
    − (ℓ_iy − max ℓ_i), and softmax(ℓ) (N, V) from the same exponentials, for the gradient.

    A logit more than 86 − ln(N·V) below its row's maximum counts as that far below (about
    72 at N·V = 2M): its probability, under 1e-31, then stays a normal float32 number after
    the divisions by the row's sum and by N. Below that it would be subnormal (< 1.2e-38),
    and subnormal numbers make every operation and matmul that reads them tens of times
    slower. Next to the row's largest probability (≥ 1/V) float32 cannot show the change:
    the loss is the same float, the gradient moves by less than 1e-31 / N."""
    n = len(targets)
    probs = logits - row_max(logits)  # (N, V), all <= 0
    picked = probs[np.arange(n), targets]  # (N,)
    np.maximum(probs, np.float32(_EXP_FLOOR + np.log(probs.size)), out=probs)
    np.exp(probs, out=probs)
    sums = np.sum(probs, axis=-1, keepdims=True)  # (N, 1), >= 1: the max's own term is 1
    probs /= sums
    return np.log(sums[:, 0]) - picked, probs


def cross_entropy_backward(probs: Tensor, targets: np.ndarray) -> Tensor:
    """ℒ = −(1/N) Σ_i log softmax(ℓ_i)_(y_i) over N rows: ∂ℒ/∂ℓ_i = (softmax(ℓ_i) − onehot(y_i))
    / N, the gradient where backpropagation starts. Computed in ``probs`` (N, V), softmax(ℓ)."""
    n = len(targets)
    probs[np.arange(n), targets] -= np.float32(1)  # @grad loss
    probs /= np.float32(n)
    return probs


def cross_entropy_and_backward(logits: Tensor, targets: np.ndarray) -> tuple[Tensor, Tensor]:
    """``cross_entropy`` then ``cross_entropy_backward``, the same operations in the same
    order (the same bits), a block of rows at a time in ``logits``' own buffer, which then
    holds ∂ℒ/∂ℓ: a training step's seven passes over the (N, V) logits run in the CPU's cache
    instead of memory, and no (N, V) array is allocated. Returns (nll (N,), ∂ℒ/∂ℓ (N, V)).

    The floor is applied only to a block holding a logit below it (cheaper to look for than to
    apply: the same floats). ``ValueError`` for NaN or infinite logits, found on the way: an
    infinite one makes the block's smallest shifted logit −∞, a NaN makes its row's loss NaN."""
    n = len(targets)
    floor = np.float32(_EXP_FLOOR + np.log(logits.size))  # cross_entropy's, for all N rows
    nll = np.empty(n, dtype=np.float32)
    for rows in row_blocks(n, logits.shape[-1]):
        block, picks = logits[rows], targets[rows]                             # (B, V), (B,)
        at = np.arange(len(picks))
        with np.errstate(invalid="ignore"):  # inf - inf, reported just below
            block -= row_max(block)
        lowest = np.fmin.reduce(block, axis=None)
        if not np.isfinite(lowest):
            raise ValueError(NOT_FINITE_LOGITS)
        picked = block[at, picks]                                              # (B,)
        if lowest < floor:
            np.maximum(block, floor, out=block)
        np.exp(block, out=block)
        sums = np.sum(block, axis=-1, keepdims=True)                           # (B, 1)
        block /= sums
        nll[rows] = np.log(sums[:, 0]) - picked
        block[at, picks] -= np.float32(1)
        block /= np.float32(n)
    if not np.isfinite(nll).all():
        raise ValueError(NOT_FINITE_LOGITS)
    return nll, logits


NOT_FINITE_LOGITS = ("the logits hold NaN or infinite values; the model's weights or activations "
                     "are not finite: check GlassLM.state_dict() for NaN or inf")


def rope_angles(n: int, head_dim: int, theta: float, start: int = 0) -> tuple[Tensor, Tensor]:
    """cos and sin of the rotary angles of positions start ... start + n - 1, (n, dh), in
    Hugging Face's half-split layout."""
    inv_freq = np.float32(1) / np.float32(theta) ** (
        np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim))  # (dh/2,)
    positions = np.arange(start, start + n, dtype=np.float32)                  # (n,)
    angles = np.outer(positions, inv_freq)                                     # (n, dh/2)
    angles = np.concatenate([angles, angles], axis=-1)                         # (n, dh)
    return np.cos(angles), np.sin(angles)


def rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    rotated = np.empty_like(x)
    np.negative(x[..., half:], out=rotated[..., :half])
    rotated[..., half:] = x[..., :half]
    return rotated  # (-x2, x1)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    # x * cos + rotate_half(x) * sin: rotate_half(x) = (-x2, x1) is not built, its product
    # with sin is, a half at a time, as x2 * (-sin) and x1 * sin (the same floats as
    # subtracting x2 * sin); then one addition over whole rows instead of two over halves
    half = x.shape[-1] // 2
    rotated = x * cos
    turned = np.empty_like(rotated)
    np.multiply(x[..., half:], np.negative(sin[..., :half]), out=turned[..., :half])
    np.multiply(x[..., :half], sin[..., half:], out=turned[..., half:])
    rotated += turned
    return rotated


def apply_rope_backward(dy: Tensor, cos: Tensor, sin: Tensor, out: Tensor | None = None) -> Tensor:
    """RoPE rotates each pair (c, c + dh/2) by the angle Θ; a rotation's transpose is its
    inverse, so ∂L/∂x is ∂L/∂y rotated by −Θ: dy ⊙ cos Θ − rotate_half(dy) ⊙ sin Θ
    (rotate_halfᵀ = −rotate_half, and sin Θ is the same on both halves). ``out``: a buffer
    to write it into, such as the band of the fused q/k/v gradient (a strided view)."""
    half = dy.shape[-1] // 2
    dx = np.multiply(dy, cos, out=out)  # then - rotate_half(dy) * sin, a half at a time:
    dx[..., :half] += dy[..., half:] * sin[..., :half]
    dx[..., half:] -= dy[..., :half] * sin[..., half:]
    return dx


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    b, n, width = x.shape
    return x.reshape(b, n, n_heads, width // n_heads).transpose(0, 2, 1, 3)  # (1, H, n, dh)


def merge_heads(x: Tensor) -> Tensor:
    b, h, n, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, n, h * dh)  # (1, n, H * dh)


def group_queries(x: Tensor, n_kv_heads: int) -> Tensor:
    """Grouped-query attention without copying K and V: KV head j serves query heads
    j*r ... j*r + r - 1, so those r heads are stacked along the token axis and one matmul
    per KV head computes them all."""
    b, h, n, last = x.shape
    return x.reshape(b, n_kv_heads, h // n_kv_heads * n, last)  # (1, Hkv, r * n, ...)


def ungroup_queries(x: Tensor, n_heads: int) -> Tensor:
    b, _, rows, last = x.shape
    return x.reshape(b, n_heads, rows * x.shape[1] // n_heads, last)  # (1, H, n, ...)


@lru_cache(maxsize=8)
def _future(n_queries: int, n_keys: int) -> np.ndarray:
    """(m, n) True where key j comes after query i, the queries being the last m of the n
    positions: above the diagonal when m = n. Cached, read-only."""
    future = np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1 + n_keys - n_queries)
    future.flags.writeable = False
    return future


def causal_mask(scores: Tensor, out: Tensor | None = None) -> Tensor:
    """The scores with −∞ where the key comes after the query; one query row at the last
    position (a cached generation step) sees every key: no −∞. Written into ``out`` (the
    scores themselves when they are not read after), else into a copy of the scores."""
    if out is None:
        out = scores.copy()
    elif out is not scores:
        np.copyto(out, scores)
    np.copyto(out, np.float32(-np.inf), where=_future(*scores.shape[-2:]))
    return out


@lru_cache(maxsize=8)
def _hidden(n_queries: int, n_keys: int) -> np.ndarray:
    """(m, n) float32: −∞ where the causal mask hides key j from query i, 0 where it does
    not, to add to the scores. Cached, read-only."""
    hidden = np.where(_future(n_queries, n_keys), np.float32(-np.inf), np.float32(0))
    hidden.flags.writeable = False
    return hidden


@lru_cache(maxsize=8)
def _seen(n_queries: int, n_keys: int) -> np.ndarray:
    """(m, n) float32: 1 where query i may see key j, 0 where the causal mask hides it."""
    seen = (~_future(n_queries, n_keys)).astype(np.float32)
    seen.flags.writeable = False
    return seen


def causal_mask_backward(dmasked: Tensor) -> Tensor:
    """M = S where j ≤ i, −∞ where j > i: the kept entries pass their gradient to S, the
    masked ones are constants, so S gets 0 there (a product with the 0/1 table, faster
    than a masked write). In place: ∂L/∂M is not needed after."""
    dmasked *= _seen(*dmasked.shape[-2:])
    return dmasked


class KVCache:
    """Each block's rotated keys and values of every position computed so far.

    Generation fills it with the prompt's n keys and values, then appends one position per
    new token, so a step computes only the new position's query, key and value instead of
    the whole sequence again. It gives the same attention because a causal model never lets
    a position see later ones: the keys and values of earlier positions do not change when
    a token is added, so they can be kept instead of recomputed.
    """

    def __init__(self, n_layers: int, n_kv_heads: int, capacity: int, head_dim: int) -> None:
        shape = (n_layers, 1, n_kv_heads, capacity, head_dim)
        # allocated once for every position generation will compute: appending never copies
        self.keys = np.empty(shape, dtype=np.float32)
        self.values = np.empty(shape, dtype=np.float32)
        self.length = 0  # positions held; the model advances it after each pass
        self.capacity = capacity

    def extend(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store ``k``, ``v`` (1, Hkv, m, dh) as positions length ... length + m - 1 of
        block ``layer``; return the block's keys and values of every position so far."""
        start, stop = self.length, self.length + k.shape[2]
        if stop > self.capacity:
            raise ValueError(f"the KV cache holds {self.capacity} positions and cannot take "
                             f"position {stop - 1}; generate fewer tokens")
        self.keys[layer, :, :, start:stop] = k
        self.values[layer, :, :, start:stop] = v
        return self.keys[layer, :, :, :stop], self.values[layer, :, :, :stop]  # (1, Hkv, n, dh)


class BlockCache:
    """What one block's backward pass reads from its forward: references to the forward's
    own arrays (b, n, ...), kept once, none copied. The norms' 1/rms are recomputed."""

    __slots__ = ("x", "h", "q", "k", "v", "weights", "context",     # attention
                 "x_half", "h_mlp", "gate", "up", "act", "denominator")  # MLP

    x: Tensor        # the stream entering the block, x⁽ˡ⁾ (b, n, d)
    h: Tensor        # attn.norm (b, n, d)
    q: Tensor        # attn.q_rope (b, H, n, dh)
    k: Tensor        # attn.k_rope (b, Hkv, n, dh)
    v: Tensor        # attn.v (b, Hkv, n, dh)
    weights: Tensor  # attn.softmax (b, H, n, n)
    context: Tensor  # attn.context (b, H, n, dh)
    x_half: Tensor   # attn.residual, x⁽ˡ⁺½⁾ (b, n, d)
    h_mlp: Tensor    # mlp.norm (b, n, d)
    gate: Tensor     # mlp.gate (b, n, f)
    up: Tensor       # mlp.up (b, n, f)
    act: Tensor      # mlp.act (b, n, f)
    denominator: Tensor  # 1 + e^(−gate) (b, n, f), silu's denominator, for swiglu_backward


def self_attention(x: Tensor, w: BlockWeights, cos: Tensor, sin: Tensor, n_heads: int,
                   n_kv_heads: int, eps: float, trace: Tracer | None, layer: int,
                   edits: Edits | None = None, cache: KVCache | None = None,
                   keep: BlockCache | None = None) -> Tensor:
    h = rms_norm(x, w.attn_norm, eps)  # @step attn.norm
    h = edit(edits, "attn.norm", h, layer)
    record(trace, "attn.norm", h, layer)
    qkv = linear(h, w.w_qkv)  # q, k and v projections in one matmul -> (1, m, (H + 2 Hkv) dh)
    q_end, k_end = w.q_width, w.q_width + w.kv_width
    n_rep = n_heads // n_kv_heads  # query heads per KV head
    q = split_heads(qkv[..., :q_end], n_heads)  # @step attn.q  -> (1, H, m, dh)
    q = edit(edits, "attn.q", q, layer)
    record(trace, "attn.q", q, layer)
    k = split_heads(qkv[..., q_end:k_end], n_kv_heads)  # @step attn.k  -> (1, Hkv, m, dh)
    k = edit(edits, "attn.k", k, layer)
    record(trace, "attn.k", k, layer, group=n_rep)
    v = split_heads(qkv[..., k_end:], n_kv_heads)  # @step attn.v  -> (1, Hkv, m, dh)
    v = edit(edits, "attn.v", v, layer)
    record(trace, "attn.v", v, layer, group=n_rep)
    q = apply_rope(q, cos, sin)  # @step attn.q_rope
    q = edit(edits, "attn.q_rope", q, layer)
    record(trace, "attn.q_rope", q, layer)
    k = apply_rope(k, cos, sin)  # @step attn.k_rope
    k = edit(edits, "attn.k_rope", k, layer)
    record(trace, "attn.k_rope", k, layer, group=n_rep)
    if cache is not None:  # generation: the new position attends to every position so far
        k, v = cache.extend(layer, k, v)  # -> (1, Hkv, n, dh)
    if keep is not None and trace is None and edits is None and cache is None:
        # a training step records nothing between the scores and the context: causal blocks
        context, weights = causal_attention(q, k, v, n_kv_heads)
    else:
        scale = np.float32(1.0 / np.sqrt(q.shape[-1]))
        scores = ungroup_queries(group_queries(q, n_kv_heads) @ k.transpose(0, 1, 3, 2),
                                 n_heads) * scale  # @step attn.scores  -> (1, H, m, n)
        scores = edit(edits, "attn.scores", scores, layer)
        record(trace, "attn.scores", scores, layer)
        # the mask and the softmax write into the scores' own array, which nothing reads after
        # (a Tracer keeps copies; an edit returns a new array): two (1, H, m, n) tables fewer
        masked = causal_mask(scores, out=scores)  # @step attn.mask
        masked = edit(edits, "attn.mask", masked, layer)
        record(trace, "attn.mask", masked, layer)
        weights = softmax(masked, out=masked)  # @step attn.softmax
        weights = edit(edits, "attn.softmax", weights, layer)
        record(trace, "attn.softmax", weights, layer)
        context = ungroup_queries(group_queries(weights, n_kv_heads) @ v, n_heads)  # @step attn.context  -> (1, H, m, dh)
        context = edit(edits, "attn.context", context, layer)
        record(trace, "attn.context", context, layer)
    out = linear(merge_heads(context), w.wo)  # @step attn.out  -> (1, m, d)
    out = edit(edits, "attn.out", out, layer)
    record(trace, "attn.out", out, layer)
    if keep is not None:  # for self_attention_backward
        keep.x, keep.h, keep.q, keep.k, keep.v = x, h, q, k, v
        keep.weights, keep.context = weights, context
    return out


def context_backward(dcontext: Tensor, weights: Tensor, v: Tensor,
                     n_kv_heads: int) -> tuple[Tensor, Tensor]:
    """C⁽ʳ⁾ = A⁽ʳ⁾ V⁽ᵍ⁽ʳ⁾⁾: ∂L/∂A⁽ʳ⁾ = ∂L/∂C⁽ʳ⁾ V⁽ᵍ⁽ʳ⁾⁾ᵀ, and ∂L/∂V⁽ᵍ⁾ = Σ_(r: g(r)=g)
    A⁽ʳ⁾ᵀ ∂L/∂C⁽ʳ⁾: the query heads stacked per KV head (``group_queries``) make that sum
    the matmul's own sum over rows, one matmul per KV head."""
    n_heads = dcontext.shape[1]
    dc = group_queries(dcontext, n_kv_heads)                                  # (b, Hkv, r n, dh)
    dweights = ungroup_queries(dc @ v.transpose(0, 1, 3, 2), n_heads)        # (b, H, n, n)
    dv = group_queries(weights, n_kv_heads).transpose(0, 1, 3, 2) @ dc       # (b, Hkv, n, dh)
    return dweights, dv


def scores_backward(dscores: Tensor, q: Tensor, k: Tensor,
                    n_kv_heads: int) -> tuple[Tensor, Tensor]:
    """S⁽ʳ⁾ = Q̃⁽ʳ⁾ K̃⁽ᵍ⁽ʳ⁾⁾ᵀ / √dh: ∂L/∂Q̃⁽ʳ⁾ = ∂L/∂S⁽ʳ⁾ K̃⁽ᵍ⁽ʳ⁾⁾ / √dh and ∂L/∂K̃⁽ᵍ⁾ =
    Σ_(r: g(r)=g) ∂L/∂S⁽ʳ⁾ᵀ Q̃⁽ʳ⁾ / √dh, the KV head summing its query heads' shares."""
    n_heads, scale = dscores.shape[1], np.float32(1.0 / np.sqrt(q.shape[-1]))
    ds = group_queries(dscores, n_kv_heads)                                   # (b, Hkv, r n, n)
    dq = ungroup_queries(ds @ k, n_heads)                                     # (b, H, n, dh)
    dk = ds.transpose(0, 1, 3, 2) @ group_queries(q, n_kv_heads)              # (b, Hkv, n, dh)
    dq *= scale  # scaled here, on (n, dh) arrays, not on the larger (n, n) ones
    dk *= scale
    return dq, dk


# a training step's attention backward works on blocks of at least this many queries
_QUERY_BLOCK = 32


def query_blocks(n: int) -> list[tuple[int, int]]:
    """The causal blocks of a training step's attention: (start, end) of each block of
    queries, which sees keys [0, end) only. Blocks of at least 32 queries (``_QUERY_BLOCK``),
    the first at least two of them: a product of fewer than about 1,500 scores OpenBLAS
    computes with another kernel, whose float32 rounding differs from the whole table's."""
    size = max(_QUERY_BLOCK, -(-n // 4))
    first = min(n, 2 * size)
    return [(0, first)] + [(s, min(n, s + size)) for s in range(first, n, size)]


def causal_attention(q: Tensor, k: Tensor, v: Tensor, n_kv_heads: int) -> tuple[Tensor, Tensor]:
    """The context and the attention weights, (b, H, n, dh) and (b, H, n, n), from the
    rotated queries and keys and the values: what the lines marked ``@step`` from
    ``attn.scores`` to ``attn.context`` compute, for a training step, where nothing records
    or edits the tables between them. Each block of queries (``query_blocks``) is computed
    against only the keys it can see, skipping the corner the mask hides (at n = 128, 5/16 of
    the work), with the r query heads of a KV head stacked as ``group_queries`` stacks them.
    The weights after each query are written as the exact zeros the softmax gives them.
    The same numbers up to float32 rounding (the same bits with some OpenBLAS kernels)."""
    b, n_heads, n, dh = q.shape
    r = n_heads // n_kv_heads
    scale = np.float32(1.0 / np.sqrt(dh))
    q5 = q.reshape(b, n_kv_heads, r, n, dh)  # the query heads of one KV head side by side
    weights = np.empty((b, n_kv_heads, r, n, n), dtype=np.float32)
    context = np.empty((b, n_kv_heads, r, n, dh), dtype=np.float32)
    keys_t = k.transpose(0, 1, 3, 2)                                           # (b, Hkv, dh, n)
    for s, e in query_blocks(n):
        block_q = q5[:, :, :, s:e].reshape(b, n_kv_heads, r * (e - s), dh)  # a view if r = 1
        scores = block_q @ keys_t[..., :e]                                     # (b, Hkv, r B, e)
        scores *= scale
        # the mask as an addition of 0 or −∞ (cheaper than a masked write here; an infinite
        # score the mask hides becomes NaN instead of −∞, and the loss refuses it)
        per_head = scores.reshape(b, n_kv_heads, r, e - s, e)  # a view: adds in place
        per_head += _hidden(e - s, e)
        block_w = softmax(scores, out=scores)
        weights[:, :, :, s:e, :e] = block_w.reshape(b, n_kv_heads, r, e - s, e)
        weights[:, :, :, s:e, e:] = 0
        context[:, :, :, s:e] = (block_w @ v[:, :, :e]).reshape(b, n_kv_heads, r, e - s, dh)
    return context.reshape(b, n_heads, n, dh), weights.reshape(b, n_heads, n, n)


def causal_attention_backward(dcontext: Tensor, weights: Tensor, q: Tensor, k: Tensor,
                              v: Tensor, n_kv_heads: int) -> tuple[Tensor, Tensor, Tensor]:
    """∂L/∂Q̃, ∂L/∂K̃ and ∂L/∂V from ∂L/∂C: what ``context_backward``, ``softmax_backward``,
    ``causal_mask_backward`` and ``scores_backward`` compute in turn (the lines marked
    ``@grad``), for a training step, where nothing records the (n, n) gradients between them.
    Query i sees keys 0..i only, and its attention weights after i are exactly 0, so so are
    its ∂L/∂S there: each block of queries [s, e) is computed against keys [0, e) alone, and
    the masked corner of every (n, n) product is skipped (at n = 128 in blocks of 32, 3/8 of
    the work; 2.4x faster at the d128 benchmark's shape). The same numbers up to float32
    rounding, and no (b, H, n, n) gradient allocated."""
    b, n_heads, n, dh = q.shape
    r = n_heads // n_kv_heads
    scale = np.float32(1.0 / np.sqrt(dh))
    # the query heads of one KV head side by side: (b, Hkv, r, n, ...)
    dc5, q5 = dcontext.reshape(b, n_kv_heads, r, n, dh), q.reshape(b, n_kv_heads, r, n, dh)
    w5 = weights.reshape(b, n_kv_heads, r, n, n)
    dq = np.empty((b, n_kv_heads, r, n, dh), dtype=np.float32)
    dk = np.zeros((b, n_kv_heads, n, dh), dtype=np.float32)
    dv = np.zeros((b, n_kv_heads, n, dh), dtype=np.float32)
    size = max(_QUERY_BLOCK, -(-n // 4))
    for s in range(0, n, size):
        e = min(n, s + size)
        rows = r * (e - s)  # the block's queries of the r heads, stacked as group_queries does
        w = w5[:, :, :, s:e, :e]                                               # (b, Hkv, r, B, e)
        # the block's rows of the r heads stacked (b, Hkv, r B, ...): a copy when r > 1, else
        # a view whose rows BLAS reads in place
        dc = dc5[:, :, :, s:e].reshape(b, n_kv_heads, rows, dh)
        # ∂L/∂A (.., B, e): the r heads' rows in one matmul per KV head, as the forward stacks
        # them (a matmul broadcasting V over the r axis is 2-3x slower here: the same bits)
        ds = (dc @ v[:, :, :e].transpose(0, 1, 3, 2)).reshape(b, n_kv_heads, r, e - s, e)
        ds -= np.einsum("...j,...j->...", ds, w)[..., None]                    # softmax's JVP:
        ds *= w                                                                # ∂L/∂S, 0 after i
        dq[:, :, :, s:e] = ds @ k[:, :, None, :e]                              # (b, Hkv, r, B, dh)
        block_q = q5[:, :, :, s:e].reshape(b, n_kv_heads, rows, dh)
        dk[:, :, :e] += ds.reshape(b, n_kv_heads, rows, e).transpose(0, 1, 3, 2) @ block_q
        block_w = w.reshape(b, n_kv_heads, rows, e)
        dv[:, :, :e] += block_w.transpose(0, 1, 3, 2) @ dc
    dq *= scale
    dk *= scale
    return dq.reshape(b, n_heads, n, dh), dk, dv


def self_attention_backward(dout: Tensor, w: BlockWeights, kept: BlockCache, cos: Tensor,
                            sin: Tensor, n_kv_heads: int, eps: float,
                            grad_trace: Tracer | None, layer: int) -> tuple[Tensor, dict]:
    """∂L/∂x⁽ˡ⁾ through the attention branch, from ∂L/∂o = ``dout`` (b, n, d), and the
    gradients of the branch's weights. Records ∂L/∂value of each attention step."""
    b, n, _ = dout.shape
    n_heads = kept.q.shape[1]
    n_rep = n_heads // n_kv_heads
    grads = {}
    record(grad_trace, "attn.out", dout, layer)
    dmerged, grads["wo"] = linear_backward(dout, merge_heads(kept.context), w.wo)  # @grad attn.out
    dcontext = split_heads(dmerged, n_heads)  # (b, H, n, dh)
    record(grad_trace, "attn.context", dcontext, layer)
    if grad_trace is None:  # nothing records the (n, n) gradients: the causal blocks alone
        dq_rope, dk_rope, dv = causal_attention_backward(dcontext, kept.weights, kept.q, kept.k,
                                                         kept.v, n_kv_heads)
    else:
        dweights, dv = context_backward(dcontext, kept.weights, kept.v, n_kv_heads)  # @grad attn.context
        record(grad_trace, "attn.softmax", dweights, layer)
        dmasked = softmax_backward(dweights, kept.weights, out=dweights)  # @grad attn.softmax
        record(grad_trace, "attn.mask", dmasked, layer)
        dscores = causal_mask_backward(dmasked)  # @grad attn.mask
        record(grad_trace, "attn.scores", dscores, layer)
        dq_rope, dk_rope = scores_backward(dscores, kept.q, kept.k, n_kv_heads)  # @grad attn.scores
    record(grad_trace, "attn.k_rope", dk_rope, layer, group=n_rep)
    record(grad_trace, "attn.q_rope", dq_rope, layer)
    # ∂L/∂[Q | K | V] in the fused matrix's layout (b, n, (H + 2 Hkv) dh): each head-split
    # gradient is written straight into its band through a split_heads view
    q_end, k_end = w.q_width, w.q_width + w.kv_width
    dqkv = np.empty((b, n, k_end + w.kv_width), dtype=np.float32)
    dk = apply_rope_backward(dk_rope, cos, sin, out=split_heads(dqkv[..., q_end:k_end], n_kv_heads))  # @grad attn.k_rope
    dq = apply_rope_backward(dq_rope, cos, sin, out=split_heads(dqkv[..., :q_end], n_heads))  # @grad attn.q_rope
    split_heads(dqkv[..., k_end:], n_kv_heads)[...] = dv
    record(grad_trace, "attn.v", dv, layer, group=n_rep)
    record(grad_trace, "attn.k", dk, layer, group=n_rep)
    record(grad_trace, "attn.q", dq, layer)
    dqkv2, h2 = dqkv.reshape(b * n, -1), kept.h.reshape(b * n, -1)  # (N, (H + 2 Hkv) dh), (N, d)
    # W̄_Q, W̄_K and W̄_V in one matmul, into the fused matrix's memory layout: its bands
    # ([:q_end], [q_end:k_end], [k_end:]) are the three gradients
    grads["w_qkv"] = dw = weight_gradient(dqkv2, h2, w.w_qkv)  # ((H + 2 Hkv) dh, d)
    grads["wv"] = dw[k_end:]  # @grad attn.v
    grads["wk"] = dw[q_end:k_end]  # @grad attn.k
    grads["wq"] = dw[:q_end]  # @grad attn.q
    # ∂L/∂h: the shares of Q, K and V in one matmul with the fused matrix, as the forward
    dh = (dqkv2 @ w.w_qkv).reshape(b, n, -1)  # (b, n, d)
    record(grad_trace, "attn.norm", dh, layer)
    dx, grads["attn_norm"] = rms_norm_backward(dh, kept.x, w.attn_norm, eps)  # @grad attn.norm
    return dx, grads


def mlp(x: Tensor, w: BlockWeights, eps: float, trace: Tracer | None, layer: int,
        edits: Edits | None = None, keep: BlockCache | None = None) -> Tensor:
    h = rms_norm(x, w.mlp_norm, eps)  # @step mlp.norm
    h = edit(edits, "mlp.norm", h, layer)
    record(trace, "mlp.norm", h, layer)
    gate_up = linear(h, w.w_gate_up)  # gate and up projections in one matmul -> (1, m, 2f)
    f = gate_up.shape[-1] // 2
    gate = gate_up[..., :f]  # @step mlp.gate  -> (1, m, f)
    gate = edit(edits, "mlp.gate", gate, layer)
    record(trace, "mlp.gate", gate, layer)
    up = gate_up[..., f:]  # @step mlp.up
    up = edit(edits, "mlp.up", up, layer)
    record(trace, "mlp.up", up, layer)
    # a training step keeps silu's denominator 1 + e^(-gate) for swiglu_backward
    denominator = None if keep is None else silu_denominator(gate)
    act = silu(gate, denominator) * up  # @step mlp.act
    act = edit(edits, "mlp.act", act, layer)
    record(trace, "mlp.act", act, layer)
    down = linear(act, w.w_down)  # @step mlp.down  -> (1, m, d)
    down = edit(edits, "mlp.down", down, layer)
    record(trace, "mlp.down", down, layer)
    if keep is not None:  # for mlp_backward
        keep.x_half, keep.h_mlp, keep.gate, keep.up, keep.act = x, h, gate, up, act
        keep.denominator = denominator
    return down


def mlp_backward(ddown: Tensor, w: BlockWeights, kept: BlockCache, eps: float,
                 grad_trace: Tracer | None, layer: int) -> tuple[Tensor, dict]:
    """∂L/∂x⁽ˡ⁺½⁾ through the MLP branch, from ∂L/∂m = ``ddown`` (b, n, d), and the
    gradients of the branch's weights. Records ∂L/∂value of each MLP step."""
    b, n, _ = ddown.shape
    grads = {}
    record(grad_trace, "mlp.down", ddown, layer)
    dact, grads["w_down"] = linear_backward(ddown, kept.act, w.w_down)  # @grad mlp.down
    record(grad_trace, "mlp.act", dact, layer)
    f = dact.shape[-1]
    dgate_up = np.empty((b * n, 2 * f), dtype=np.float32)  # ∂L/∂[a | b], the fused layout
    swiglu_backward(kept.gate, kept.up, dact, dgate_up.reshape(b, n, 2 * f), kept.denominator)  # @grad mlp.act
    record(grad_trace, "mlp.up", dgate_up[None, :, f:], layer)
    record(grad_trace, "mlp.gate", dgate_up[None, :, :f], layer)
    h2 = kept.h_mlp.reshape(b * n, -1)  # (N, d)
    # W̄_gate and W̄_up in one matmul, into the fused matrix's layout: its bands [:f], [f:]
    grads["w_gate_up"] = dw = weight_gradient(dgate_up, h2, w.w_gate_up)  # (2f, d)
    grads["w_up"] = dw[f:]  # @grad mlp.up
    grads["w_gate"] = dw[:f]  # @grad mlp.gate
    # ∂L/∂h′: the shares of gate and up in one matmul with the fused matrix, as the forward
    dh = (dgate_up @ w.w_gate_up).reshape(b, n, -1)  # (b, n, d)
    record(grad_trace, "mlp.norm", dh, layer)
    dx, grads["mlp_norm"] = rms_norm_backward(dh, kept.x_half, w.mlp_norm, eps)  # @grad mlp.norm
    return dx, grads


def transformer_block(x: Tensor, w: BlockWeights, cos: Tensor, sin: Tensor, n_heads: int,
                      n_kv_heads: int, eps: float, trace: Tracer | None, layer: int,
                      edits: Edits | None = None, cache: KVCache | None = None,
                      keep: list[BlockCache] | None = None) -> Tensor:
    """Pre-norm residual block: x + attention(norm(x)), then + mlp(norm(.)).

    ``cos`` and ``sin`` are the RoPE angles of the m positions in ``x``; with a ``cache`` the
    block stores their keys and values and attends to every cached position. With ``keep``
    (a list) the block appends its ``BlockCache`` for the backward pass."""
    kept = None if keep is None else BlockCache()
    x = x + self_attention(x, w, cos, sin, n_heads, n_kv_heads, eps, trace, layer, edits, cache, kept)  # @step attn.residual
    x = edit(edits, "attn.residual", x, layer)
    record(trace, "attn.residual", x, layer)
    x = x + mlp(x, w, eps, trace, layer, edits, kept)  # @step mlp.residual
    x = edit(edits, "mlp.residual", x, layer)
    record(trace, "mlp.residual", x, layer)
    if keep is not None:
        keep.append(kept)
    return x


def transformer_block_backward(dx: Tensor, w: BlockWeights, kept: BlockCache, cos: Tensor,
                               sin: Tensor, n_kv_heads: int, eps: float,
                               grad_trace: Tracer | None, layer: int) -> tuple[Tensor, dict]:
    """∂L/∂x⁽ˡ⁾ from ∂L/∂x⁽ˡ⁺¹⁾ = ``dx`` (b, n, d), and the block's weight gradients (keyed
    by ``BlockWeights`` attribute: the fused ``w_qkv`` and ``w_gate_up``, and their parts
    ``wq``, ``wk``, ``wv``, ``w_gate``, ``w_up`` as views of their bands). A residual
    x + f(x) passes its gradient both ways: unchanged along the stream, and through f."""
    record(grad_trace, "mlp.residual", dx, layer)
    dx_half, grads = mlp_backward(dx, w, kept, eps, grad_trace, layer)
    dx_half += dx  # @grad mlp.residual
    record(grad_trace, "attn.residual", dx_half, layer)
    dx_in, attn_grads = self_attention_backward(dx_half, w, kept, cos, sin, n_kv_heads, eps,
                                                grad_trace, layer)
    grads.update(attn_grads)
    dx_in += dx_half  # @grad attn.residual
    return dx_in, grads
