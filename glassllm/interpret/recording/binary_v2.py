"""Version 2: a recording as a binary file (``.glrec``): a header, the JSON index, then the
arrays' raw bytes, each aligned so a browser can view it as a typed array without copying."""

from __future__ import annotations

import math
import struct

import numpy as np

from ...config import Config
from .arrays import BINARY_DTYPES, FLOAT_DTYPES, is_count, short, stored_array
from .document import (HINT, VERSION, checked_document, document, event_place,
                       event_place_checked, json_text, parse_json)
from .events import Event, Recording

# 0x89 first: no text file starts with it (in UTF-8 it is a continuation byte); the CR LF
# shows a transfer that rewrote line endings, as in PNG's signature
MAGIC = b"\x89GLREC\r\n"
_HEADER = struct.Struct("<8sII")  # MAGIC, version, index length in bytes
HEADER_BYTES = _HEADER.size
ALIGN = 8  # the data and every array in it start at multiples of 8 bytes


def align(size: int) -> int:
    return -size % ALIGN


def binary_parts(rec: Recording, dtype: str = "float32") -> list[bytes]:
    """The bytes of a version 2 file, in pieces to write one after the other (a
    SmolLM-sized run holds ~100 MB: joining would copy it once more). ``dtype``: how float
    arrays are stored, "float32" (exact) or "float16" (half the size; ValueError for a
    finite value beyond float16's range)."""
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(FLOAT_DTYPES)}, got {short(dtype)}")
    doc = document(rec, VERSION)
    items, arrays, position = [], [], 0
    for i, e in enumerate(rec.events):
        name, stored = stored_array(e.value, dtype, f"events[{i}] ({e.step})")
        position += align(position)
        items.append({**event_place(e), "dtype": name, "shape": list(stored.shape),
                      "offset": position, "length": stored.nbytes})
        arrays.append((position, stored))
        position += stored.nbytes
    doc["events"] = items
    index = json_text(doc).encode("utf-8")
    parts = [_HEADER.pack(MAGIC, VERSION, len(index)), index,
             bytes(align(_HEADER.size + len(index)))]
    written = 0
    for offset, stored in arrays:
        parts.append(bytes(offset - written))
        parts.append(stored.tobytes())
        written = offset + stored.nbytes
    return parts


def from_binary(data: bytes, where: str = "recording") -> Recording:
    """Check a version 2 file's bytes and turn them into a ``Recording`` (float16 values
    come back as float32, exactly). The header and the whole index are checked — the
    index as ``from_json`` checks a document, and each event's byte range against the
    file — before any array is read."""
    data = memoryview(data).cast("B")
    if len(data) < _HEADER.size or bytes(data[:len(MAGIC)]) != MAGIC:
        raise ValueError(f"{where} is not a glassllm recording: it starts like a binary one "
                         f"but its {_HEADER.size}-byte header is damaged or cut off; {HINT}")
    _, version, index_length = _HEADER.unpack_from(data)
    if version > VERSION:
        raise ValueError(f"{where} is a version {version} recording but this glassllm reads "
                         f"versions up to {VERSION}; upgrade glassllm or record the run again")
    if version != VERSION:
        raise ValueError(f"{where}: its header says version {version}, but binary recordings "
                         f"are version {VERSION}; the file was damaged — record it again")
    data_start = _HEADER.size + index_length + align(_HEADER.size + index_length)
    if data_start > len(data):
        raise ValueError(f"{where}: the header announces a {index_length}-byte index, but the "
                         f"file holds {len(data)} bytes; it is truncated — record it again")
    try:
        text = bytes(data[_HEADER.size:_HEADER.size + index_length]).decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: its index is not UTF-8 text ({err}); the file was "
                         f"damaged — record it again") from None
    doc = parse_json(text, where)
    rec, passes, raw_events = checked_document(doc, where, VERSION)
    cfg, per_pass = Config(**rec.config), rec.events_per_pass()
    size = len(data) - data_start
    places, end = [], 0
    for i, item in enumerate(raw_events):
        at = f"{where}: events[{i}]"
        step, ints, shape = event_place_checked(item, at, rec.kind, cfg, passes, per_pass)
        name = item.get("dtype")
        allowed = ("int32",) if step == "sample" else FLOAT_DTYPES
        if not isinstance(name, str) or name not in allowed:
            raise ValueError(f"{at}: 'dtype' of {step} must be {' or '.join(allowed)}")
        offset, length = item.get("offset"), item.get("length")
        if not is_count(offset) or not is_count(length):
            raise ValueError(f"{at}: 'offset' and 'length' must be non-negative integers "
                             f"(the event's bytes in the data part of the file)")
        needed = math.prod(shape) * BINARY_DTYPES[name].itemsize
        if length != needed:
            raise ValueError(f"{at}: 'length' is {length} bytes but shape {list(shape)} of "
                             f"{name} needs {needed}")
        if offset % ALIGN:
            raise ValueError(f"{at}: 'offset' {offset} is not a multiple of {ALIGN}; every "
                             f"array starts on an {ALIGN}-byte boundary")
        if offset < end:
            raise ValueError(f"{at}: its bytes start at {offset}, inside the bytes of the "
                             f"event before (which end at {end}); events' bytes come in "
                             f"event order without overlapping — record the run again")
        if offset + length > size:
            raise ValueError(f"{at}: its bytes ({offset} to {offset + length}) reach past the "
                             f"end of the file's {size} bytes of data; the file is truncated "
                             f"— record it again")
        end = offset + length
        places.append((step, ints, shape, name, offset, item.get("grad") is True))
    for step, ints, shape, name, offset, grad in places:
        dtype = BINARY_DTYPES[name]
        raw = np.frombuffer(data, dtype=dtype, count=math.prod(shape),
                            offset=data_start + offset)
        native = np.dtype(np.int32) if name == "int32" else np.dtype(np.float32)
        rec.events.append(Event(step, ints["layer"], raw.reshape(shape).astype(native),
                                ints["order"], ints["gen"], ints["head"], grad))
    return rec
