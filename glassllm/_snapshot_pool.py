"""Memory for the tracer's snapshot copies, reused once no record refers to it any more.

The machinery behind ``glassllm.trace``: a traced forward copies megabytes of snapshots,
and a loop of traced forwards drops one tracer's copies as it makes the next one's. Copying
into fresh memory each time costs more than the copies themselves (why, and the figures:
the Notes of ``scripts/bench_engine.py``), so the pool keeps the buffers of dropped records
and hands them to the next copies.

A buffer is free when only the pool refers to it: in CPython every array viewing it, and
every exported buffer, holds a reference, so the reference count says when the last record
using it is gone. Where counts are not CPython's (a free-threaded build, other Pythons) the
pool keeps nothing and every copy is a plain one.
"""

from __future__ import annotations

import sys
import threading
from collections import deque

import numpy as np

# The pool trusts CPython's reference counts; without the GIL they are not exact
_EXACT_COUNTS = hasattr(sys, "getrefcount") and getattr(sys, "_is_gil_enabled", lambda: True)()
_refcount = getattr(sys, "getrefcount", None)


class SnapshotPool:
    """Buffers for snapshot copies, up to ``limit`` bytes, by size class.

    Each buffer also keeps the last array made on it and hands that same array out again for
    a copy of the same shape and dtype: building an array per snapshot costs time too.
    Finding a buffer: the one that served the same position (the record's ``order``) in the
    previous tracer is tried first, since a loop of forwards repeats its shapes; otherwise
    the ring of the copy's size class is scanned round robin, a few buffers at most.

    Buffers start on a page boundary: a copy whose destination lies just past its source's
    offset within a page can be many times slower (the Notes of ``scripts/bench_engine.py``),
    and a buffer allocated right after a source of the same size would sit exactly there.

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
    """The reference counts SnapshotPool.copy sees for an entry that nobody else holds."""
    entry = [np.empty(8, dtype=np.uint8).view(), None, 0]
    entry[1] = entry[0].base
    array = entry[0]
    buffer = entry[1]
    return _refcount(array), _refcount(buffer)


_FREE_ARRAY, _FREE_BUFFER = _free_counts() if _EXACT_COUNTS else (0, 0)

# The tracer's pool. Enough for every snapshot of a d_model-1024, 8-layer forward over 64
# tokens; larger runs use it up to this size and plain allocations beyond it.
POOL = SnapshotPool(limit=128 * 2**20 if _EXACT_COUNTS else 0)
