"""A slice as a bounded table: rows labelled by token, an ellipsis where cut, masked and
non-finite cells marked; the scrolling box every table of the site sits in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import numpy as np

from ..text.numbers import ELLIPSIS, bounded, format_value
from .slices import Slice, data_attrs


@dataclass(frozen=True)
class TableStrings:
    """The words a table needs, in the page's language."""

    corner: str  # header of the row-label column
    more_cols: str  # "{n} more" columns cut
    more_rows: str
    scroll_hint: str = ""  # "scroll →", beside a table wider than the screen
    decimal: str = "."  # the page language's decimal mark


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


def shown_cells(s: Slice, max_rows: int = 12, max_cols: int = 12, focus_cols=()):
    """The (rows, columns) of the slice that ``table_html`` shows, or None for a vector's
    table (its top entries, not a grid of the slice)."""
    if s.cols.kind == "byte-grid":
        return None
    rows, cols = _table_indices(s, max_rows, max_cols, focus_cols)
    return [r for r in rows if r is not None], [c for c in cols if c is not None]


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


def _runs(rows: list) -> list[list[int]]:
    """The runs of shown rows (indices) between the cut ones (``None``)."""
    runs: list[list[int]] = [[]]
    for r in rows:
        if r is None:
            runs.append([])
        else:
            runs[-1].append(r)
    return [run for run in runs if run]


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
    # no scope="col"/"row" on the header cells: HTML's table model makes the head row's cells
    # column headers and the first column's row headers on its own (the scope "auto": no data
    # cell in their row, or their column), and a table of 150 header cells weighs 2 KB less
    out = [table_box(strings.scroll_hint, " data-search-exclude")
           + f'<table class="gl-values"{data_attrs(s)}{where}>',
           f'<thead><tr><th>{escape(strings.corner)}</th>']
    for c in cols:
        if c is None:
            title = strings.more_cols.format(n=n_cols - shown_cols)
            out.append(f'<th class="gl-ellipsis" title="{escape(title)}">{ELLIPSIS}</th>')
        else:
            out.append(f'<th>{escape(s.cols.labels[c])}</th>')
    out.append("</tr></thead><tbody>")
    # the cut columns' ellipsis: one cell down each run of shown rows (rowspan), not one a row
    run_lengths = [len(run) for run in _runs(rows)]
    run_start = True
    for r in rows:
        if r is None:
            title = strings.more_rows.format(n=n_rows - sum(1 for x in rows if x is not None))
            out.append(f'<tr class="gl-ellipsis-row"><th title="{escape(title)}">'
                       f'{ELLIPSIS}</th>' + '<td class="gl-ellipsis">⋮</td>' * len(cols) + "</tr>")
            run_start = True
            continue
        out.append(f'<tr><th>{escape(s.rows.labels[r])}</th>')
        span = run_lengths.pop(0) if run_start else 0
        run_start = False
        for c in cols:
            if c is None:
                if span:
                    rowspan = f' rowspan="{span}"' if span > 1 else ""
                    out.append(f'<td class="gl-ellipsis"{rowspan}>{ELLIPSIS}</td>')
                continue
            v = s.matrix[r, c]
            cls = _cell_class(float(v), bool(s.masked[r, c]))
            out.append("<td" + (f' class="{cls}"' if cls else "") + f">{escape(format_value(v, strings.decimal))}</td>")
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
           + f'<table class="gl-values"{data_attrs(s)}>',
           f'<thead><tr><th scope="col">{escape(strings.corner)}</th>'
           f'<th scope="col">ID</th><th scope="col">p</th></tr></thead><tbody>']
    for token, v in shown:
        out.append(f'<tr><th scope="row">{escape(s.labels(token))}</th><td>{token}</td>'
                   f'<td>{escape(format_value(np.float32(v), strings.decimal))}</td></tr>')
    if len(flat) > len(shown):
        title = strings.more_rows.format(n=len(flat) - len(shown))
        out.append(f'<tr class="gl-ellipsis-row"><th scope="row" title="{escape(title)}">'
                   f'{ELLIPSIS}</th><td class="gl-ellipsis">⋮</td><td class="gl-ellipsis">⋮</td></tr>')
    out.append("</tbody></table></div>")
    return "".join(out)
