"""The tracer: copies of the values at the marked steps of a run, kept in execution order.

The tracer only watches. It never pauses the computation, never computes anything the
model did not compute, and records only the steps of ``STEPS``, not every NumPy operation.

    trace = Tracer()
    logits = model.forward(tokens, trace)
    trace.get("attn.softmax", layer=0, head=1)   # a StepRecord: id, layer, value, order, head

The engine's marked lines call the module function ``record(trace, step_id, value, ...)``,
which does nothing without a tracer. Copies go into reused memory (``_snapshot_pool``).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral
from typing import Iterator

import numpy as np

from ._snapshot_pool import POOL
from .steps import HEAD_STEPS, STEPS

_HEAD_STEPS = frozenset(HEAD_STEPS)
_ndarray = np.ndarray


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One snapshot: the value of step ``id`` (in block ``layer``, for ``head``) at ``order``.

    The dataclass is frozen but ``value`` is an ordinary array: don't write to it if you
    want to keep the observation.
    """

    id: str
    layer: int | None
    value: np.ndarray
    order: int
    head: int | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def equation(self) -> str:
        return STEPS[self.id].plain

    @property
    def latex(self) -> str:
        return STEPS[self.id].latex

    def __repr__(self) -> str:
        where = "" if self.layer is None else f", layer={self.layer}"
        where += "" if self.head is None else f", head={self.head}"
        return (f"StepRecord(id={self.id!r}{where}, order={self.order}, "
                f"shape={self.shape}, dtype={self.value.dtype})")


