"""An 8-bit RGB PNG with zlib only: a heatmap's cells as one image, one pixel per cell."""

from __future__ import annotations

import struct
import zlib

import numpy as np


def png_bytes(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB PNG of an (h, w, 3) uint8 array, with zlib only: one pixel per cell, so
    a heatmap of thousands of cells costs a few kilobytes instead of one element per cell."""
    height, width, _ = rgb.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    # filter type 0 (none) before each row; zlib finds the repeats of a smooth scale
    raw = b"".join(b"\x00" + rgb[i].tobytes() for i in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
