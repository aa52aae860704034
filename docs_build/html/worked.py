"""A worked number as HTML: which entry and why, the terms, the arithmetic, and the check of
the hand result against the snapshot (``data/worked.py`` computes it)."""

from __future__ import annotations

import re
from html import escape

from ..data.worked import CUT, Table, Worked
from ..text.markdown import fmt
from ..text.numbers import format_value
from .tables import table_box


_DECIMAL_POINT = re.compile(r"(?<=\d)\.(?=\d)")


def _math(latex: str, display: bool = True, decimal: str = ".") -> str:
    if decimal != ".":  # 0{,}8865: braces keep TeX from spacing the comma as punctuation
        latex = _DECIMAL_POINT.sub("{" + decimal + "}", latex)
    body = escape(latex, quote=False)
    if display:
        return f'<div class="arithmatex gl-worked-math">\\[{body}\\]</div>'
    return f'<span class="arithmatex">\\({body}\\)</span>'


def _aligned(lines, decimal: str = ".") -> str:
    return _math(r"\begin{aligned} " + r" \\ ".join(lines) + r" \end{aligned}", decimal=decimal)


def _table_html(table: Table, ui) -> str:
    head = "".join(f'<th scope="col">{_math(cell, False, ui["number.decimal"])}</th>'
                   for cell in table.header)
    rows = []
    for row in table.rows:
        if row[0] == CUT:
            rows.append(f'<tr class="gl-cut"><td colspan="{len(row)}">{CUT}</td></tr>')
        else:
            rows.append("<tr>" + "".join(f"<td>{_math(cell, False, ui['number.decimal'])}</td>"
                                         for cell in row) + "</tr>")
    return (table_box(ui["table.scroll_hint"])
            + f'<table class="gl-worked-terms"><thead><tr>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table></div>')


FOCUSABLE = ' tabindex="0"'  # an entry with a cell to point at takes the keyboard's focus


def _checks_html(checks, ui) -> str:
    """The redone entries beside the snapshot's values; each row focusable, its ``data-index``
    (into the step's snapshot) what assets/worked.js highlights in the page's table and
    heatmap as the reader points at it or focuses it."""
    head = "".join(f'<th scope="col">{escape(ui[k])}</th>'
                   for k in ("worked.col.entry", "worked.col.hand", "worked.col.snapshot"))
    rows = "".join(
        f'<tr{FOCUSABLE if c.index else ""} data-index="{",".join(map(str, c.index))}" '
        f'data-hand="{c.by_hand!r}" '
        f'data-snapshot="{c.snapshot!r}"><td>{_math(c.symbol, False)}</td>'
        f"<td>{escape(format_value(c.by_hand, ui['number.decimal']))}</td>"
        f"<td>{escape(format_value(c.snapshot, ui['number.decimal']))}</td></tr>"
        for c in checks)
    return (table_box(ui["table.scroll_hint"])
            + f'<table class="gl-worked-checks"><thead><tr>{head}</tr>'
            f"</thead><tbody>{rows}</tbody></table></div>")


def where_phrase(worked: Worked, ui) -> str:
    """“Layer 1, head 3, position 10 (byte t)”: which slice the entry is in, in the UI language."""
    f = worked.fields
    parts = []
    if worked.layer is not None:
        parts.append(ui["worked.where.layer"].format(layer=worked.layer))
    if worked.head is not None:
        parts.append(ui["worked.where.head"].format(head=worked.head))
    if "i" in f:
        parts.append(ui["worked.where.row"].format(i=f["i"], token=f["token"]))
    phrase = ", ".join(parts)
    return phrase[:1].upper() + phrase[1:]  # it opens the sentence


def worked_html(worked: Worked, ui: dict[str, str]) -> str:
    """One worked example as HTML: which entry and why, the terms, the arithmetic, the check."""
    note = fmt(ui, worked.note, **worked.fields, where=where_phrase(worked, ui))
    layer = "" if worked.layer is None else f' data-layer="{worked.layer}"'
    head = "" if worked.head is None else f' data-head="{worked.head}"'
    parts = [f'<div class="gl-worked" data-step="{escape(worked.step_id)}"{layer}{head}>',
             f"<p>{escape(note)}</p>"]
    if worked.lines:
        parts.append(_aligned(worked.lines, ui["number.decimal"]))
    if worked.table is not None:
        parts.append(_table_html(worked.table, ui))
    if worked.after:
        parts.append(_aligned(worked.after, ui["number.decimal"]))
    parts.append(f'<p class="gl-note">{escape(ui["worked.check"])}</p>')
    parts.append(_checks_html(worked.checks, ui))
    parts.append("</div>")
    return "\n".join(parts)