class Tracer:
    """Records snapshots of a run. Prefer one tracer per forward pass.

    By default every step is recorded. ``steps``, ``layers`` and ``heads`` keep only what
    was asked, as TransformerLens' ``names_filter`` does, so a large model can be watched
    at a few places for little more than the cost of an untraced run:

    - ``steps``: step IDs to keep (others are not copied at all);
    - ``layers``: blocks to keep; steps outside the blocks (``embed``, ``logits``, ...) are
      not in a layer and stay unless ``steps`` leaves them out;
    - ``heads``: query heads to keep. Each head step is then recorded once per kept head,
      already sliced (``record.head == h``), as ``record(..., head=h)`` would. For the key
      and value steps the kept heads are the KV heads that serve those query heads.

    Each may be one item or a collection; ``None`` keeps everything. A step ID outside
    ``STEPS`` is a ``KeyError``; a bad layer or head, or an empty collection, ``ValueError``.
    """

    def __init__(self, steps=None, layers=None, heads=None) -> None:
        self.records: list[StepRecord] = []
        self._steps = _check_filter("steps", steps, _check_step_id)
        self._layers = _check_filter("layers", layers, _check_filter_index("layers"))
        self._heads = _check_filter("heads", heads, _check_filter_index("heads"))
        # record() below may take its short path: no heads to slice, no record() override
        self._short_path = heads is None and type(self).record is Tracer.record
        self._keeps_all = steps is None and layers is None and heads is None

    # the filters are fixed when the tracer is made: record's fast path relies on it
    @property
    def steps(self) -> frozenset[str] | None:
        return self._steps

    @property
    def layers(self) -> frozenset[int] | None:
        return self._layers

    @property
    def heads(self) -> frozenset[int] | None:
        return self._heads

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        asked = "".join(f", {name}={sorted(value)}" for name, value in
                        (("steps", self.steps), ("layers", self.layers), ("heads", self.heads))
                        if value is not None)
        return f"Tracer({len(self.records)} records{asked})"

    def wants(self, step_id: str, layer: int | None = None) -> bool:
        """Whether a snapshot of ``step_id`` in ``layer`` would be kept by the filters.

        The model asks before it copies anything, so unasked steps cost nothing."""
        return ((self.steps is None or step_id in self.steps)
                and (self.layers is None or layer is None or layer in self.layers))

    def record(self, step_id: str, value, layer: int | None = None, batched: bool = True,
               *, head: int | None = None, group: int = 1) -> None:
        """Store an independent copy of ``value`` as the next snapshot of ``step_id``.

        With ``batched=True`` the value must have a leading batch axis of size 1, which is
        removed. Use ``batched=False`` for scalars and values that have no batch axis.
        A snapshot the filters leave out is checked the same way, then dropped uncopied.
        ``group``: for key and value steps, the query heads each KV head serves (grouped-
        query attention), so a ``heads`` filter keeps the KV heads of the asked query heads.
        """
        # each check is inline for the usual arguments; its helper gives the message
        if type(step_id) is not str or step_id not in STEPS:
            _check_step_id(step_id)
        if layer is not None and (type(layer) is not int or layer < 0):
            layer = _check_index("layer", layer)
        if head is not None:
            head = _check_index("head", head)
        if batched is not True:
            batched = check_flag("batched", batched)
        if group != 1:
            group = _check_index("group", group)
            if not group:
                raise ValueError(f"group must be a positive integer, got {group!r}")
        if head is not None and step_id not in _HEAD_STEPS:
            raise ValueError(f"step {step_id!r} has no head axis, so it cannot be recorded "
                             f"with head={head}; heads exist for {', '.join(HEAD_STEPS)}")
        if not self.wants(step_id, layer):
            return  # not asked: nothing is copied
        array = np.asarray(value)
        if batched:
            if array.ndim == 0:
                raise ValueError(f"step {step_id!r}: batched=True needs a leading batch axis "
                                 f"of size 1 but got a scalar; pass batched=False")
            if array.shape[0] != 1:
                raise ValueError(f"step {step_id!r}: batched=True needs a leading batch axis "
                                 f"of size 1 but got shape {array.shape}; record one sequence "
                                 f"at a time, or pass batched=False if there is no batch axis")
            array = array[0]
        if self.heads is None or step_id not in _HEAD_STEPS:
            self._append(step_id, layer, array, head)
        elif head is not None:  # already one head: kept if it serves an asked one
            if any(h // group == head for h in self.heads):
                self._append(step_id, layer, array, head)
        else:
            n_heads = array.shape[0] if array.ndim else 0
            kept = sorted({h // group for h in self.heads})
            if kept[-1] >= n_heads:
                raise ValueError(f"heads={sorted(self.heads)} asks for head {max(self.heads)}, "
                                 f"but step {step_id!r} has {n_heads * group} heads "
                                 f"(0..{n_heads * group - 1}); ask for heads the model has")
            for h in kept:
                self._append(step_id, layer, array[h], h)

    def _append(self, step_id: str, layer: int | None, array: np.ndarray,
                head: int | None) -> None:
        records = self.records
        order = len(records)
        copy = POOL.copy(array, order)  # independent of the model's arrays
        records.append(_new_record(step_id, layer, copy, order, head))

    def get(self, step_id: str, layer: int | None = None, head: int | None = None) -> StepRecord:
        """The first snapshot of ``step_id`` matching ``layer`` and ``head``.

        ``layer=None`` matches any layer (the earliest wins; it does not mean "last layer").
        ``head=h`` selects the first axis of a full head snapshot, or matches a record taken
        with ``head=h``; ``head=None`` returns the snapshot as it was recorded, either kind.
        """
        _check_step_id(step_id)
        layer = _check_index("layer", layer)
        head = _check_index("head", head)
        if head is not None and step_id not in HEAD_STEPS:
            raise ValueError(f"step {step_id!r} has no head axis; call get() without head=")
        for rec in self.records:
            if rec.id != step_id or (layer is not None and rec.layer != layer):
                continue
            if head is None or rec.head == head:  # no head: the record as it was recorded
                return rec
            if rec.head is None:  # a full head snapshot: slice head h
                n_heads = rec.value.shape[0] if rec.value.ndim else 0
                if head >= n_heads:
                    raise ValueError(f"head {head} is out of range for step {step_id!r}: its "
                                     f"snapshot has {n_heads} heads (0..{n_heads - 1})")
                return StepRecord(rec.id, rec.layer, rec.value[head], rec.order, head)
        where = "" if layer is None else f" in layer {layer}"
        where += "" if head is None else f" for head {head}"
        raise KeyError(f"no record of step {step_id!r}{where}; recorded steps: "
                       f"{', '.join(self.step_ids()) or 'none'}")

    def step_ids(self) -> list[str]:
        """The distinct step IDs in order of first occurrence."""
        return list(dict.fromkeys(rec.id for rec in self.records))


def record(trace: Tracer | None, step_id: str, value, layer: int | None = None,
           batched: bool = True, *, head: int | None = None, group: int = 1) -> None:
    """Record into ``trace`` when there is one; do nothing when ``trace is None``.

    This is the call at every marked line of the engine, so it handles the engine's usual
    case itself (an array with a batch axis of 1, no head, no heads filter), with the same
    checks and result as ``Tracer.record``, which it calls for everything else: every
    Python operation here shows in the traced/untraced ratio of ``scripts/bench_engine.py``.
    """
    if trace is None:
        return
    if (trace._short_path and head is None and batched is True and type(value) is _ndarray
            and type(step_id) is str and step_id in STEPS
            and (layer is None or (type(layer) is int and layer >= 0))
            and type(group) is int and group > 0 and value.ndim and len(value) == 1):
        if trace._keeps_all or trace.wants(step_id, layer):
            records = trace.records
            order = len(records)
            records.append(_new_record(step_id, layer, POOL.copy(value[0], order), order, None))
        return
    trace.record(step_id, value, layer, batched, head=head, group=group)


@contextmanager
def all_or_nothing(trace: Tracer | None) -> Iterator[None]:
    """Undo the records a failing call appended, so a tracer never holds half a run."""
    start = None if trace is None else len(trace.records)
    try:
        yield
    except BaseException:
        if trace is not None:
            del trace.records[start:]
        raise


# -- checks of the arguments, each with the message it gives ----------------------------

def _check_index(name: str, value) -> int | None:
    """A layer or head selector: None or a non-negative integer, never a bool."""
    if value is None or (type(value) is int and value >= 0):  # the common case, fast
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be a non-negative integer or None, "
                         f"got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer or None, got {value}")
    return int(value)


def check_flag(name: str, value, hint: str = "") -> bool:
    """A switch: True or False (NumPy's bool too), never a truthy stand-in such as 1 or "no"."""
    if value is True or value is False:
        return value
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r} "
                         f"({type(value).__name__}){hint}")
    return bool(value)


