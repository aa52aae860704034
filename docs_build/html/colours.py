"""The heatmaps' colour scales: diverging around zero for signed values (blue below, red
above), sequential for values that are never negative (probabilities, attention weights)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..text.numbers import format_value

# Colour stops (sRGB). Diverging for signed values (blue below zero, red above), sequential
# for values that are never negative (probabilities, attention weights).
DIVERGING = ((0.0, (33, 102, 172)), (0.25, (103, 169, 207)), (0.5, (247, 247, 247)),
             (0.75, (239, 138, 98)), (1.0, (178, 24, 43)))
SEQUENTIAL = ((0.0, (247, 251, 255)), (0.5, (107, 174, 214)), (1.0, (8, 48, 107)))
NONFINITE_COLOUR = "#000000"


def _interpolate(stops, t: float) -> str:
    t = min(1.0, max(0.0, t))
    for (t0, c0), (t1, c1) in zip(stops, stops[1:]):
        if t <= t1:
            f = 0.0 if t1 == t0 else (t - t0) / (t1 - t0)
            rgb = [round(a + (b - a) * f) for a, b in zip(c0, c1)]
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return "#{:02x}{:02x}{:02x}".format(*stops[-1][1])


@dataclass(frozen=True)
class ColourScale:
    diverging: bool
    low: float
    high: float

    def colour(self, value: float) -> str:
        if not math.isfinite(value):
            return NONFINITE_COLOUR
        if self.diverging:
            bound = max(abs(self.low), abs(self.high)) or 1.0
            return _interpolate(DIVERGING, 0.5 + value / (2 * bound))
        span = self.high - self.low or 1.0
        return _interpolate(SEQUENTIAL, (value - self.low) / span)

    @property
    def stops(self):
        return DIVERGING if self.diverging else SEQUENTIAL

    @property
    def ticks(self) -> tuple[str, ...]:
        return self.tick_texts()

    def tick_texts(self, decimal: str = ".") -> tuple[str, ...]:
        """The colour bar's three labels, with the page language's decimal mark."""
        if self.diverging:
            bound = max(abs(self.low), abs(self.high)) or 1.0
            return (format_value(-bound, decimal), "0", format_value(bound, decimal))
        return (format_value(self.low, decimal), format_value((self.low + self.high) / 2, decimal),
                format_value(self.high, decimal))


def colour_scale(values: np.ndarray, masked: np.ndarray | None = None) -> ColourScale:
    """Diverging around zero for signed data, sequential from zero for non-negative data."""
    data = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(data)
    if masked is not None:
        keep &= ~masked
    finite = data[keep]
    if not finite.size:
        return ColourScale(diverging=False, low=0.0, high=1.0)
    low, high = float(finite.min()), float(finite.max())
    if low >= 0:
        return ColourScale(diverging=False, low=0.0, high=high or 1.0)
    return ColourScale(diverging=True, low=low, high=high)


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)
