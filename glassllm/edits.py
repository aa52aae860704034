"""Edits: change one marked step's value during a run and see what the rest of the model does.

The tracer only watches; an edit intervenes, at one of the same 25 marked steps, so every
intervention has a step page that explains what it touches. ``Ablate`` sets part of a step's
value to zero (or to its mean over the positions of the run); ``Patch`` replaces part of it
with the same part of another value, usually the same step recorded on another text. Pass one
edit or a list of them as ``edit=`` to ``forward``, ``loss`` or ``generate``::

    clean = Tracer()
    model.forward(encode("The cat sat"), clean)
    logits = model.forward(encode("The dog sat"),
                           edit=Patch("attn.residual", clean.get("attn.residual", layer=1)))

Each edit is applied where its step's value is computed, in the order given: the rest of the
model computes from the edited value, and a tracer records the edited value. The weights never
change. An edit selects a part of the value the way the tracer names it:

- ``step_id``: one of ``STEPS`` (else ``KeyError``, as in the tracer);
- ``layer``: the block, for the 18 block steps; ``None`` means every block. Steps outside the
  blocks (``embed``, ``logits``, ``probs``, ...) take no layer;
- ``head``: for the 9 head steps, an index along the value's head axis: a query head ``r`` for
  ``attn.q``, ``attn.q_rope``, ``attn.scores``, ``attn.mask``, ``attn.softmax`` and
  ``attn.context``, a key/value head ``g`` for ``attn.k``, ``attn.v`` and ``attn.k_rope``;
  ``None`` means every head;
- ``positions``: token positions, counted from 0 in the whole sequence, along the value's
  token axis (for the attention tables, the query axis: whole rows); ``None`` means every
  position. ``probs``, ``sample`` and ``loss`` have no token axis and take no positions.

During generation a position keeps its number. ``generate`` with its KV cache computes the
prompt's positions in its first pass and one new position per later pass, so an edit at
position i is applied once, in the pass that computes position i, and the cache keeps the
edited keys and values; a pass that computes none of an edit's positions leaves it alone.
Without the cache (``cache=False``) every pass recomputes positions 0 ... n-1 and applies the
edit to each again. Both give the same tokens, because position i never depends on a later
one. ``mode="mean"`` averages over every position of one pass, which a cached pass (one
position) cannot mean: ``generate`` refuses it unless ``cache=False``.

Anything an edit cannot mean is refused before the run starts, with a ``ValueError`` naming
it: a layer, head or position the model or the run does not have, a head on a step without a
head axis, a source of the wrong shape, an edit of a step that this kind of run never
computes (``loss`` in ``forward``, ``probs`` outside ``generate``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from .steps import HEAD_STEPS, STEP_FACTS, STEPS
from .trace import StepRecord

MODES = ("zero", "mean")
RUNS = ("forward", "loss", "generation")
# the kinds of step each run computes (StepFacts.where)
_COMPUTED = {"forward": ("model", "block"), "loss": ("model", "block", "training"),
             "generation": ("model", "block", "generation")}
_TOKEN_AXES = ("token", "query")  # the axis ``positions`` selects, first found
_POSITION_AXES = ("token", "query", "key")  # axes whose length is a number of positions


class Edit:
    """An intervention at one marked step: ``Ablate`` or ``Patch``."""

    __slots__ = ()
    step_id: str
    layer: int | None
    head: int | None
    positions: tuple[int, ...] | None

    def _replace(self, part: np.ndarray, index: tuple, start: int) -> np.ndarray:
        raise NotImplementedError

    def apply(self, value: np.ndarray, start: int = 0) -> np.ndarray:
        """The value with this edit's part replaced: a new array, ``value`` itself when the
        pass (positions ``start`` ... ``start + m - 1``) holds none of the edit's positions.

        ``value`` is the step's value as the engine holds it, with the leading batch axis of
        size 1 for the steps of the forward pass."""
        facts = STEP_FACTS[self.step_id]
        batched = facts.where in ("model", "block")
        unbatched = value[0] if batched else value
        index = self._index(np.shape(unbatched), start)
        if index is None:
            return value
        edited = np.array(value, copy=True)  # never write into the model's own array
        target = edited[0] if batched else edited
        target[index] = self._replace(np.asarray(unbatched), index, start)
        return edited

    def _index(self, shape: tuple[int, ...], start: int) -> tuple | None:
        """The selected part of a value of ``shape`` (no batch axis) computed for positions
        ``start`` onwards, as an index; None when none of the positions is in it."""
        axes = STEP_FACTS[self.step_id].axes
        index: list = [slice(None)] * len(axes)
        if self.head is not None:
            index[0] = self.head
        if self.positions is not None:
            axis = _token_axis(axes)
            rows = [p - start for p in self.positions if start <= p < start + shape[axis]]
            if not rows:
                return None
            index[axis] = rows
        return tuple(index)

    def _where(self) -> str:
        parts = [repr(self.step_id)]
        parts += [f"{name}={getattr(self, name)!r}" for name in ("layer", "head")
                  if getattr(self, name) is not None]
        if self.positions is not None:
            parts.append(f"positions={list(self.positions)}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Ablate(Edit):
    """Set the selected part of a step's value to 0 (``mode="zero"``) or to its mean over the
    positions of the pass (``mode="mean"``: each head and feature keeps its own mean).

    ``Ablate("attn.context", layer=1, head=3)`` silences head 3 of block 1: its context rows
    become 0, so it adds nothing to the attention output.
    """

    step_id: str
    layer: int | None = None
    head: int | None = None
    positions: tuple[int, ...] | None = None
    mode: str = "zero"

    def __post_init__(self) -> None:
        _check_selectors(self)
        if self.mode not in MODES:
            raise ValueError(f"Ablate mode must be 'zero' or 'mean', got {self.mode!r}")
        if self.mode == "mean" and _token_axis(STEP_FACTS[self.step_id].axes) is None:
            raise ValueError(f"Ablate({self.step_id!r}, mode='mean') averages over token "
                             f"positions, but step {self.step_id!r} has no token axis; "
                             f"use mode='zero'")

    def __repr__(self) -> str:
        mode = "" if self.mode == "zero" else f", mode={self.mode!r}"
        return f"Ablate({self._where()}{mode})"

    def _replace(self, part: np.ndarray, index: tuple, start: int) -> np.ndarray:
        if self.mode == "zero":
            return np.zeros((), dtype=part.dtype)
        axis = _token_axis(STEP_FACTS[self.step_id].axes)
        mean = part.mean(axis=axis, keepdims=True, dtype=np.float64).astype(part.dtype)
        every_row = index[:axis] + (slice(None),) + index[axis + 1:]
        return mean[every_row]  # broadcast over the selected rows


@dataclass(frozen=True, eq=False, repr=False)
class Patch(Edit):
    """Replace the selected part of a step's value with the same part of ``source``.

    ``source`` is a ``StepRecord`` of the same step (its layer and head are then the patch's,
    unless given) or an array shaped like the step's recorded value: ``(n, d)`` for the
    stream, ``(H, n, n)`` for attention weights, ``(n, d_h)`` for one head when ``head`` is
    given, and so on. Its token axes are positions 0 ... n-1 of the sequence. In ``forward``
    and ``loss`` its shape must be exactly the value's; in ``generate`` it must reach the last
    position the patch touches, and each pass takes the rows of the positions it computes. The
    source is copied: changing the array afterwards does not change the patch.
    """

    step_id: str
    source: np.ndarray
    layer: int | None = None
    head: int | None = None
    positions: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        source = self.source
        if isinstance(source, StepRecord):
            _check_step_id(self.step_id)
            if source.id != self.step_id:
                raise ValueError(f"Patch({self.step_id!r}) was given a record of step "
                                 f"{source.id!r}; patch a step with a record of the same step")
            for name in ("layer", "head"):
                mine, theirs = getattr(self, name), getattr(source, name)
                if theirs is not None and mine is None:
                    object.__setattr__(self, name, theirs)  # patch where the record was taken
                elif theirs is not None and mine != theirs:
                    raise ValueError(f"Patch({self.step_id!r}, {name}={mine!r}) was given a "
                                     f"record of {name} {theirs}; leave {name} out to patch "
                                     f"{name} {theirs}, or pass the record of {name} {mine}")
            per_head = source.head is not None
            source = source.value
        else:
            per_head = None
        _check_selectors(self)
        try:
            array = np.array(source, copy=True)
        except (TypeError, ValueError) as error:
            raise ValueError(f"Patch({self.step_id!r}) source must be a StepRecord or an "
                             f"array of numbers, got {type(source).__name__}: {error}") from None
        if array.dtype.kind not in "iuf":
            raise ValueError(f"Patch({self.step_id!r}) source must hold numbers, got "
                             f"dtype {array.dtype} ({type(source).__name__})")
        axes = STEP_FACTS[self.step_id].axes
        if per_head is None:  # an array: the full value, or one head's part when head is given
            per_head = (self.head is not None and STEP_FACTS[self.step_id].head_axis
                        and array.ndim == len(axes) - 1)
        if array.ndim != len(axes) - per_head:
            expected = ", ".join(axes[per_head:]) or "a scalar"
            raise ValueError(f"Patch({self.step_id!r}) source has {array.ndim} axes (shape "
                             f"{array.shape}) but step {self.step_id!r} records ({expected})")
        with np.errstate(over="ignore"):  # the engine's float32: 1e40 is inf there
            as_float32 = array.astype(np.float32)
        bad = np.isnan(as_float32) | (as_float32 == np.inf)
        if self.step_id != "attn.mask":
            bad |= np.isinf(as_float32)  # -inf is a real part of the causal mask, nowhere else
        if bad.any():
            raise ValueError(f"Patch({self.step_id!r}) source holds NaN or infinite values in "
                             f"float32, the engine's dtype ({int(bad.sum())} of them; float32 "
                             f"reaches ±{np.finfo(np.float32).max:.4g}); patch with finite "
                             f"numbers")
        if np.isinf(as_float32).any():  # the mask's -1e40 is its -inf in float32: say so
            array = np.where(np.isinf(as_float32), -np.inf, array)
        array.flags.writeable = False
        object.__setattr__(self, "source", array)
        object.__setattr__(self, "_per_head", bool(per_head))

    def __repr__(self) -> str:
        return f"Patch({self._where()}, source of shape {self.source.shape})"

    def _replace(self, part: np.ndarray, index: tuple, start: int) -> np.ndarray:
        axes = STEP_FACTS[self.step_id].axes
        source, source_index = self.source, index
        if self._per_head:  # the source has no head axis
            axes, source_index = axes[1:], index[1:]
        window = [slice(None)] * len(axes)
        for axis, name in enumerate(axes):
            length = part.shape[axis + (len(part.shape) - len(axes))]
            if name in _TOKEN_AXES:
                window[axis] = slice(start, start + length)  # this pass's positions
            elif name == "key":
                window[axis] = slice(0, length)  # the keys this pass attends to
        return source[tuple(window)][source_index]


class Edits:
    """The edits of one run, checked against the model (``prepare``) and grouped by step.

    ``start`` is the position of the first row of the pass being computed: 0 in a forward
    pass, the new token's position in a cached generation step.
    """

    __slots__ = ("by_step", "start")

    def __init__(self, by_step: dict[str, tuple[Edit, ...]], start: int = 0) -> None:
        self.by_step, self.start = by_step, start

    def at(self, start: int) -> "Edits":
        """The same edits for a pass whose first row is position ``start``."""
        return Edits(self.by_step, start)


def edit(edits: Edits | None, step_id: str, value, layer: int | None = None):
    """``value`` with the run's edits of ``step_id`` in block ``layer`` applied, in order.

    This is the call after every marked line of the engine, next to ``record``; with no
    edits it returns ``value`` itself and costs one comparison.
    """
    if edits is None:
        return value
    chosen = edits.by_step.get(step_id)
    if chosen is None:
        return value
    for one in chosen:
        if one.layer is None or one.layer == layer:
            value = one.apply(value, edits.start)
    return value


def prepare(edit_arg, config, run: str, positions: int, cached: bool = False) -> Edits | None:
    """Check ``edit_arg`` (None, an Edit or a sequence of them) against a model's ``config``
    and a run, before anything is computed; None when there is nothing to apply.

    ``run`` is ``"forward"``, ``"loss"`` or ``"generation"``; ``positions`` the number of
    token positions the run computes (in generation: the prompt and every generated token
    but the last, which no pass reads); ``cached``: generation with the KV cache.
    """
    if edit_arg is None:
        return None
    items = [edit_arg] if isinstance(edit_arg, Edit) else edit_arg
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise ValueError(f"edit must be a glassllm.edits.Ablate or Patch, or a list of them, "
                         f"got {edit_arg!r} ({type(edit_arg).__name__})")
    items = list(items)
    by_step: dict[str, list[Edit]] = {}
    for one in items:
        if not isinstance(one, Edit):
            raise ValueError(f"edit must be a glassllm.edits.Ablate or Patch, or a list of "
                             f"them; the list holds {one!r} ({type(one).__name__})")
        _check_against(one, config, run, positions, cached)
        by_step.setdefault(one.step_id, []).append(one)
    if not by_step:
        return None
    return Edits({step_id: tuple(chosen) for step_id, chosen in by_step.items()})


def _check_against(one: Edit, config, run: str, positions: int, cached: bool) -> None:
    facts = STEP_FACTS[one.step_id]
    if facts.where not in _COMPUTED[run]:
        runs = {"generation": "generate", "training": "loss"}[facts.where]
        raise ValueError(f"{one!r} edits step {one.step_id!r}, which {_RUN_NAMES[run]} never "
                         f"computes (only {runs} does); this edit would never run")
    if one.layer is not None and one.layer >= config.n_layers:
        raise ValueError(f"{one!r}: layer {one.layer} is out of range; this model has "
                         f"{config.n_layers} blocks (layers 0..{config.n_layers - 1})")
    if one.head is not None:
        kv = facts.axes[0] == "kv_head"
        count = config.n_kv_heads if kv else config.n_heads
        if one.head >= count:
            kind = "key/value heads" if kv else "query heads"
            raise ValueError(f"{one!r}: head {one.head} is out of range; step "
                             f"{one.step_id!r} has {count} {kind} (0..{count - 1})")
    if one.positions is not None and one.positions[-1] >= positions:
        beyond = [p for p in one.positions if p >= positions]
        raise ValueError(f"{one!r}: positions {beyond} are beyond the {positions} positions "
                         f"this {_RUN_NAMES[run]} computes (0..{positions - 1})")
    if cached and isinstance(one, Ablate) and one.mode == "mean":
        raise ValueError(f"{one!r} averages over every position of a pass, but a generation "
                         f"step with the KV cache computes only its new position; pass "
                         f"cache=False to recompute the whole sequence at every step")
    if isinstance(one, Patch):
        _check_source(one, config, run, positions)


_RUN_NAMES = {"forward": "forward", "loss": "loss", "generation": "generate"}


def _check_source(one: Patch, config, run: str, positions: int) -> None:
    axes = STEP_FACTS[one.step_id].axes[one._per_head:]
    sizes = {"feature": config.d_model, "head": config.n_heads, "kv_head": config.n_kv_heads,
             "dim": config.head_dim, "hidden": config.d_ff, "vocab": config.vocab_size}
    reach = positions if one.positions is None else one.positions[-1] + 1
    shape = one.source.shape
    for axis, name in enumerate(axes):
        if name in _POSITION_AXES:
            wrong = shape[axis] != positions if run != "generation" else shape[axis] < reach
        else:
            wrong = shape[axis] != sizes[name]
        if wrong:
            needed = tuple(positions if a in _POSITION_AXES else sizes[a] for a in axes)
            if run == "generation":
                raise ValueError(f"{one!r}: the source has shape {shape}, but generate needs "
                                 f"{_shape_text(axes, sizes, reach)}: one row per position up "
                                 f"to position {reach - 1}, which the patch touches")
            raise ValueError(f"{one!r}: the source has shape {shape}, but step "
                             f"{one.step_id!r} of this {_RUN_NAMES[run]} has shape {needed}")
    if one.step_id == "sample":
        token = one.source
        if token != np.round(token) or not 0 <= token < config.vocab_size:
            raise ValueError(f"{one!r}: the patched token {token.item()!r} must be an integer "
                             f"in [0, {config.vocab_size}), a token ID of this model")
    if one.step_id == "probs" and ((one.source < 0).any() or not one.source.sum() > 0):
        raise ValueError(f"{one!r}: patched probabilities must be non-negative with a "
                         f"positive sum, or nothing can be sampled from them")


def _shape_text(axes, sizes, reach: int) -> str:
    parts = [f"at least {reach}" if a in _POSITION_AXES else str(sizes[a]) for a in axes]
    return "(" + ", ".join(parts) + ")"


def _token_axis(axes: tuple[str, ...]) -> int | None:
    return next((i for i, name in enumerate(axes) if name in _TOKEN_AXES), None)


def _check_step_id(step_id) -> None:
    if not isinstance(step_id, str) or step_id not in STEPS:
        raise KeyError(f"unknown step ID {step_id!r}; the IDs are listed in glassllm.STEPS")


def _check_selectors(one: Edit) -> None:
    """The checks that need no model: the ID, and whether the step can take each selector."""
    _check_step_id(one.step_id)
    kind = type(one).__name__
    facts = STEP_FACTS[one.step_id]
    for name in ("layer", "head"):
        value = getattr(one, name)
        if value is not None and (isinstance(value, (bool, np.bool_))
                                  or not isinstance(value, Integral) or value < 0):
            raise ValueError(f"{kind}({one.step_id!r}): {name} must be a non-negative integer "
                             f"or None, got {value!r} ({type(value).__name__})")
        if value is not None:
            object.__setattr__(one, name, int(value))
    if one.layer is not None and facts.where != "block":
        raise ValueError(f"{kind}({one.step_id!r}, layer={one.layer}): step {one.step_id!r} "
                         f"runs once per run, outside the blocks, so it takes no layer")
    if one.head is not None and one.step_id not in HEAD_STEPS:
        raise ValueError(f"{kind}({one.step_id!r}, head={one.head}): step {one.step_id!r} has "
                         f"no head axis; heads exist for {', '.join(HEAD_STEPS)}")
    if one.positions is not None:
        object.__setattr__(one, "positions", _check_positions(one, kind, facts))


def _check_positions(one: Edit, kind: str, facts) -> tuple[int, ...]:
    if _token_axis(facts.axes) is None:
        raise ValueError(f"{kind}({one.step_id!r}): step {one.step_id!r} has no token axis, "
                         f"so it takes no positions")
    values = one.positions
    items = [values] if isinstance(values, Integral) else values
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise ValueError(f"{kind}({one.step_id!r}): positions must be None, a position or a "
                         f"list of them, got {values!r} ({type(values).__name__})")
    items = list(items.tolist() if isinstance(items, np.ndarray) else items)
    if not items:
        raise ValueError(f"{kind}({one.step_id!r}): positions=[] would edit nothing; give at "
                         f"least one position, or None for every position")
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, Integral) or item < 0:
            raise ValueError(f"{kind}({one.step_id!r}): positions must be non-negative "
                             f"integers (token positions from 0), got {item!r}")
    return tuple(sorted({int(item) for item in items}))