def _check_step_id(step_id) -> str:
    if not isinstance(step_id, str) or step_id not in STEPS:
        raise KeyError(f"unknown step ID {step_id!r}; the IDs are listed in glassllm.STEPS")
    return step_id


def _check_filter(name: str, values, check) -> frozenset | None:
    """A filter of the Tracer: None (everything), one item, or a non-empty collection."""
    if values is None:
        return None
    items = [values] if isinstance(values, (str, Integral)) else values
    try:
        items = list(items)
    except TypeError:
        raise ValueError(f"{name} must be None, one item or a list of them, got {values!r} "
                         f"({type(values).__name__})") from None
    if not items:
        raise ValueError(f"{name}=[] would record nothing; give at least one, or None for all")
    return frozenset(check(item) for item in items)


def _check_filter_index(name: str):
    def check(value) -> int:
        if (isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral)
                or value < 0):
            raise ValueError(f"{name} must be non-negative integers (indices from 0), got "
                             f"{value!r} ({type(value).__name__})")
        return int(value)
    return check


# -- records built fast -----------------------------------------------------------------

class _Unfrozen:
    """A StepRecord's slots without the frozen __setattr__: each record is filled here with
    plain attribute stores, then becomes a StepRecord (the same slots, so Python allows it)."""

    __slots__ = StepRecord.__slots__


def _new_record(step_id: str, layer: int | None, value: np.ndarray, order: int,
                head: int | None) -> StepRecord:
    """``StepRecord(step_id, layer, value, order, head)``, built without the frozen __init__
    (one object.__setattr__ per field), which a traced forward would pay 75 times."""
    rec = _Unfrozen()
    rec.id = step_id
    rec.layer = layer
    rec.value = value
    rec.order = order
    rec.head = head
    rec.__class__ = StepRecord  # from here on frozen, a StepRecord like any other
    return rec
