"""A snapshot's statistics (shape, dtype, min/max/mean over the finite entries, the non-finite
counts) and their table."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np

from ..text.numbers import MINUS_INF, NOT_A_NUMBER, PLUS_INF, format_value, shape_text
from .tables import table_box


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


def stats(value: np.ndarray, decimal: str = ".") -> Stats:
    """Shape, dtype, and min/max/mean over the finite entries, plus non-finite counts (the
    figures written with the language's ``decimal`` mark)."""
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
        minimum, maximum, average = (format_value(x, decimal) for x in (low, high, mean))
    else:
        minimum = maximum = average = "—"
    return Stats(shape=tuple(int(s) for s in array.shape), dtype=str(array.dtype),
                 minimum=minimum, maximum=maximum, mean=average,
                 nonfinite=neg + pos + nan, neg_inf=neg, pos_inf=pos, nan=nan)


def stats_html(snaps, ui) -> str:
    """Shape, dtype, min/max/mean and non-finite count of each layer's snapshot (``snaps``:
    ``data.run.Snapshot``s of one step)."""
    per_layer = len(snaps) > 1 or snaps[0].layer is not None
    head = [ui["stats.layer"]] if per_layer else []
    head += [ui[k] for k in ("stats.shape", "stats.dtype", "stats.min", "stats.max",
                             "stats.mean", "stats.nonfinite")]
    out = [table_box(ui["table.scroll_hint"])
           + '<table class="gl-stats" data-search-exclude><thead><tr>']
    out += [f'<th scope="col">{escape(h)}</th>' for h in head]
    out.append("</tr></thead><tbody>")
    for snap in snaps:
        st = stats(snap.value, ui["number.decimal"])
        cells = [str(snap.layer)] if per_layer else []
        nonfinite = str(st.nonfinite)
        parts = [f"{MINUS_INF} {st.neg_inf}" if st.neg_inf else "",
                 f"{PLUS_INF} {st.pos_inf}" if st.pos_inf else "",
                 f"{NOT_A_NUMBER} {st.nan}" if st.nan else ""]
        detail = ", ".join(p for p in parts if p)
        if detail:
            nonfinite += f" ({detail})"
        cells += [shape_text(st.shape), st.dtype, st.minimum, st.maximum, st.mean, nonfinite]
        layer_attr = f' data-layer="{snap.layer}"' if snap.layer is not None else ""
        out.append(f'<tr data-step="{escape(snap.step_id)}"{layer_attr}>'
                   + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)
