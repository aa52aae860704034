"""Turn snapshot arrays into escaped HTML: stable number formatting, bounded tables, heatmaps.

Every function returns deterministic text (no dict-order or float-repr surprises), so two
builds of the same checkout are byte-identical. Every label and number goes through
``html.escape``.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from dataclasses import dataclass
from html import escape

import numpy as np

MINUS_INF, PLUS_INF, NOT_A_NUMBER = "−∞", "+∞", "NaN"
ELLIPSIS = "…"

# Steps whose matrix is (query position, key position) under the causal mask: the cells
# above the diagonal are masked (−∞ before the softmax, exactly 0 after it).
CAUSAL_STEPS = frozenset({"attn.mask", "attn.softmax"})
ATTENTION_MATRIX_STEPS = frozenset({"attn.scores", "attn.mask", "attn.softmax"})
# Steps whose last axis is the vocabulary (one column per byte token).
VOCAB_STEPS = frozenset({"logits", "loss.grad", "probs"})

# Colour stops (sRGB). Diverging for signed values (blue below zero, red above), sequential
# for values that are never negative (probabilities, attention weights).
DIVERGING = ((0.0, (33, 102, 172)), (0.25, (103, 169, 207)), (0.5, (247, 247, 247)),
             (0.75, (239, 138, 98)), (1.0, (178, 24, 43)))
SEQUENTIAL = ((0.0, (247, 251, 255)), (0.5, (107, 174, 214)), (1.0, (8, 48, 107)))
NONFINITE_COLOUR = "#000000"


def format_value(value) -> str:
    """One number as every page and test shows it: 4 significant digits, −∞/+∞/NaN spelled."""
    if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
        return str(int(value))
    number = float(value)
    if math.isnan(number):
        return NOT_A_NUMBER
    if math.isinf(number):
        return PLUS_INF if number > 0 else MINUS_INF
    text = f"{number:.4g}"
    return "0" if text == "-0" else text


def token_label(token: int) -> str:
    """A byte token as readable text: printable ASCII as itself, space as ␣, others escaped."""
    token = int(token)
    if token == 32:
        return "␣"
    if 33 <= token <= 126:
        return chr(token)
    named = {9: "\\t", 10: "\\n", 13: "\\r"}
    return named.get(token, f"\\x{token:02x}")


def token_text(tokens) -> str:
    """Byte tokens as running text (prompts in prose): spaces stay spaces, others as labels."""
    return "".join(" " if int(t) == 32 else token_label(t) for t in tokens)


def bounded(count: int, limit: int) -> list[int | None]:
    """Indices 0..count-1, or the first and last ones with ``None`` for the cut middle."""
    if count <= limit:
        return list(range(count))
    head, tail = (limit + 1) // 2, limit // 2
    return list(range(head)) + [None] + list(range(count - tail, count))


# -- statistics -------------------------------------------------------------------------

@dataclass(frozen=True)
class Stats:
    shape: tuple[int, ...]
    dtype: str
    minimum: str
    maximum: str
    mean: str
    nonfinite: int
    neg_inf: int
    pos_inf: int
    nan: int


def stats(value: np.ndarray) -> Stats:
    """Shape, dtype, and min/max/mean over the finite entries, plus non-finite counts."""
    array = np.asarray(value)
    if array.dtype.kind in "iub":
        finite = array.reshape(-1)
        neg = pos = nan = 0
    else:
        flat = array.reshape(-1)
        finite = flat[np.isfinite(flat)]
        neg = int(np.count_nonzero(np.isneginf(flat)))
        pos = int(np.count_nonzero(np.isposinf(flat)))
        nan = int(np.count_nonzero(np.isnan(flat)))
    if finite.size:
        low, high = finite.min(), finite.max()
        mean = finite.astype(np.float64).mean()
        if array.dtype.kind in "iub" and array.ndim == 0:
            mean = int(array)
        minimum, maximum, average = format_value(low), format_value(high), format_value(mean)
    else:
        minimum = maximum = average = "—"
    return Stats(shape=tuple(int(s) for s in array.shape), dtype=str(array.dtype),
                 minimum=minimum, maximum=maximum, mean=average,
                 nonfinite=neg + pos + nan, neg_inf=neg, pos_inf=pos, nan=nan)


# -- colours ----------------------------------------------------------------------------

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
        if self.diverging:
            bound = max(abs(self.low), abs(self.high)) or 1.0
            return (format_value(-bound), "0", format_value(bound))
        return (format_value(self.low), format_value((self.low + self.high) / 2),
                format_value(self.high))


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


# -- one 2-D slice, as a table and a heatmap ---------------------------------------------

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
    index_of: object = None  # (i, j) -> index tuple into the snapshot; None means (i, j)

    def index(self, i: int, j: int) -> tuple[int, ...]:
        return self.index_of(i, j) if self.index_of is not None else (i, j)


def causal_mask(shape) -> np.ndarray:
    rows, cols = shape
    return np.triu(np.ones((rows, cols), dtype=bool), k=1)


def make_slice(step_id: str, layer, head, value: np.ndarray, row_tokens) -> Slice:
    """The 2-D slice of a (per-head) snapshot with its axis labels and masked cells."""
    value = np.asarray(value)
    if value.ndim == 1:
        # a vector (the next-token distribution): a 16-wide grid, one cell per entry
        width = 16
        rows = -(-value.shape[0] // width)
        padded = np.full(rows * width, np.nan, dtype=np.float64)
        padded[:value.shape[0]] = value
        matrix = padded.reshape(rows, width)
        masked = np.zeros(matrix.shape, dtype=bool)
        masked.reshape(-1)[value.shape[0]:] = True  # padding, not data
        return Slice(step_id, layer, head, matrix,
                     Axis("byte-grid", tuple(f"{r * width:02x}" for r in range(rows))),
                     Axis("byte-grid", tuple(f"{c:x}" for c in range(width))), masked,
                     index_of=lambda i, j, w=width: (i * w + j,))
    if value.ndim != 2:
        raise ValueError(f"{step_id}: cannot show a {value.ndim}-D slice")
    n_rows, n_cols = value.shape
    row_axis = Axis("token", tuple(token_label(t) for t in row_tokens[:n_rows])) \
        if len(row_tokens) >= n_rows else Axis("feature", tuple(str(i) for i in range(n_rows)))
    if step_id in ATTENTION_MATRIX_STEPS and len(row_tokens) >= n_cols:
        col_axis = Axis("token", tuple(token_label(t) for t in row_tokens[:n_cols]))
    elif step_id in VOCAB_STEPS:
        col_axis = Axis("vocab", tuple(token_label(t) for t in range(n_cols)))
    else:
        col_axis = Axis("feature", tuple(str(j) for j in range(n_cols)))
    masked = causal_mask(value.shape) if step_id in CAUSAL_STEPS else \
        np.zeros(value.shape, dtype=bool)
    return Slice(step_id, layer, head, value, row_axis, col_axis, masked)


@dataclass(frozen=True)
class TableStrings:
    """The words a table needs, in the page's language."""

    corner: str  # header of the row-label column
    more_cols: str  # "{n} more" columns cut
    more_rows: str
    scroll_hint: str = ""  # "scroll →", beside a table wider than the screen


