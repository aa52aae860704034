"""Numbers and shapes as every page and test writes them: stable, whatever NumPy computed."""

from __future__ import annotations

import math

import numpy as np

MINUS_INF, PLUS_INF, NOT_A_NUMBER = "−∞", "+∞", "NaN"
ELLIPSIS = "…"


def format_value(value, decimal: str = ".") -> str:
    """One number as every page and test shows it: 4 significant digits, −∞/+∞/NaN spelled;
    ``decimal`` is the language's decimal mark (``","`` in Portuguese: 0,8865)."""
    if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
        return str(int(value))
    number = float(value)
    if math.isnan(number):
        return NOT_A_NUMBER
    if math.isinf(number):
        return PLUS_INF if number > 0 else MINUS_INF
    text = f"{number:.4g}"
    return "0" if text == "-0" else text.replace(".", decimal)


def shape_text(shape) -> str:
    """A shape as Python writes a tuple: ``(4, 11, 8)``, ``(256,)``, ``()``."""
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def bounded(count: int, limit: int) -> list[int | None]:
    """Indices 0..count-1, or the first and last ones with ``None`` for the cut middle."""
    if count <= limit:
        return list(range(count))
    head, tail = (limit + 1) // 2, limit // 2
    return list(range(head)) + [None] + list(range(count - tail, count))
