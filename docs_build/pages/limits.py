"""Where the copying circuit holds and where it fails, with the numbers the engine's child
measured (``engine/limits.py``, cached with the example run), in the model's tokens: a table
of the copy ratio ρ on random token sequences of several lengths, on English written twice
and on made-up names met again, the featured story's name token by token, and sentences that
say what the numbers say, failures included. Also the direct and indirect effect of the
strongest induction head (zeroing it moves an MLP's direct part). Used by the model card's
"Proving the circuit" and the journey page's ``<!-- glassllm:journey limits -->``."""

from __future__ import annotations

from html import escape

from ..html.tables import table_box
from ..text.markdown import fmt, number

HOLDS = 0.5  # the repeat "helps" when it removes at least half of the loss: ρ < HOLDS
COPIED = 0.5  # a name met again "is copied" when its tokens after the first get p >= COPIED


def _row(ui, what: str, size: str, part: dict) -> list[str]:
    return [escape(what), escape(size), escape(number(ui, part["first"])),
            escape(number(ui, part["second"])), escape(number(ui, part["ratio"]))]


def limits_table_html(limits: dict, ui) -> str:
    header = [ui[f"limits.col.{k}"] for k in ("input", "size", "first", "second", "ratio")]
    rows = [_row(ui, fmt(ui, "limits.row.copy", strings=c["strings"]), str(c["length"]), c)
            for c in limits["copy"]]
    for key in ("english", "english_short", "english_long"):
        if limits.get(key):
            e = limits[key]
            rows.append(_row(ui, fmt(ui, f"limits.row.{key}", n=e["sentences"]),
                             fmt(ui, "limits.mean", size=e["tokens"]), e))
    if limits.get("names"):
        n = limits["names"]
        rows.append(_row(ui, fmt(ui, "limits.row.names", n=len(n["names"])),
                         fmt(ui, "limits.mean", size=n["tokens"]), n))
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (table_box(ui["table.scroll_hint"]) + '<table class="gl-card-table gl-limits">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def _lengths(items: list[dict], ui) -> str:
    return ", ".join(f"{c['length']} (ρ = {number(ui, c['ratio'])})" for c in items)


def copy_story(copies: list[dict], ui) -> str | None:
    """Which lengths of random sequence the repeat helps (ρ < ``HOLDS``) and which not."""
    if not copies:
        return None
    held = [c for c in copies if c["ratio"] < HOLDS]
    failed = [c for c in copies if c["ratio"] >= HOLDS]
    holds = number(ui, HOLDS)
    if not failed:
        return fmt(ui, "limits.copy.all", held=_lengths(held, ui), holds=holds)
    if not held:
        return fmt(ui, "limits.copy.none", failed=_lengths(failed, ui), holds=holds)
    return fmt(ui, "limits.copy.some", held=_lengths(held, ui), failed=_lengths(failed, ui),
               holds=holds)


def english_story(english: dict, short: dict | None, copies: list[dict], ui) -> list[str]:
    """English written twice: whether the repeat helps, and how it compares with a random
    sequence of the closest length measured."""
    key = "limits.english.fails" if english["ratio"] >= HOLDS else "limits.english.holds"
    out = [fmt(ui, key, ratio=number(ui, english["ratio"]), n=english["sentences"],
               size=english["tokens"], short=number(ui, short["ratio"]) if short else "—",
               short_size=short["tokens"] if short else "—")]
    if copies:
        near = min(copies, key=lambda c: (abs(c["length"] - english["tokens"]), c["length"]))
        key = "limits.english.better" if english["ratio"] < near["ratio"] else "limits.english.worse"
        out.append(fmt(ui, key, length=near["length"], random=number(ui, near["ratio"]),
                       ratio=number(ui, english["ratio"])))
    return out


def best_head(scores: list[list[float]], kind: str) -> tuple[str, float]:
    """The best head of ``kind`` and its score: a previous-token head in a layer before the
    last, an induction head in a layer after the first (``glassllm.circuits.featured_heads``)."""
    layers = range(len(scores))
    layers = layers[:-1] if kind == "previous_token" and len(scores) > 1 else \
        layers[1:] if kind == "induction" and len(scores) > 1 else layers
    layer, head = max(((l, r) for l in layers for r in range(len(scores[l]))),
                      key=lambda lr: scores[lr[0]][lr[1]])
    return f"L{layer}H{head}", float(scores[layer][head])


def english_heads_story(english: dict, qualifies: float, ui) -> str | None:
    """The heads on held-out English written twice, scored as the probe scores them, with
    the rule that makes a head qualify."""
    if "induction" not in english:
        return None
    ind_head, ind = best_head(english["induction"], "induction")
    prev_head, prev = best_head(english["previous_token"], "previous_token")
    key = {(True, True): "both", (True, False): "induction_only",
           (False, True): "previous_only", (False, False): "neither"}[(ind >= qualifies,
                                                                      prev >= qualifies)]
    return fmt(ui, f"limits.english.heads.{key}", ind_head=ind_head, ind=number(ui, ind),
               prev_head=prev_head, prev=number(ui, prev), qualifies=number(ui, qualifies))


def name_example_story(example: dict | None, labels, ui) -> list[str]:
    """The featured story's name, token by token: its probability at the first mention and
    when met again; copied when its tokens after the first get ``COPIED`` on average."""
    if not example:
        return []
    ids = example["name_tokens"]

    def listed(values: list[float]) -> str:
        return ", ".join(number(ui, v) for v in values)
    out = [fmt(ui, "limits.name_example", story=example["story"], name=example["name"],
               n=len(ids), split=" | ".join(f"“{labels(t)}”" for t in ids),
               first=listed(example["p_first"]), again=listed(example["p_again"]))]
    if len(ids) > 1:
        again = sum(example["p_again"][1:]) / (len(ids) - 1)
        first = sum(example["p_first"][1:]) / (len(ids) - 1)
        key = "limits.name_example.copied" if again >= COPIED else "limits.name_example.not_copied"
        out.append(fmt(ui, key, again=number(ui, again), first=number(ui, first)))
    return out


def limits_story(limits: dict, ui, labels=None, qualifies: float | None = None) -> list[str]:
    """Sentences from the numbers: which lengths copy and which do not, English (with
    ``qualifies``, the heads' scores on it by the rule), names, and (with ``labels``) the
    featured story's name."""
    out = []
    told = copy_story(limits["copy"], ui)
    out += [told] if told else []
    english, short = limits.get("english"), limits.get("english_short")
    if english:
        out += english_story(english, short, limits["copy"], ui)
        told = None if qualifies is None else english_heads_story(english, qualifies, ui)
        out += [told] if told else []
    longer = limits.get("english_long")
    if longer:
        key = "limits.english_long.fails" if longer["ratio"] >= HOLDS else "limits.english_long.holds"
        out.append(fmt(ui, key, n=longer["sentences"], size=longer["tokens"],
                       ratio=number(ui, longer["ratio"])))
    names = limits.get("names")
    if names:
        out.append(fmt(ui, "limits.names", first=number(ui, names["first"]),
                       second=number(ui, names["second"]), ratio=number(ui, names["ratio"]),
                       n=len(names["names"]), names=", ".join(names["names"]),
                       story=names["story"].replace("{name}", names["names"][0])))
    if labels is not None:
        out += name_example_story(limits.get("name_example"), labels, ui)
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
