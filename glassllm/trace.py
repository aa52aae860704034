"""The tracer: copies of the values at the marked steps of a run, kept in execution order.

The tracer only watches. It never pauses the computation, never computes anything the
model did not compute, and records only the steps of ``STEPS``, not every NumPy operation.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from contextlib import contextmanager
from numbers import Integral
from typing import Iterator, NamedTuple

import numpy as np

from .steps import HEAD_STEPS, STEPS

_HEAD_STEPS = frozenset(HEAD_STEPS)
# The snapshot pool trusts CPython's reference counts. A free-threaded build (no GIL) and
# other Pythons don't count the same way, so there the pool keeps nothing (limit 0).
_EXACT_COUNTS = hasattr(sys, "getrefcount") and getattr(sys, "_is_gil_enabled", lambda: True)()
_refcount = getattr(sys, "getrefcount", None)
_ndarray = np.ndarray


class StepRecord(NamedTuple):
    """One snapshot: the value of step ``id`` (in block ``layer``, for ``head``) at ``order``.

    A named tuple, so it cannot be changed, and it unpacks as ``id, layer, value, order,
    head``. ``value`` is an ordinary array, though: don't write to it if you want to keep
    the observation.
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


# A traced forward makes a record per step, so the tracer builds them with tuple.__new__:
# StepRecord(...) goes through the named tuple's Python __new__ and takes twice as long.
_new_tuple = tuple.__new__


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
        copy = _POOL.copy(array, order)  # independent of the model's arrays
        records.append(StepRecord(step_id, layer, copy, order, head))

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


