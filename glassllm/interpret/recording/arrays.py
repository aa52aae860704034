"""One snapshot's array as a recording stores it: its dtype and little-endian bytes, and
version 1's ``{"shape", "dtype", "data": <base64>}`` objects."""

from __future__ import annotations

import base64
import math
import re

import numpy as np

MAX_AXES = 32
FLOAT16_MAX = 65504.0
JSON_DTYPES = {"float32": np.dtype("<f4"), "int32": np.dtype("<i4")}
# what version 2 stores; the readers hand float16 values on as float32 (exactly)
BINARY_DTYPES = {**JSON_DTYPES, "float16": np.dtype("<f2")}
FLOAT_DTYPES = ("float32", "float16")


def stored_array(value, floats: str = "float32", where: str = "array") -> tuple[str, np.ndarray]:
    """The dtype name and little-endian contiguous array a recording stores for ``value``:
    integers as int32, floats as ``floats`` (float32 or, in version 2, float16)."""
    array = np.asarray(value)
    if array.dtype.kind in "iub":
        info = np.iinfo(np.int32)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise ValueError(f"integer snapshot does not fit int32 (range {array.min()}.."
                             f"{array.max()}); recordings store integers as int32")
        name = "int32"
    elif array.dtype.kind == "f":
        name = floats
    else:
        raise ValueError(f"cannot record an array of dtype {array.dtype}; "
                         f"recordings hold float or integer snapshots")
    # astype, not ascontiguousarray, which turns the 0-d sampled token into shape (1,); an
    # overflow to float16's inf is looked for below, not warned about
    with np.errstate(over="ignore"):
        stored = array.astype(BINARY_DTYPES[name], order="C", copy=False)
    if name == "float16":
        # NaN and ±inf stay themselves; only a finite value can turn into a false inf
        over = np.isinf(stored) & np.isfinite(array)
        if over.any():
            raise ValueError(f"{where}: {int(over.sum())} value(s) (largest magnitude "
                             f"{float(np.abs(array[over]).max()):g}) lie beyond float16's "
                             f"range (±{FLOAT16_MAX:g}) and would read as ±inf; write this "
                             f"recording in float32 (the default) instead")
    return name, stored


def encode_array(value) -> dict:
    """``{"shape", "dtype", "data"}``: float values as little-endian float32, integer values
    as int32, base64-encoded. Non-finite floats keep their exact IEEE bit patterns."""
    name, stored = stored_array(value)
    return {"shape": list(stored.shape), "dtype": name,
            "data": base64.b64encode(stored.tobytes()).decode("ascii")}


_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def decode_array(obj, where: str = "array") -> np.ndarray:
    """The numpy array of an ``encode_array`` dict (native byte order, a fresh copy)."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object with shape, dtype and data")
    shape, name, data = obj.get("shape"), obj.get("dtype"), obj.get("data")
    if (not isinstance(shape, list) or len(shape) > MAX_AXES
            or not all(is_count(s) for s in shape)):
        raise ValueError(f"{where}: 'shape' must be a list of at most {MAX_AXES} "
                         f"non-negative integers, got {short(shape)}")
    if not isinstance(name, str) or name not in JSON_DTYPES:
        raise ValueError(f"{where}: 'dtype' must be one of {', '.join(JSON_DTYPES)}, "
                         f"got {short(name)}")
    if not isinstance(data, str):
        raise ValueError(f"{where}: 'data' must be a base64 string")
    dtype = JSON_DTYPES[name]
    # exact integer product: int64 would overflow on [2**70] and wrap [2**32, 2**32] to 0
    needed = math.prod(shape) * dtype.itemsize
    # the same alphabet and padding rules as the replay page's reader, on every Python
    if not _BASE64.fullmatch(data):
        raise ValueError(f"{where}: 'data' is not valid base64")
    size = len(data) // 4 * 3 - data[-2:].count("=")
    if size != needed:
        raise ValueError(f"{where}: 'data' holds {size} bytes but shape {shape} of "
                         f"{name} needs {needed}")
    raw = base64.b64decode(data, validate=True)
    return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def short(value, limit: int = 80) -> str:
    """``repr`` cut to ``limit`` characters, for messages about values of any size."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"
