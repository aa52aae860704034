"""Training's update rule: AdamW as ``torch.optim.AdamW`` computes it, plus nanoGPT's two
helpers, a warm-up + cosine learning-rate schedule and global-norm gradient clipping.

    opt = AdamW(model, lr=1e-3, weight_decay=0.1)
    loss, grads = model.gradients(tokens, targets)
    clip_grad_norm(grads, 1.0)
    opt.lr = lr_at(step, lr=1e-3, min_lr=1e-4, warmup=100, steps=2000)
    opt.step(grads)

One AdamW step for a weight p with gradient g, step count t (from 1), as PyTorch does it on
the CPU (``torch/optim/adam.py``, ``_single_tensor_adam`` with ``decoupled_weight_decay``)::

    p <- p * (1 - lr * weight_decay)              decoupled weight decay
    m <- m + (1 - beta1) * (g - m)                first moment (torch's lerp)
    v <- v * beta2 + (1 - beta2) * g * g          second moment
    p <- p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

The moments are float32 arrays. They, and the weights, are updated in the model's own
storage: q, k and v are rows of one stacked matrix ``w_qkv``, gate and up of ``w_gate_up``
(``glassllm.nn.BlockWeights``), and a tied output layer is the embedding matrix itself, so it
is updated once. The gradients arrive under ``state_dict()``'s names; each stacked matrix
gets its bands copied into one buffer laid out like the weight, so every update is a few
in-place passes over contiguous memory.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Iterable, Mapping

import numpy as np

from ..model import GlassLM

_ALL = slice(None)
# floats per chunk of the update: 128 KB an array, the five arrays fit in L2. At d288 6%
# faster than 16,384 (half as many NumPy calls); 65,536 is no faster
CHUNK = 32768
# BlockWeights attribute -> its state_dict() names, with the rows each takes in the attribute
_STACKED = {"w_qkv": ("self_attn.q_proj.weight", "self_attn.k_proj.weight",
                      "self_attn.v_proj.weight"),
            "w_gate_up": ("mlp.gate_proj.weight", "mlp.up_proj.weight")}
_BLOCK_SLOTS = ("attn_norm", "w_qkv", "wo", "mlp_norm", "w_gate_up", "w_down")


class _Slot:
    """One array of the model's storage and the state_dict() names that live in it."""

    def __init__(self, owner, attribute: str, parts: list[tuple[str, slice]]) -> None:
        self.owner, self.attribute, self.parts = owner, attribute, parts

    @property
    def array(self) -> np.ndarray:
        # read at every step: load_state_dict replaces the arrays, it does not write into them
        return getattr(self.owner, self.attribute)


def _slots(model: GlassLM) -> list[_Slot]:
    """The model's parameter storage, in state_dict() order."""
    names = {attr: name for name, attr in GlassLM._BLOCK_NAMES.items()}
    slots = [_Slot(model, "embed_tokens", [("model.embed_tokens.weight", _ALL)])]
    for i, block in enumerate(model.layers):
        prefix = f"model.layers.{i}."
        for attribute in _BLOCK_SLOTS:
            if attribute in _STACKED:
                parts = [(prefix + name, band) for name, band in
                         zip(_STACKED[attribute], block.bands(attribute))]
            else:
                parts = [(prefix + names[attribute], _ALL)]
            slots.append(_Slot(block, attribute, parts))
    slots.append(_Slot(model, "norm", [("model.norm.weight", _ALL)]))
    if not model.config.tie_word_embeddings:  # tied: lm_head is embed_tokens, updated once
        slots.append(_Slot(model, "lm_head", [("lm_head.weight", _ALL)]))
    return slots


def _flat(array: np.ndarray) -> np.ndarray:
    """A 1-D view of a C- or Fortran-contiguous array, in memory order."""
    return array.reshape(-1, order="F" if array.flags.f_contiguous
                         and not array.flags.c_contiguous else "C")


def _same_layout(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.flags.c_contiguous == b.flags.c_contiguous
            and a.flags.f_contiguous == b.flags.f_contiguous)


def _whole(weight: np.ndarray, bands: list[tuple[str, slice]], parts: list[np.ndarray]):
    """The gradient of a whole storage array without a copy, where the gradients given are
    already laid out like it: one array, or the bands of one stacked array (as
    GlassLM.gradients cuts a fused matrix's gradient); None otherwise."""
    if len(parts) == 1:
        whole = parts[0]
    else:
        whole = parts[0].base  # the array that owns the memory: the matrix or its transpose
        if not isinstance(whole, np.ndarray):
            return None
        if whole.shape != weight.shape:
            if whole.shape[::-1] != weight.shape:
                return None
            whole = whole.T
        for (_, band), part in zip(bands, parts):
            view = whole[band]
            if (part.strides != view.strides
                    or part.ctypes.data != view.ctypes.data):
                return None
    if whole.dtype != np.float32 or not _same_layout(whole, weight):
        return None
    return whole


