"""Opening a file a user names: only a regular file, never blocking, size bounded on request.

A path can name a FIFO (reading it waits for a writer that may never come), a device such
as ``/dev/zero`` (endless bytes) or a sparse file of terabytes. ``open_regular`` opens
without blocking, then looks at what it opened before reading a byte.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

# Without blocking: opening a FIFO to read otherwise waits for a writer
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(
    os, "O_BINARY", 0)
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def open_regular(path, hint: str = "") -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file; otherwise a
    ``ValueError`` saying what it is ("is missing", "cannot be read: permission denied",
    "is a FIFO ...") followed by ``hint``."""
    tail = f"; {hint}" if hint else ""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise ValueError(f"{path} is missing{tail}") from None
    except OSError as err:
        reason = "permission denied" if err.errno == errno.EACCES else err.strerror
        raise ValueError(f"{path} cannot be read: {reason}{tail}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise ValueError(f"{path} is {kind}, not a regular file{tail}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path, max_bytes: int, hint: str = "") -> bytes:
    """The bytes of the regular file ``path``, refused unread if it holds more than
    ``max_bytes`` (it is read no further than that, should it grow meanwhile)."""
    with open_regular(path, hint) as file:
        size = os.fstat(file.fileno()).st_size
        data = b""
        if size <= max_bytes:
            # read(n) allocates n bytes before it reads: ask for the file's size (and one byte
            # to see it grew), not the bound. In WebAssembly that allocation is memory the page
            # keeps: a 200 MB bound grew Pyodide's heap from 36 to 242 MB to read a tokenizer
            data = file.read(size + 1)
            if len(data) > size:  # it grew since fstat: read on, up to the bound
                data += file.read(max_bytes + 1 - len(data))
        if size > max_bytes or len(data) > max_bytes:
            raise ValueError(f"{path} holds {max(size, len(data)):,} bytes, more than the "
                             f"{max_bytes:,} such a file ever needs"
                             + (f"; {hint}" if hint else ""))
        return data
