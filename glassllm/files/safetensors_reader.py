"""A safetensors file read with NumPy alone, as the ``safetensors`` package reads it.

The format: an 8-byte little-endian length ``N``, then ``N`` bytes of UTF-8 JSON, the
header, then the raw little-endian bytes of every tensor::

    {"__metadata__": {"format": "pt"},
     "model.norm.weight": {"dtype": "F32", "shape": [64], "data_offsets": [0, 256]}, ...}

``data_offsets`` count from the end of the header. Everything about the file is checked
when it is opened, as the ``safetensors`` package checks it (each tensor's byte length
against its shape, the tensors' bytes covering the data exactly, without gaps or overlap,
and nothing after them), so a file this reader accepts is one that ``transformers`` loads
too. No tensor is read until it is asked for, one at a time: a caller can compare the
header with what it expects before it allocates anything.

    with SafetensorsFile("model.safetensors") as weights:
        weights.tensors["model.norm.weight"].shape      # (64,), nothing read yet
        weights.read_float32("model.norm.weight")       # float32, whatever F32/F16/BF16
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .regular_file import open_regular
from .safe_json import NotJSON, loads

# safetensors' own bound on the header (MAX_HEADER_SIZE in its Rust source)
MAX_HEADER_BYTES = 100_000_000
# Bytes per element of every dtype the format names
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
# What read_float32 widens to float32, exactly
FLOAT_DTYPES = ("F32", "F16", "BF16")
_LITTLE = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2")}
_HEADER_DEPTH = 8  # a header nests 3 levels: {name: {"shape": [...]}}
_NUMBER_CHARS = 32  # offsets and sizes below 2**64 take 20 digits


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the header: its dtype name, shape and byte range in the file."""

    dtype: str
    shape: tuple[int, ...]
    start: int  # from the start of the file
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start


class SafetensorsFile:
    """An open safetensors file whose header has been read and checked."""

    def __init__(self, path) -> None:
        self.path = Path(path)
        self._file = open_regular(self.path, "a checkpoint's weights are a safetensors file")
        try:
            self.tensors, self.metadata = self._read_header()
        except BaseException:
            self._file.close()
            raise

    def __enter__(self) -> "SafetensorsFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    def _refuse(self, why: str) -> ValueError:
        return ValueError(f"{self.path} is not a readable safetensors file: {why}")

    def _read_header(self) -> tuple[dict[str, TensorInfo], dict[str, str] | None]:
        file = self._file
        size = os.fstat(file.fileno()).st_size
        if size < 8:
            raise self._refuse(f"it holds {size} bytes, less than the 8 of the header's length")
        (length,) = struct.unpack("<Q", file.read(8))
        if length > MAX_HEADER_BYTES:
            raise self._refuse(f"its header would be {length:,} bytes, above safetensors' "
                               f"limit of {MAX_HEADER_BYTES:,}")
        if 8 + length > size:
            raise self._refuse(f"its header would be {length:,} bytes, but the file holds "
                               f"{size:,}: it is truncated")
        raw = file.read(length)
        if len(raw) != length:
            raise self._refuse("it was cut short while being read")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise self._refuse(f"its header is not UTF-8 ({err})") from None
        if not text.startswith("{"):
            raise self._refuse("its header is not a JSON object")
        try:
            header = loads(text, "its header", _HEADER_DEPTH, _NUMBER_CHARS,
                           "a safetensors header")
        except NotJSON as err:
            raise self._refuse(f"its header is {err}") from None
        except ValueError as err:  # nested too deep, or a number too long
            raise self._refuse(str(err)) from None
        if not isinstance(header, dict):
            raise self._refuse("its header is not a JSON object")
        metadata = header.pop("__metadata__", None)
        if metadata is not None and not (isinstance(metadata, dict) and all(
                isinstance(value, str) for value in metadata.values())):
            raise self._refuse("its __metadata__ is not an object of strings")
        data_start, data_size = 8 + length, size - 8 - length
        tensors = {name: self._entry(name, entry, data_start) for name, entry in header.items()}
        # the tensors' bytes tile the data part exactly, in some order: no gap, no overlap
        end = data_start
        for name, info in sorted(tensors.items(), key=lambda item: (item[1].start, item[1].end)):
            if info.start != end:
                raise self._refuse(f"tensor {name!r} starts at byte {info.start - data_start} "
                                   f"of the data, but the tensor before it ends at "
                                   f"{end - data_start}")
            end = info.end
        if end != data_start + data_size:
            raise self._refuse(f"its tensors hold {end - data_start:,} bytes, but the data "
                               f"part of the file has {data_size:,}")
        return tensors, metadata

    def _entry(self, name: str, entry, data_start: int) -> TensorInfo:
        def bad(why: str) -> ValueError:
            return self._refuse(f"tensor {name!r}: {why}")

        if not isinstance(entry, dict):
            raise bad("its entry is not an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            raise bad(f"dtype {dtype!r} is not one of the format's ({', '.join(DTYPE_BYTES)})")
        if not isinstance(shape, list) or not all(_is_count(s) for s in shape):
            raise bad(f"shape {shape!r} is not a list of non-negative integers")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(_is_count(o) for o in offsets) or offsets[0] > offsets[1]):
            raise bad(f"data_offsets {offsets!r} is not [start, end] with start <= end")
        # exact integer product: a shape of [2**40, 2**40] must not wrap around
        needed = math.prod(shape) * DTYPE_BYTES[dtype]
        if offsets[1] - offsets[0] != needed:
            raise bad(f"shape {shape} of {dtype} needs {needed:,} bytes, but data_offsets "
                      f"give it {offsets[1] - offsets[0]:,}")
        return TensorInfo(dtype, tuple(shape), data_start + offsets[0], data_start + offsets[1])

    def read_float32(self, name: str) -> np.ndarray:
        """Tensor ``name`` as a new float32 array (F32 as stored; F16 and BF16 widened,
        exactly). ``ValueError`` for any other dtype."""
        info = self.tensors[name]
        if info.dtype not in FLOAT_DTYPES:
            raise ValueError(f"{self.path}: tensor {name!r} has dtype {info.dtype}; glassllm "
                             f"loads {', '.join(FLOAT_DTYPES)} (as float32)")
        stored = np.empty(info.shape, dtype=_LITTLE[info.dtype])
        self._file.seek(info.start)
        if stored.nbytes and self._file.readinto(memoryview(stored).cast("B")) != info.nbytes:
            raise self._refuse(f"tensor {name!r} was cut short while being read")
        if info.dtype == "BF16":  # bfloat16 is the top half of a float32
            return (stored.astype(np.uint32) << 16).view(np.float32)
        return stored.astype(np.float32, copy=False)  # float16 widened; F32 kept if native


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