def table_box(hint: str, attrs: str = "") -> str:
    """The opening tag of a table's scrolling box; glassllm.css shows ``hint`` beside it
    when the table is wider than the box (a phone). ``attrs``: more attributes, as HTML."""
    hint_attr = f' data-scroll-hint="{escape(hint)}"' if hint else ""
    return f'<div class="gl-table-wrap"{hint_attr}{attrs}>'


def _cell_class(value: float, masked: bool) -> str:
    # a masked cell's −∞ is the mask's doing, not a surprise to point out in bold
    if masked:
        return "gl-masked"
    return "" if math.isfinite(value) else "gl-nonfinite"


def table_shows_all(s: Slice, max_rows: int = 12, max_cols: int = 12, focus_cols=()) -> bool:
    """Whether ``table_html`` shows every cell of the slice (then a heatmap's readout can
    read the values from it instead of carrying them twice)."""
    if s.cols.kind == "byte-grid":
        return False
    rows, cols = _table_indices(s, max_rows, max_cols, focus_cols)
    return None not in rows and None not in cols and (len(rows), len(cols)) == s.matrix.shape


def _table_indices(s: Slice, max_rows: int, max_cols: int, focus_cols=()) -> tuple[list, list]:
    n_rows, n_cols = s.matrix.shape
    rows = bounded(n_rows, max_rows)
    if s.cols.kind == "vocab" and n_cols > max_cols:
        # 256 byte columns: show those of the example's own tokens, the ones a reader can
        # follow, then an ellipsis for the rest
        chosen = sorted(set(int(t) for t in focus_cols if 0 <= int(t) < n_cols))[:max_cols]
        cols = chosen + [None] if len(chosen) < n_cols else chosen
    else:
        cols = bounded(n_cols, max_cols)
    return rows, cols


