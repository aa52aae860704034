"""A slice as an inline SVG heatmap: the cells one PNG image, the masked ones hatched, axis
labels as SVG text, a legend of its colour scale."""

from __future__ import annotations

import base64
from decimal import Decimal
from dataclasses import dataclass
from html import escape

import numpy as np

from ..text.numbers import MINUS_INF, NOT_A_NUMBER, PLUS_INF, format_value
from .colours import NONFINITE_COLOUR, ColourScale, colour_scale, rgb
from .png import png_bytes
from .slices import Slice, data_attrs


@dataclass(frozen=True)
class HeatmapStrings:
    title: str  # accessible name, e.g. "Heatmap of attn.softmax, layer 0, head 1"
    masked: str  # legend entry for masked cells
    nonfinite: str
    rows_caption: str
    cols_caption: str
    decimal: str = "."  # the page language's decimal mark, for the colour bar's labels


HEATMAP_MAX_ROWS, HEATMAP_MAX_COLS = 64, 256
TOOLTIP_MAX_CELLS = 1024  # values for the hover readout only where they stay cheap
NO_TIP = "-"  # a cell the readout says nothing about (the padding of a byte grid)


def _hatch_pattern(pattern_id: str) -> str:
    """Grey diagonal stripes: masked cells must look unlike any colour of the scale."""
    return (f'<pattern id="{pattern_id}" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#d9d9d9"/>'
            f'<rect width="2" height="6" fill="#8c8c8c"/></pattern>')


def heatmap_pixels(matrix: np.ndarray, masked: np.ndarray, scale: ColourScale) -> np.ndarray:
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
    out[~finite] = rgb(NONFINITE_COLOUR)
    out[masked] = (0xD9, 0xD9, 0xD9)
    return out


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


def tip_texts(s: Slice, matrix: np.ndarray, masked: np.ndarray) -> list[str] | None:
    """The values the hover readout shows, row-major, as ``format_value`` writes them, or
    ``None`` where the heatmap is too big for them."""
    n_rows, n_cols = matrix.shape
    if n_rows * n_cols > TOOLTIP_MAX_CELLS:
        return None
    padding = s.cols.kind == "byte-grid"
    return [NO_TIP if padding and masked[i, j] else format_value(matrix[i, j])
            for i in range(n_rows) for j in range(n_cols)]


# -- the readout's values, three or four characters each --------------------------------------
# A value as the pages write it (``format_value``: 4 significant digits) is a sign, a mantissa
# m of 4 digits and a power of ten e: (sign, e, m) is one number below 2**24, written as 4
# base64url characters (heatmap.js: decodeValues). A heatmap whose powers of ten span at most
# 14 (nearly all: one step's values) writes e from its lowest one, ``data-code-base``, and the
# number fits 3 characters (below 64**3). A third of the text of the values themselves.

CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
CODE_SPECIALS = (NO_TIP, "0", PLUS_INF, MINUS_INF, NOT_A_NUMBER)
CODE_EXPONENTS = (-50, 40)  # float32's range, 4 digits: 1401e-48 to 3403e35
SHORT_SPAN = 14  # powers of ten a 3-character code holds: 5 + 2 * 14 * 9000 <= 64**3


def _parts(text: str):
    """(sign, mantissa of 4 digits, power of ten) of a value ``format_value`` wrote, or None
    (more than 4 significant digits: an integer of 5 or more)."""
    sign, digits, exponent = Decimal(text).as_tuple()
    if len(digits) > 4 or not isinstance(exponent, int) or digits[0] == 0:
        return None
    return (sign, int("".join(map(str, digits))) * 10 ** (4 - len(digits)),
            exponent - (4 - len(digits)))


