"""Recordings as files: one reader for both versions (told apart by content) and a writer
that picks the version from the file name and never leaves half a file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .arrays import FLOAT_DTYPES, short
from .binary_v2 import MAGIC, binary_parts, from_binary
from .document import HINT, parse_json
from .events import Recording
from .json_v1 import dumps, from_json

BINARY_SUFFIX = ".glrec"
JSON_SUFFIX = ".json"


def loads(text: str | bytes, where: str = "recording") -> Recording:
    """Parse and check a recording, either version: bytes that start with 0x89 are a
    version 2 (binary) file, anything else version 1 JSON text (bytes read as UTF-8, an
    initial BOM skipped, as browsers read a file)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        if bytes(text[:1]) == MAGIC[:1]:
            return from_binary(text, where)
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ValueError(f"{where} is not a glassllm recording: it is not UTF-8 text "
                             f"({err}); {HINT}") from None
    return from_json(parse_json(text, where), where)


def read_recording(path) -> Recording:
    path = Path(path)
    return loads(path.read_bytes(), str(path))


def recording_format(path) -> str:
    """``"binary"`` (version 2) or ``"json"`` (version 1), from the file name's suffix;
    ValueError for any other suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == BINARY_SUFFIX:
        return "binary"
    if suffix == JSON_SUFFIX:
        return "json"
    raise ValueError(f"{short(str(path))}: name the recording *{BINARY_SUFFIX} (binary, "
                     f"version 2: compact, opens fast in the replay) or *{JSON_SUFFIX} "
                     f"(version 1 JSON, for small runs)")


def write_recording(rec: Recording, path, *, dtype: str = "float32") -> int:
    """Write ``rec`` in the format of ``path``'s suffix: ``.glrec`` version 2 (binary,
    floats as ``dtype``: "float32" exact, or "float16" half the size), ``.json`` version 1
    (float32 only). Everything is checked and encoded before the file is opened, then
    written atomically (temp file in the same folder, then ``os.replace``): an interrupted
    or failed write, Ctrl-C included, leaves neither half a file under ``path`` nor the temp
    file. Returns the size in bytes."""
    path = Path(path)
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(FLOAT_DTYPES)}, got {short(dtype)}")
    if recording_format(path) == "binary":
        parts = binary_parts(rec, dtype)
    elif dtype != "float32":
        raise ValueError(f"{short(str(path))}: {dtype} needs the binary format; name the "
                         f"file *{BINARY_SUFFIX}")
    else:
        parts = [dumps(rec).encode("utf-8")]
    tmp = None
    try:
        # a short name of its own: one derived from path's could pass the file system's
        # limit on name length when path itself does not
        fd, tmp = tempfile.mkstemp(prefix=".glassllm-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                out.write(part)
        # mkstemp makes the file private (0600); give it the usual permissions of a new file
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):  # gone if os.replace already ran
                os.unlink(tmp)
        raise
    return sum(len(part) for part in parts)
