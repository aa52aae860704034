"""The tracer: copies of the values at the marked steps of a run, kept in execution order.

The tracer only watches. It never pauses the computation, never computes anything the
model did not compute, and records only the steps of ``STEPS``, not every NumPy operation.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral
from typing import Iterator

import numpy as np

from .steps import HEAD_STEPS, STEPS


@dataclass(frozen=True)
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


def _check_index(name: str, value) -> int | None:
    """A layer or head selector: None or a non-negative integer, never a bool."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be a non-negative integer or None, "
                         f"got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer or None, got {value}")
    return int(value)


def check_flag(name: str, value, hint: str = "") -> bool:
    """A switch: True or False (NumPy's bool too), never a truthy stand-in such as 1 or "no"."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r} "
                         f"({type(value).__name__}){hint}")
    return bool(value)


def _check_step_id(step_id) -> str:
    if not isinstance(step_id, str) or step_id not in STEPS:
        raise KeyError(f"unknown step ID {step_id!r}; the IDs are listed in glassllm.STEPS")
    return step_id


class Tracer:
    """Records snapshots of a run. Prefer one tracer per forward pass."""

    def __init__(self) -> None:
        self.records: list[StepRecord] = []

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"Tracer({len(self.records)} records)"

    def record(self, step_id: str, value, layer: int | None = None, batched: bool = True,
               *, head: int | None = None) -> None:
        """Store an independent copy of ``value`` as the next snapshot of ``step_id``.

        With ``batched=True`` the value must have a leading batch axis of size 1, which is
        removed. Use ``batched=False`` for scalars and values that have no batch axis.
        """
        _check_step_id(step_id)
        layer = _check_index("layer", layer)
        head = _check_index("head", head)
        batched = check_flag("batched", batched)
        if head is not None and step_id not in HEAD_STEPS:
            raise ValueError(f"step {step_id!r} has no head axis, so it cannot be recorded "
                             f"with head={head}; heads exist for {', '.join(HEAD_STEPS)}")
        array = np.asarray(value).copy(order="K")  # independent; "K" copies in memory order
        if batched:
            if array.ndim == 0:
                raise ValueError(f"step {step_id!r}: batched=True needs a leading batch axis "
                                 f"of size 1 but got a scalar; pass batched=False")
            if array.shape[0] != 1:
                raise ValueError(f"step {step_id!r}: batched=True needs a leading batch axis "
                                 f"of size 1 but got shape {array.shape}; record one sequence "
                                 f"at a time, or pass batched=False if there is no batch axis")
            array = array[0]
        self.records.append(StepRecord(step_id, layer, array, len(self.records), head))

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
           batched: bool = True, *, head: int | None = None) -> None:
    """Record into ``trace`` when there is one; do nothing when ``trace is None``."""
    if trace is not None:
        trace.record(step_id, value, layer, batched, head=head)


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