def value_code(text: str, base: int | None = None) -> str | None:
    """``text`` (a value as ``format_value`` writes it) in 4 characters, or in 3 with its power
    of ten counted from ``base`` (up to ``SHORT_SPAN`` above it); None if it has no code."""
    low, high, width = ((base, base + SHORT_SPAN - 1, 3) if base is not None
                        else (*CODE_EXPONENTS, 4))
    if text in CODE_SPECIALS:
        number = CODE_SPECIALS.index(text)
    else:
        parts = _parts(text)
        if parts is None or not low <= parts[2] <= high:
            return None
        sign, mantissa, exponent = parts
        number = len(CODE_SPECIALS) + ((sign * (high - low + 1) + exponent - low) * 9000
                                       + mantissa - 1000)
    return "".join(CODE_ALPHABET[(number >> (6 * k)) & 63] for k in reversed(range(width)))


def code_base(texts) -> int | None:
    """The lowest power of ten of ``texts`` when all of theirs fit 3-character codes."""
    exponents = [parts[2] for t in texts if t not in CODE_SPECIALS
                 for parts in [_parts(t)] if parts is not None]
    if not exponents or max(exponents) - min(exponents) >= SHORT_SPAN:
        return None
    return min(exponents)


def value_codes(texts, base: int | None = None) -> str | None:
    """The texts' codes, one after another; None if one of them has no code."""
    codes = [value_code(t, base) for t in texts]
    return None if None in codes else "".join(codes)


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


def heatmap_html(s: Slice, strings: HeatmapStrings, uid: str, table_cells=None,
                 readout: bool = True) -> str:
    """An inline SVG heatmap of the slice (first 64 rows x 256 columns) with its legend.

    The cells are one PNG image (a pixel per cell, drawn pixelated), the masked ones hatched
    by one path over it; axis labels stay SVG text. Small heatmaps carry their values for
    the hover readout (heatmap.js), three or four characters each (``value_code``); with
    ``table_cells``, the (rows, columns) the table beside it shows, only the others: the
    readout reads those from the table (``data-values-in="table"``), and the values are
    stored once. The tables are what screen readers read. ``readout=False`` leaves the values
    out (the probe's heatmaps: there the pattern is the point, and the page's weight).
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
    texts = tip_texts(s, matrix, masked) if readout else None
    # the shape drawn, also without a readout: a worked entry outlines its cell (worked.js)
    tips_attrs = f' data-shape="{n_rows} {n_cols}"'
    if texts is not None:
        tips_attrs = f' data-kind="{escape(s.cols.kind)}"' + tips_attrs
        if table_cells is not None:
            shown = {(i, j) for i in table_cells[0] for j in table_cells[1]}
            texts = [t for k, t in enumerate(texts) if divmod(k, n_cols) not in shown]
            tips_attrs += ' data-values-in="table"'
        base = code_base(texts)
        codes = value_codes(texts, base)
        if codes is not None:
            tips_attrs += f' data-codes="{codes}"' if codes else ""
            tips_attrs += f' data-code-base="{base}"' if codes and base is not None else ""
        else:
            tips_attrs += f' data-values="{escape(" ".join(texts))}"'
    out = [f'<figure class="gl-heatmap" data-search-exclude{data_attrs(s)}{tips_attrs}>',
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
               f'height="{n_rows * ch}" preserveAspectRatio="none" '
               f'href="data:image/png;base64,{png}"/>')
    if masked.any():
        out.append(f'<path class="gl-heatmap-masked" d="{masked_path(masked, gutter, top, cw, ch)}" '
                   f'fill="url(#{hatch})"/>')
    out.append("</svg>")
    if texts is not None:
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
    ticks = "".join(f"<span>{escape(t)}</span>" for t in scale.tick_texts(strings.decimal))
    swatches = "".join(
        f'<span class="gl-legend-item"><span class="gl-swatch gl-swatch-{cls}"></span>'
        f"{escape(text)}</span>"
        for cls, text, shown in (("masked", strings.masked, masked),
                                 ("nonfinite", strings.nonfinite, nonfinite)) if shown)
    return (f'<div class="gl-legend" aria-hidden="true"><span class="gl-legend-scale">'
            f'<span class="gl-legend-bar gl-legend-{kind}"></span>'
            f'<span class="gl-legend-ticks">{ticks}</span></span>{swatches}</div>')
