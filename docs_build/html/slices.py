"""One 2-D slice of a snapshot (one layer, one head), with what its rows and columns mean:
the shape the value tables and the heatmaps draw."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np

from ..engine.schema import Step
from ..text.tokens import TokenLabels


@dataclass(frozen=True)
class Axis:
    """Labels of one axis of a slice: ``kind`` is "token", "vocab", "feature" or "byte-grid"."""

    kind: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Slice:
    """A 2-D view of a snapshot (one layer, one head) with what its rows and columns mean."""

    step_id: str
    layer: int | None
    head: int | None
    matrix: np.ndarray  # 2-D
    rows: Axis
    cols: Axis
    masked: np.ndarray  # bool, same shape as matrix
    labels: TokenLabels  # the label of each token ID (a byte grid's rows name tokens)
    index_of: object = None  # (i, j) -> index tuple into the snapshot; None means (i, j)

    def index(self, i: int, j: int) -> tuple[int, ...]:
        return self.index_of(i, j) if self.index_of is not None else (i, j)


GRID_ROWS = 64  # a vector's grid has at most this many rows (the heatmaps draw 64)


def grid_width(n: int) -> int:
    """The columns of the grid a vector of ``n`` entries (the vocabulary) is drawn as: 16,
    or the next power of two that keeps it within ``GRID_ROWS`` rows (2,048 tokens: 64)."""
    width = 16
    while -(-n // width) > GRID_ROWS:
        width *= 2
    return width


def causal_mask(shape) -> np.ndarray:
    rows, cols = shape
    return np.triu(np.ones((rows, cols), dtype=bool), k=1)


def make_slice(step: Step, layer, head, value: np.ndarray, row_tokens,
               labels: TokenLabels) -> Slice:
    """The 2-D slice of a (per-head) snapshot with its axis labels and masked cells; the
    step's facts say which axes are tokens or the vocabulary and which cells are masked."""
    value = np.asarray(value)
    if value.ndim == 1:
        # a vector (the next-token distribution): a grid, one cell per entry, row-major
        width = grid_width(value.shape[0])
        rows = -(-value.shape[0] // width)
        padded = np.full(rows * width, np.nan, dtype=np.float64)
        padded[:value.shape[0]] = value
        matrix = padded.reshape(rows, width)
        masked = np.zeros(matrix.shape, dtype=bool)
        masked.reshape(-1)[value.shape[0]:] = True  # padding, not data
        return Slice(step.id, layer, head, matrix,
                     Axis("byte-grid", tuple(f"{r * width:02x}" for r in range(rows))),
                     Axis("byte-grid", tuple(f"{c:x}" for c in range(width))), masked, labels,
                     index_of=lambda i, j, w=width: (i * w + j,))
    if value.ndim != 2:
        raise ValueError(f"{step.id}: cannot show a {value.ndim}-D slice")
    n_rows, n_cols = value.shape
    row_axis = Axis("token", tuple(labels(t) for t in row_tokens[:n_rows])) \
        if len(row_tokens) >= n_rows else Axis("feature", tuple(str(i) for i in range(n_rows)))
    if step.axes[-2:] == ("query", "key") and len(row_tokens) >= n_cols:
        col_axis = Axis("token", tuple(labels(t) for t in row_tokens[:n_cols]))
    elif step.vocabulary:
        col_axis = Axis("vocab", tuple(labels(t) for t in range(n_cols)))
    else:
        col_axis = Axis("feature", tuple(str(j) for j in range(n_cols)))
    masked = causal_mask(value.shape) if step.causal else np.zeros(value.shape, dtype=bool)
    return Slice(step.id, layer, head, value, row_axis, col_axis, masked, labels)


def data_attrs(s: Slice) -> str:
    """The HTML attributes that name a slice's step, layer and head (tables, heatmaps)."""
    attrs = f' data-step="{escape(s.step_id)}"'
    if s.layer is not None:
        attrs += f' data-layer="{s.layer}"'
    if s.head is not None:
        attrs += f' data-head="{s.head}"'
    return attrs
