"""Keep the memory a training step frees for the next step, on Linux's C library (glibc).

A backward pass allocates and frees about a hundred megabytes of temporaries at d288 (the
logits, their softmax, each block's activations and gradients). glibc gives freed memory at
the top of its heap back to the system once more than twice the largest freed block sits
there, and serves blocks above its dynamic threshold with fresh ``mmap`` pages; either way
the next step asks the kernel again, page fault by page fault: 28,000 faults and 60-80 ms
of system time per d288 step (scripts/bench_engine.py's shape), a fifth of the step.

``keep_freed_memory()`` sets the two thresholds once (``mallopt``, process-wide): blocks up
to 32 MiB come from the heap, and up to 512 MiB of freed heap stays in the process for reuse.
``GlassLM.gradients`` calls it, so a process that only runs the model keeps glibc's
defaults. Elsewhere (macOS, Windows, musl, the browser's Pyodide) it does nothing.
"""

from __future__ import annotations

import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
_TRIM_THRESHOLD = 512 * 1024 * 1024

_done = False


def keep_freed_memory() -> bool:
    """Set glibc's thresholds once; True when they are set (now or before)."""
    global _done
    if _done or not sys.platform.startswith("linux"):
        return _done
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        # both at once: setting either turns off glibc's dynamic adjustment of the other
        _done = bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
                     and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
    except (ImportError, OSError, AttributeError):  # not glibc: nothing to tune
        _done = False
    return _done