class _SnapshotPool:
    """Memory for snapshot copies, reused once no record refers to it any more.

    A traced forward keeps megabytes of snapshots alive. When its tracer is dropped, glibc
    gives that memory back to the system, and the next tracer's copies land in fresh pages
    that the kernel must fault in and zero: at d_model 128 that cost more than the copies
    themselves. The pool keeps those buffers instead (up to ``limit`` bytes) and hands them to
    the next copies. A buffer is free when only the pool refers to it: in CPython every
    array viewing it, and every exported buffer, holds a reference, so the reference count
    says when the last record using it is gone. Each buffer also keeps the last array made
    on it and hands that same array out again for a copy of the same shape and dtype (it is
    free when only the pool holds it): building an array per snapshot costs time too.

    Finding a buffer: the one that served the same position (the record's ``order``) in the
    previous tracer is tried first, since a loop of forwards repeats its shapes; otherwise
    the ring of the copy's size class is scanned round robin, a few buffers at most.

    Where a buffer starts matters too. A contiguous copy is one ``memcpy``, and where that
    uses ``rep movsb`` (AMD Zen with glibc 2.36, as on the machine this was measured on) a
    destination 4 to 28 bytes past the source's offset within a 4 KiB page makes it 10-20x
    slower. A pool buffer allocated right after a heap block of the same size sits exactly
    16 bytes past it modulo a page, and with the probe tracer of ``bench_engine.py`` alive
    one copy per forward hit that. So buffers start on a page boundary: that band then
    holds only sources that start in the last 28 bytes of a page, which malloc's 16-byte
    alignment makes one offset in 256, and nothing pairs them systematically any more.

    Threads need no lock: a thread checks the counts while it already holds its own
    references to the array and buffer, so of two threads looking at one buffer at once
    each sees the other's references, and at most one finds it free.
    """

    SMALLEST = 4096  # below a page, malloc reuses memory well by itself
    PAGE = 4096
    SCAN = 8  # buffers looked at before a copy goes to new memory
    __slots__ = ("limit", "size", "rings", "hints", "lock")

    def __init__(self, limit: int) -> None:
        self.limit, self.size = limit, 0
        # nbytes -> the ring of its size class; an entry is [array, buffer, start], where
        # start is the offset of the buffer's first page boundary
        self.rings: dict[int, deque[list]] = {}
        self.hints: list[list | None] = []  # record position -> the entry it used last
        self.lock = threading.Lock()  # only to count the pool's size as it grows

    @staticmethod
    def size_class(nbytes: int) -> int:
        """nbytes rounded up to 4 classes per power of two (at most 25 % unused)."""
        step = max(1 << (nbytes.bit_length() - 3), 1)
        return -(-nbytes // step) * step

    def copy(self, source: np.ndarray, position: int) -> np.ndarray:
        """A C-ordered copy of ``source`` in pooled memory (a plain copy below a page),
        for the record at ``position`` of its tracer."""
        hints = self.hints
        if position < len(hints):
            entry = hints[position]
            if entry is not None:
                array = entry[0]
                buffer = entry[1]
                if (_refcount(array) <= _FREE_ARRAY
                        and _refcount(buffer) <= _FREE_BUFFER
                        and array.shape == source.shape and array.dtype == source.dtype):
                    try:
                        np.copyto(array, source)
                        return array
                    except ValueError:  # whoever held it last made it read-only
                        pass
        ring = self.rings.get(source.nbytes)
        if ring is None:
            if source.nbytes < self.SMALLEST or source.dtype.hasobject:
                return source.copy(order="K")
            return self._grow(source, position)
        # round robin: the one used longest ago is usually free. The scan stops after a few
        # in use: with every tracer of a long run kept, the ring holds thousands
        for _ in range(min(len(ring), self.SCAN)):
            ring.rotate(-1)
            entry = ring[-1]
            array = entry[0]
            buffer = entry[1]
            if _refcount(array) > _FREE_ARRAY or _refcount(buffer) > _FREE_BUFFER:
                continue
            if (array.shape != source.shape or array.dtype != source.dtype
                    or not array.flags.writeable):
                array = entry[0] = np.ndarray(source.shape, source.dtype, buffer, entry[2])
            np.copyto(array, source)
            self._hint(position, entry)
            return array
        return self._grow(source, position)

    def _hint(self, position: int, entry: list) -> None:
        hints = self.hints
        if position >= len(hints):
            hints.extend([None] * (position + 1 - len(hints)))
        hints[position] = entry

    def _grow(self, source: np.ndarray, position: int) -> np.ndarray:
        """Copy into a new buffer, kept in the pool while it is under its limit."""
        nbytes = source.nbytes
        size = self.size_class(nbytes) + self.PAGE  # room to start on a page boundary
        with self.lock:
            if self.size + size > self.limit:
                return source.copy(order="C")  # the pool is full: a plain allocation
            self.size += size
        buffer = np.empty(size, dtype=np.uint8)
        start = -buffer.__array_interface__["data"][0] % self.PAGE
        array = np.ndarray(source.shape, source.dtype, buffer, start)
        np.copyto(array, source)
        entry = [array, buffer, start]
        with self.lock:
            ring = self.rings.get(nbytes)
            if ring is None:  # one ring per size class, found by each size that uses it
                ring = self.rings[nbytes] = self.rings.setdefault(size - self.PAGE, deque())
            ring.append(entry)
        self._hint(position, entry)
        return array


def _free_counts() -> tuple[int, int]:
    """The reference counts _SnapshotPool.copy sees for an entry that nobody else holds."""
    entry = [np.empty(8, dtype=np.uint8).view(), None, 0]
    entry[1] = entry[0].base
    array = entry[0]
    buffer = entry[1]
    return _refcount(array), _refcount(buffer)


_FREE_ARRAY, _FREE_BUFFER = _free_counts() if _EXACT_COUNTS else (0, 0)

# Enough for every snapshot of a d_model-1024, 8-layer forward over 64 tokens; larger runs
# use the pool up to this size and plain allocations beyond it.
_POOL = _SnapshotPool(limit=128 * 2**20 if _EXACT_COUNTS else 0)


def record(trace: Tracer | None, step_id: str, value, layer: int | None = None,
           batched: bool = True, *, head: int | None = None, group: int = 1) -> None:
    """Record into ``trace`` when there is one; do nothing when ``trace is None``.

    This is the call at every marked line of the engine, so it handles the engine's usual
    case itself (an array with a batch axis of 1, no head, no heads filter), with the same
    checks and result as ``Tracer.record``, which it calls for everything else. A forward
    makes 75 of these calls even at toy size, between NumPy calls that push the
    interpreter's data out of the CPU caches, so every Python operation here shows in the
    traced/untraced ratio of ``scripts/bench_engine.py``: at d_model 128, passing the call on
    to ``Tracer.record`` with keyword arguments (which Python 3.11 does not specialise) cost
    about 0.04 of an untraced forward.
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
            records.append(_new_tuple(StepRecord, (step_id, layer, _POOL.copy(value[0], order),
                                                   order, None)))
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
