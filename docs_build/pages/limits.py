"""Where the copying circuit holds and where it fails, with the numbers the engine's child
measured (``engine/limits.py``, cached with the example run): a table of the copy ratio ρ on
random strings of several lengths, on English written twice and on made-up names met again,
and sentences that say what the numbers say. Also the direct and indirect effect of the
strongest induction head (zeroing it moves an MLP's direct part). Used by the model card's
"Proving the circuit" and the journey page's ``<!-- glassllm:journey limits -->``."""

from __future__ import annotations

from html import escape

from ..html.tables import table_box
from ..text.markdown import fmt, number

HOLDS = 0.5  # the repeat "helps" when it removes at least half of the loss: ρ < HOLDS


def _row(ui, what: str, size: str, part: dict) -> list[str]:
    return [escape(what), escape(size), escape(number(ui, part["first"])),
            escape(number(ui, part["second"])), escape(number(ui, part["ratio"]))]


def limits_table_html(limits: dict, ui) -> str:
    header = [ui[f"limits.col.{k}"] for k in ("input", "bytes", "first", "second", "ratio")]
    rows = [_row(ui, fmt(ui, "limits.row.copy", strings=c["strings"]), str(c["length"]), c)
            for c in limits["copy"]]
    for key in ("english", "english_short"):
        if limits.get(key):
            e = limits[key]
            rows.append(_row(ui, fmt(ui, f"limits.row.{key}", n=e["sentences"]),
                             fmt(ui, "limits.mean_bytes", bytes=e["bytes"]), e))
    if limits.get("names"):
        n = limits["names"]
        rows.append(_row(ui, fmt(ui, "limits.row.names", n=len(n["names"])),
                         fmt(ui, "limits.name_bytes", bytes=len(n["names"][0])), n))
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (table_box(ui["table.scroll_hint"]) + '<table class="gl-card-table gl-limits">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def _lengths(items: list[dict], ui) -> str:
    return ", ".join(f"{c['length']} (ρ = {number(ui, c['ratio'])})" for c in items) or ui["proof.none"]


def limits_story(limits: dict, ui) -> list[str]:
    """Sentences from the numbers: which lengths copy and which do not, English, names."""
    held = [c for c in limits["copy"] if c["ratio"] < HOLDS]
    failed = [c for c in limits["copy"] if c["ratio"] >= HOLDS]
    out = [fmt(ui, "limits.copy", held=_lengths(held, ui), failed=_lengths(failed, ui),
               holds=number(ui, HOLDS))]
    english, short = limits.get("english"), limits.get("english_short")
    if english:
        key = "limits.english.fails" if english["ratio"] >= HOLDS else "limits.english.holds"
        out.append(fmt(ui, key, ratio=number(ui, english["ratio"]), n=english["sentences"],
                       bytes=english["bytes"],
                       short=number(ui, short["ratio"]) if short else "—",
                       short_bytes=short["bytes"] if short else "—"))
    names = limits.get("names")
    if names:
        out.append(fmt(ui, "limits.names", first=number(ui, names["first"]),
                       second=number(ui, names["second"]), ratio=number(ui, names["ratio"]),
                       n=len(names["names"]), names=", ".join(names["names"]),
                       story=names["story"].replace("{name}", names["names"][0])))
    return out


def indirect_story(indirect: dict | None, labels, ui) -> str | None:
    """Zeroing the strongest induction head: the logit and the MLP with the largest direct
    part, clean and ablated; says "indirect" only when that part collapses."""
    if not indirect:
        return None
    clean, ablated = indirect["clean"], indirect["ablated"]
    layer = max(range(len(clean["mlps"])), key=lambda k: clean["mlps"][k])
    before, after = clean["mlps"][layer], ablated["mlps"][layer]
    collapsed = before > 0 and after <= before / 4
    return fmt(ui, "limits.indirect.through" if collapsed else "limits.indirect.other",
               head=f"L{indirect['layer']}H{indirect['head']}", token=labels(indirect["token"]),
               logit=number(ui, clean["logit"]), ablated_logit=number(ui, ablated["logit"]),
               layer=layer, mlp=number(ui, before), ablated_mlp=number(ui, after))