def _check_number(name: str, value, low: float, high: float = math.inf, *,
                  high_open: bool = False) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (low <= value and (value < high if high_open else value <= high)):
        bound = f"[{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {bound}, got {value!r}")
    return value


def _all_finite(array: np.ndarray) -> bool:
    """True when every entry is finite: a NaN or inf makes the sum of squares NaN or inf (a
    BLAS dot product, the cheapest full pass). One that overflows from finite entries alone
    is told apart by the exact check."""
    flat = array.ravel(order="K")  # no copy for a C- or Fortran-contiguous array
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.dot(flat, flat)
    return bool(np.isfinite(total)) or bool(np.isfinite(array).all())


class AdamW:
    """``torch.optim.AdamW`` with one parameter group holding every parameter of ``model``.

    ``no_decay``: state_dict() names that get no weight decay (nanoGPT decays only the
    matrices: pass the names of the 1-D norm gains); torch would need a second group."""

    def __init__(self, model: GlassLM, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, *, no_decay: Iterable[str] = ()) -> None:
        if not isinstance(model, GlassLM):
            raise TypeError(f"AdamW needs a glassllm.GlassLM, got {type(model).__name__}")
        try:
            beta1, beta2 = betas
        except (TypeError, ValueError):
            raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}") from None
        self.model = model
        self.lr = lr
        self.betas = (_check_number("betas[0]", beta1, 0.0, 1.0, high_open=True),
                      _check_number("betas[1]", beta2, 0.0, 1.0, high_open=True))
        self.eps = _check_number("eps", eps, 0.0)
        self.weight_decay = _check_number("weight_decay", weight_decay, 0.0)
        self._slots = _slots(model)
        self.names = [name for slot in self._slots for name, _ in slot.parts]
        if isinstance(no_decay, str):
            raise ValueError("no_decay must be a collection of state_dict() names, not one "
                             "string")
        self.no_decay = frozenset(no_decay)
        unknown = sorted(self.no_decay - set(self.names))
        if unknown:
            raise ValueError(f"no_decay names {unknown}, which are not parameters of this "
                             f"model; use names of model.state_dict()")
        for slot in self._slots:
            decayed = {name not in self.no_decay for name, _ in slot.parts}
            if len(decayed) > 1:
                raise ValueError(f"no_decay must hold all or none of "
                                 f"{[name for name, _ in slot.parts]}: they are one matrix")
        self._decays = [slot.parts[0][0] not in self.no_decay for slot in self._slots]
        # moments and scratch laid out like each weight (C or Fortran order), so every
        # in-place operation runs over contiguous memory
        self.exp_avg = [np.zeros_like(slot.array) for slot in self._slots]
        self.exp_avg_sq = [np.zeros_like(slot.array) for slot in self._slots]
        self._grad: list[np.ndarray | None] = [None] * len(self._slots)  # made when needed
        self._chunk_scratch = np.empty(CHUNK, dtype=np.float32)
        self.step_count = 0

    @property
    def lr(self) -> float:
        return self._lr

    @lr.setter
    def lr(self, value) -> None:
        self._lr = _check_number("lr", value, 0.0)

    def restart(self) -> None:
        """Start again as a new AdamW of the same model would: both moments 0, step count 0."""
        for m, v in zip(self.exp_avg, self.exp_avg_sq):
            m.fill(0)
            v.fill(0)
        self.step_count = 0

    # -- one step --------------------------------------------------------------------------

    def step(self, grads: Mapping[str, np.ndarray]) -> None:
        """Update every weight from ``grads`` (∂loss/∂parameter under state_dict()'s names,
        as ``GlassLM.gradients`` returns). Everything is checked first: a missing, extra,
        misshapen or non-finite gradient is a ``ValueError`` and no weight changes."""
        gathered = self._gather(grads)
        self.step_count += 1
        t = self.step_count
        beta1, beta2 = self.betas
        lr = self.lr
        bias_correction1 = 1 - beta1 ** t
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** t)
        step_size = lr / bias_correction1
        with np.errstate(over="ignore"):  # g * g beyond float32 is inf in v, as in torch
            self._update(gathered, lr, step_size, bias_correction2_sqrt)

    def _update(self, gathered, lr: float, step_size: float, bias_correction2_sqrt: float) -> None:
        beta1, beta2 = self.betas
        f32 = np.float32
        decay = f32(1 - lr * self.weight_decay)
        one_minus_beta1, one_minus_beta2 = f32(1 - beta1), f32(1 - beta2)
        # sqrt(v / c2) + eps = (sqrt(v) + eps sqrt(c2)) / sqrt(c2): one division fewer per entry
        beta2, eps = f32(beta2), f32(self.eps * bias_correction2_sqrt)
        minus_step = f32(-step_size * bias_correction2_sqrt)
        scratch = self._chunk_scratch
        for slot, g, m, v, decays in zip(self._slots, gathered, self.exp_avg, self.exp_avg_sq,
                                         self._decays):
            p = slot.array
            decays = decays and self.weight_decay != 0
            # one chunk at a time through every operation, so that the chunk's p, g, m and v
            # stay in the CPU cache instead of being streamed from memory once per operation
            p, g, m, v = (_flat(a) for a in (p, g, m, v))
            for start in range(0, p.size, CHUNK):
                stop = min(start + CHUNK, p.size)
                pc, gc, mc, vc = p[start:stop], g[start:stop], m[start:stop], v[start:stop]
                tmp = scratch[:stop - start]
                if decays:
                    pc *= decay                                 # decoupled weight decay
                np.subtract(gc, mc, out=tmp)
                tmp *= one_minus_beta1
                mc += tmp                                       # m + (1 - b1)(g - m)
                vc *= beta2
                np.multiply(gc, one_minus_beta2, out=tmp)
                tmp *= gc
                vc += tmp                                       # b2 v + (1 - b2) g g
                np.sqrt(vc, out=tmp)
                tmp += eps                                      # sqrt(c2) (sqrt(v_hat) + eps)
                np.divide(mc, tmp, out=tmp)
                tmp *= minus_step
                pc += tmp                                       # p - step_size m_hat / (...)

    def _gather(self, grads) -> list[np.ndarray]:
        """Each slot's gradient laid out like its weight, every entry checked."""
        if not isinstance(grads, Mapping):
            raise ValueError(f"grads must be a dict of state_dict() names to arrays (as "
                             f"GlassLM.gradients returns), got {type(grads).__name__}")
        missing = [name for name in self.names if name not in grads]
        unexpected = sorted(set(grads) - set(self.names), key=str)
        if missing or unexpected:
            raise ValueError(f"grads must have exactly the names of model.state_dict(): "
                             f"missing {missing[:5]}{' ...' if len(missing) > 5 else ''}, "
                             f"unexpected {unexpected[:5]}"
                             f"{' ...' if len(unexpected) > 5 else ''}")
        gathered = []
        for i, slot in enumerate(self._slots):
            weight = slot.array
            parts = []
            for name, band in slot.parts:
                g = grads[name]
                g = g if isinstance(g, np.ndarray) else np.asarray(g)
                shape = weight[band].shape
                if g.shape != shape:
                    raise ValueError(f"grads[{name!r}] has shape {g.shape}, the parameter has "
                                     f"{shape}")
                if g.dtype.kind != "f":
                    raise ValueError(f"grads[{name!r}] has dtype {g.dtype}; gradients are "
                                     f"float arrays")
                parts.append(g)
            whole = _whole(weight, slot.parts, parts)
            # every entry checked: once over the whole array when the parts are its bands (a
            # band of a column-major matrix is not contiguous, so checking it alone copies it)
            if whole is None or not _all_finite(whole):
                for (name, _), g in zip(slot.parts, parts):
                    if not _all_finite(g):
                        raise ValueError(f"grads[{name!r}] holds NaN or infinite values; no "
                                         f"weight was changed (lower the learning rate, or "
                                         f"clip the gradients with clip_grad_norm)")
            if whole is None:  # copied into a buffer laid out like the weight
                if self._grad[i] is None:
                    self._grad[i] = np.zeros_like(weight)
                whole = self._grad[i]
                for (_, band), g in zip(slot.parts, parts):
                    whole[band] = g
            gathered.append(whole)
        return gathered

    # -- resuming --------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """The optimiser's state: hyperparameters, the step count and both moments of every
        parameter under state_dict()'s names (copies)."""
        exp_avg, exp_avg_sq = {}, {}
        for slot, m, v in zip(self._slots, self.exp_avg, self.exp_avg_sq):
            for name, band in slot.parts:
                exp_avg[name] = np.ascontiguousarray(m[band])
                exp_avg_sq[name] = np.ascontiguousarray(v[band])
        return {"step": self.step_count, "lr": self.lr, "betas": list(self.betas),
                "eps": self.eps, "weight_decay": self.weight_decay,
                "no_decay": sorted(self.no_decay), "exp_avg": exp_avg,
                "exp_avg_sq": exp_avg_sq}

    def load_state_dict(self, state: Mapping) -> None:
        """Restore a ``state_dict()``; everything is checked before anything changes."""
        if not isinstance(state, Mapping):
            raise ValueError(f"state must be a dict from AdamW.state_dict(), got "
                             f"{type(state).__name__}")
        keys = {"step", "lr", "betas", "eps", "weight_decay", "no_decay", "exp_avg",
                "exp_avg_sq"}
        if set(state) != keys:
            raise ValueError(f"an AdamW state has the keys {sorted(keys)}; got "
                             f"{sorted(map(str, state))}")
        step = state["step"]
        if isinstance(step, (bool, np.bool_)) or not isinstance(step, Integral) or step < 0:
            raise ValueError(f"state['step'] must be a non-negative integer, got {step!r}")
        try:
            betas = tuple(state["betas"])
        except TypeError:
            raise ValueError(f"state['betas'] must be a pair, got {state['betas']!r}") from None
        if len(betas) != 2:
            raise ValueError(f"state['betas'] must be a pair, got {state['betas']!r}")
        lr = _check_number("state['lr']", state["lr"], 0.0)
        betas = (_check_number("state['betas'][0]", betas[0], 0.0, 1.0, high_open=True),
                 _check_number("state['betas'][1]", betas[1], 0.0, 1.0, high_open=True))
        eps = _check_number("state['eps']", state["eps"], 0.0)
        weight_decay = _check_number("state['weight_decay']", state["weight_decay"], 0.0)
        if set(state["no_decay"]) != self.no_decay:
            raise ValueError(f"state['no_decay'] is {sorted(state['no_decay'])}, this AdamW's "
                             f"is {sorted(self.no_decay)}; make the optimiser as the saved one")
        moments = []
        for key in ("exp_avg", "exp_avg_sq"):
            table = state[key]
            if not isinstance(table, Mapping) or set(table) != set(self.names):
                raise ValueError(f"state[{key!r}] must have exactly the names of "
                                 f"model.state_dict()")
            checked = {}
            for slot in self._slots:
                for name, band in slot.parts:
                    array = np.asarray(table[name], dtype=np.float32)
                    shape = slot.array[band].shape
                    if array.shape != shape:
                        raise ValueError(f"state[{key!r}][{name!r}] has shape {array.shape}, "
                                         f"the parameter has {shape}")
                    if not np.isfinite(array).all() or (key == "exp_avg_sq"
                                                        and (array < 0).any()):
                        raise ValueError(f"state[{key!r}][{name!r}] holds values no AdamW "
                                         f"makes (NaN, infinite, or a negative second moment)")
                    checked[name] = array
            moments.append(checked)
        # all checked: now replace
        self.step_count, self.lr, self.betas = int(step), lr, betas
        self.eps, self.weight_decay = eps, weight_decay
        for slot, m, v in zip(self._slots, self.exp_avg, self.exp_avg_sq):
            for name, band in slot.parts:
                m[band] = moments[0][name]
                v[band] = moments[1][name]