def table_html(s: Slice, strings: TableStrings, max_rows: int = 12, max_cols: int = 12,
               focus_cols=()) -> str:
    """A bounded table of the slice: rows labelled by token, an ellipsis where cut."""
    if s.cols.kind == "byte-grid":
        return vector_table_html(s, strings, max_rows)
    rows, cols = _table_indices(s, max_rows, max_cols, focus_cols)
    n_rows, n_cols = s.matrix.shape
    shown_cols = sum(1 for c in cols if c is not None)
    # which row and column of the slice each shown one is, once per table rather than per
    # cell: a cell's index is (its row's, its column's)
    where = (f' data-rows="{" ".join(str(r) for r in rows if r is not None)}"'
             f' data-cols="{" ".join(str(c) for c in cols if c is not None)}"')
    out = [table_box(strings.scroll_hint, " data-search-exclude")
           + f'<table class="gl-values"{_data_attrs(s)}{where}>',
           f'<thead><tr><th scope="col">{escape(strings.corner)}</th>']
    for c in cols:
        if c is None:
            title = strings.more_cols.format(n=n_cols - shown_cols)
            out.append(f'<th class="gl-ellipsis" title="{escape(title)}">{ELLIPSIS}</th>')
        else:
            out.append(f'<th scope="col">{escape(s.cols.labels[c])}</th>')
    out.append("</tr></thead><tbody>")
    for r in rows:
        if r is None:
            title = strings.more_rows.format(n=n_rows - sum(1 for x in rows if x is not None))
            out.append(f'<tr class="gl-ellipsis-row"><th scope="row" title="{escape(title)}">'
                       f'{ELLIPSIS}</th>' + '<td class="gl-ellipsis">⋮</td>' * len(cols) + "</tr>")
            continue
        out.append(f'<tr><th scope="row">{escape(s.rows.labels[r])}</th>')
        for c in cols:
            if c is None:
                out.append(f'<td class="gl-ellipsis">{ELLIPSIS}</td>')
                continue
            v = s.matrix[r, c]
            cls = _cell_class(float(v), bool(s.masked[r, c]))
            out.append("<td" + (f' class="{cls}"' if cls else "") + f">{escape(format_value(v))}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def vector_table_html(s: Slice, strings: TableStrings, max_rows: int = 12) -> str:
    """A vector over the vocabulary: its largest entries, one row per token, then an ellipsis."""
    flat = [(s.index(i, j)[0], float(s.matrix[i, j]))
            for i in range(s.matrix.shape[0]) for j in range(s.matrix.shape[1])
            if not s.masked[i, j]]
    # largest first; ties by token ID so the order is stable
    flat.sort(key=lambda item: (-item[1] if math.isfinite(item[1]) else math.inf, item[0]))
    shown = flat[:max_rows]
    out = [table_box(strings.scroll_hint, " data-search-exclude")
           + f'<table class="gl-values"{_data_attrs(s)}>',
           f'<thead><tr><th scope="col">{escape(strings.corner)}</th>'
           f'<th scope="col">ID</th><th scope="col">p</th></tr></thead><tbody>']
    for token, v in shown:
        out.append(f'<tr><th scope="row">{escape(token_label(token))}</th><td>{token}</td>'
                   f'<td>{escape(format_value(np.float32(v)))}</td></tr>')
    if len(flat) > len(shown):
        title = strings.more_rows.format(n=len(flat) - len(shown))
        out.append(f'<tr class="gl-ellipsis-row"><th scope="row" title="{escape(title)}">'
                   f'{ELLIPSIS}</th><td class="gl-ellipsis">⋮</td><td class="gl-ellipsis">⋮</td></tr>')
    out.append("</tbody></table></div>")
    return "".join(out)


def _data_attrs(s: Slice) -> str:
    attrs = f' data-step="{escape(s.step_id)}"'
    if s.layer is not None:
        attrs += f' data-layer="{s.layer}"'
    if s.head is not None:
        attrs += f' data-head="{s.head}"'
    return attrs


@dataclass(frozen=True)
class HeatmapStrings:
    title: str  # accessible name, e.g. "Heatmap of attn.softmax, layer 0, head 1"
    masked: str  # legend entry for masked cells
    nonfinite: str
    rows_caption: str
    cols_caption: str


HEATMAP_MAX_ROWS, HEATMAP_MAX_COLS = 64, 256
TOOLTIP_MAX_CELLS = 1024  # values for the hover readout only where they stay cheap
NO_TIP = "-"  # a cell the readout says nothing about (the padding of a byte grid)


def _hatch_pattern(pattern_id: str) -> str:
    """Grey diagonal stripes: masked cells must look unlike any colour of the scale."""
    return (f'<pattern id="{pattern_id}" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#d9d9d9"/>'
            f'<rect width="2" height="6" fill="#8c8c8c"/></pattern>')


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


def heatmap_pixels(matrix: np.ndarray, masked: np.ndarray, scale: "ColourScale") -> np.ndarray:
    """(rows, cols, 3) uint8: each cell's colour on ``scale`` (``ColourScale.colour``, for
    all cells at once); masked cells the hatch's light grey (the hatch is drawn over them)."""
    values = np.asarray(matrix, dtype=np.float64)
    finite = np.isfinite(values)
    v = np.where(finite, values, 0.0)
    if scale.diverging:
        bound = max(abs(scale.low), abs(scale.high)) or 1.0
        t = 0.5 + v / (2 * bound)
    else:
        t = (v - scale.low) / (scale.high - scale.low or 1.0)
    t = np.clip(t, 0.0, 1.0)
    positions = np.array([p for p, _ in scale.stops])
    colours = np.array([c for _, c in scale.stops], dtype=np.float64)
    # the first stop at or after t ends its segment, as _interpolate walks them
    end = np.clip(np.searchsorted(positions, t, side="left"), 1, len(positions) - 1)
    t0, t1 = positions[end - 1], positions[end]
    f = np.where(t1 == t0, 0.0, (t - t0) / np.where(t1 == t0, 1.0, t1 - t0))[..., None]
    c0, c1 = colours[end - 1], colours[end]
    out = np.round(c0 + (c1 - c0) * f).astype(np.uint8)
    out[~finite] = _rgb(NONFINITE_COLOUR)
    out[masked] = (0xD9, 0xD9, 0xD9)
    return out


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def masked_path(masked: np.ndarray, x0: int, y0: int, cw: int, ch: int) -> str:
    """SVG path data covering the masked cells: one rectangle per run of masked cells in a
    row, so the causal triangle is one path of a few dozen commands."""
    parts = []
    for i, row in enumerate(masked):
        j = 0
        while j < len(row):
            if not row[j]:
                j += 1
                continue
            start = j
            while j < len(row) and row[j]:
                j += 1
            parts.append(f"M{x0 + start * cw} {y0 + i * ch}h{(j - start) * cw}v{ch}h{-(j - start) * cw}z")
    return "".join(parts)


def tip_values(s: Slice, matrix: np.ndarray, masked: np.ndarray) -> str | None:
    """The values the hover readout shows, row-major and space-separated (``format_value``
    never writes a space), or ``None`` where the heatmap is too big for them."""
    n_rows, n_cols = matrix.shape
    if n_rows * n_cols > TOOLTIP_MAX_CELLS:
        return None
    padding = s.cols.kind == "byte-grid"
    return " ".join(NO_TIP if padding and masked[i, j] else format_value(matrix[i, j])
                    for i in range(n_rows) for j in range(n_cols))


def axis_labels_svg(axis: str, labels, fixed: int, along: list[int], font: int) -> str:
    """One axis' labels as SVG text: ``fixed`` is the x of the row labels (right-aligned) or
    the y of the column labels (centred), ``along`` each label's other coordinate.

    A run of one-character labels (most tokens) is one ``<text>`` with a position per
    character, the others one ``<text>`` each; ``data-at`` is a text's first label's index
    (heatmap.js reads the labels back for its readout).
    """
    rows = axis == "rows"
    out, i = [], 0
    while i < len(labels):
        j = i + 1
        if len(labels[i]) == 1:
            while j < len(labels) and len(labels[j]) == 1:
                j += 1
        coords = " ".join(str(c) for c in along[i:j])
        # a row label's x is repeated per character (else each would advance to the right
        # of the one before); a column label's y carries over by itself
        fixed_x = " ".join([str(fixed)] * (j - i))
        where = f'x="{fixed_x}" y="{coords}"' if rows else f'x="{coords}" y="{fixed}"'
        out.append(f'<text data-at="{i}" {where}>{escape("".join(labels[i:j]))}</text>')
        i = j
    anchor = "end" if rows else "middle"
    return (f'<g class="gl-heatmap-{axis}" text-anchor="{anchor}" font-size="{font}">'
            + "".join(out) + "</g>")


def heatmap_html(s: Slice, strings: HeatmapStrings, uid: str, in_table: bool = False,
                 readout: bool = True) -> str:
    """An inline SVG heatmap of the slice (first 64 rows x 256 columns) with its legend.

    The cells are one PNG image (a pixel per cell, drawn pixelated), the masked ones hatched
    by one path over it; axis labels stay SVG text. Small heatmaps carry their values for
    the hover readout (heatmap.js), or, ``in_table``, leave it to read them from the table
    beside them (which shows every cell: ``table_shows_all``); the tables are what screen
    readers read. ``readout=False`` leaves the values out (the probe's heatmaps: there the
    pattern is the point, and the page's weight).
    """
    matrix = s.matrix[:HEATMAP_MAX_ROWS, :HEATMAP_MAX_COLS]
    masked = s.masked[:HEATMAP_MAX_ROWS, :HEATMAP_MAX_COLS]
    n_rows, n_cols = matrix.shape
    scale = colour_scale(matrix, masked)
    cw = max(2, min(22, 520 // n_cols))
    ch = max(cw, 14)
    gutter = 8 + 7 * max((len(label) for label in s.rows.labels[:n_rows]), default=1)
    top = ch if s.cols.kind in ("token", "byte-grid") else 0
    width, height = gutter + n_cols * cw, top + n_rows * ch
    hatch = f"gl-hatch-{uid}"
    tips = tip_values(s, matrix, masked) if readout else None
    if tips is None:
        tips_attrs = ""
    else:
        tips_attrs = f' data-kind="{escape(s.cols.kind)}" data-shape="{n_rows} {n_cols}"' + (
            ' data-values-in="table"' if in_table else f' data-values="{escape(tips)}"')
    out = [f'<figure class="gl-heatmap" data-search-exclude{_data_attrs(s)}{tips_attrs}>',
           f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-heatmap-svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{escape(strings.title)}">']
    if masked.any():
        out.append(f"<defs>{_hatch_pattern(hatch)}</defs>")
    font = min(12, ch - 2)
    out.append(axis_labels_svg("rows", s.rows.labels[:n_rows], gutter - 4,
                               [top + i * ch + ch // 2 + font // 3 for i in range(n_rows)], font))
    if top:
        out.append(axis_labels_svg("cols", s.cols.labels[:n_cols], ch - 4,
                                   [gutter + j * cw + cw // 2 for j in range(n_cols)], min(font, cw)))
    png = base64.b64encode(png_bytes(heatmap_pixels(matrix, masked, scale))).decode("ascii")
    out.append(f'<image class="gl-heatmap-cells" x="{gutter}" y="{top}" width="{n_cols * cw}" '
               f'height="{n_rows * ch}" preserveAspectRatio="none" image-rendering="optimizeSpeed" '
               f'href="data:image/png;base64,{png}"/>')
    if masked.any():
        out.append(f'<path class="gl-heatmap-masked" d="{masked_path(masked, gutter, top, cw, ch)}" '
                   f'fill="url(#{hatch})"/>')
    out.append("</svg>")
    if tips is not None:
        out.append('<p class="gl-heatmap-readout" hidden></p>')
    out.append(_legend_html(scale, strings, masked=bool(masked.any()) and s.cols.kind != "byte-grid",
                            nonfinite=bool((~np.isfinite(matrix) & ~masked).any())))
    cut = []
    if s.matrix.shape[0] > n_rows or s.matrix.shape[1] > n_cols:
        cut.append(f"{n_rows}×{n_cols} / {s.matrix.shape[0]}×{s.matrix.shape[1]}")
    caption = f"{strings.rows_caption} · {strings.cols_caption}" + (f" ({cut[0]})" if cut else "")
    out.append(f'<figcaption>{escape(caption)}</figcaption></figure>')
    return "".join(out)


def _legend_html(scale: ColourScale, strings: HeatmapStrings, masked: bool,
                 nonfinite: bool) -> str:
    """A colour bar with its three ticks, then swatches for masked and non-finite cells.

    HTML, its gradient one of two classes of glassllm.css (the stops of ``DIVERGING`` and
    ``SEQUENTIAL``), so a page's many legends cost a few hundred bytes each.
    """
    kind = "diverging" if scale.diverging else "sequential"
    ticks = "".join(f"<span>{escape(t)}</span>" for t in scale.ticks)
    swatches = "".join(
        f'<span class="gl-legend-item"><span class="gl-swatch gl-swatch-{cls}"></span>'
        f"{escape(text)}</span>"
        for cls, text, shown in (("masked", strings.masked, masked),
                                 ("nonfinite", strings.nonfinite, nonfinite)) if shown)
    return (f'<div class="gl-legend" aria-hidden="true"><span class="gl-legend-scale">'
            f'<span class="gl-legend-bar gl-legend-{kind}"></span>'
            f'<span class="gl-legend-ticks">{ticks}</span></span>{swatches}</div>')


def legend_css() -> str:
    """The two colour bars' CSS gradients, from the stops the cells are drawn with (a test
    keeps glassllm.css equal to this)."""
    def gradient(stops) -> str:
        return ", ".join(f"{_interpolate(stops, t)} {round(t * 100)}%" for t, _ in stops)
    return (f".md-typeset .gl-legend-diverging {{ background: linear-gradient(to right, {gradient(DIVERGING)}); }}\n"
            f".md-typeset .gl-legend-sequential {{ background: linear-gradient(to right, {gradient(SEQUENTIAL)}); }}\n")


def shape_text(shape) -> str:
    """A shape as Python writes a tuple: ``(4, 11, 8)``, ``(256,)``, ``()``."""
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