# -- nanoGPT's helpers -------------------------------------------------------------------------

def lr_at(step: int, *, lr: float, min_lr: float, warmup: int, steps: int) -> float:
    """The learning rate of step ``step`` (from 0) of a run of ``steps``: a linear warm-up
    to ``lr`` over the first ``warmup`` steps (step s gets lr * (s + 1) / warmup), then a
    cosine from ``lr`` down to ``min_lr`` at the last step; ``min_lr`` after it."""
    for name, value in (("step", step), ("warmup", warmup), ("steps", steps)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    lr = _check_number("lr", lr, 0.0)
    min_lr = _check_number("min_lr", min_lr, 0.0, lr)
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


def clip_grad_norm(grads: Mapping[str, np.ndarray], max_norm: float) -> float:
    """Scale every gradient in place by min(1, max_norm / (total_norm + 1e-6)), as
    ``torch.nn.utils.clip_grad_norm_`` does; return the total norm before clipping, the
    2-norm of all the gradients as one vector. A non-finite norm is a ``ValueError``."""
    max_norm = _check_number("max_norm", max_norm, 0.0)
    if not isinstance(grads, Mapping) or not grads:
        raise ValueError("grads must be a non-empty dict of gradient arrays")
    squares = 0.0
    for name, g in grads.items():
        if not isinstance(g, np.ndarray) or g.dtype.kind != "f":
            raise ValueError(f"grads[{name!r}] must be a float NumPy array, got "
                             f"{type(g).__name__}")
        flat = g.ravel(order="K")  # no copy for a C- or Fortran-contiguous array
        square = float(np.dot(flat, flat))
        if not math.isfinite(square):  # float32 overflow, or a NaN/inf entry
            if not np.isfinite(g).all():
                raise ValueError(f"grads[{name!r}] holds NaN or infinite values: the loss "
                                 f"diverged; lower the learning rate")
            square = float(np.dot(flat.astype(np.float64), flat.astype(np.float64)))
        squares += square
    total = math.sqrt(squares)
    scale = min(1.0, max_norm / (total + 1e-6))
    if scale < 1.0:
        for g in grads.values():
            g *= np.float32(scale)
    return total
