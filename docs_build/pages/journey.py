"""The journey page's figures and numbers ("One token's journey", ``docs/journey.md``): each
``<!-- glassllm:journey NAME -->`` line becomes a picture or a sentence about the featured
prompt, measured by this build (``engine/child.py: prove_circuit``), in the page's language.

- ``prompt``: the prompt (an English sentence written twice, cut in the second copy) as the
  model's tokens, numbered, and the model's top next tokens at the end;
- ``previous`` / ``induction``: the featured previous-token and induction head's attention from
  the last position, drawn as arcs over the prompt (The Illustrated Transformer's view), and
  where it looks, hit or miss;
- ``answer``: how sure the model ends up, and its loss on the answer in nats;
- ``limits``: the induction heads by name, and where copying holds and fails (the model
  card's table, ``pages/limits.py``), with the featured story's made-up name token by token.

Without the circuit measurements (a model too small for the prompt) each marker becomes a
sentence saying so.
"""

from __future__ import annotations

import math
import re
from html import escape

from ..errors import DocsBuildError
from ..text.markdown import fmt, md_escape, number
from ..text.tokens import TokenLabels
from .circuit_proof import limits_lines, names

JOURNEY_MARKER = re.compile(r"^<!-- glassllm:journey (\w+) -->[ \t]*$", re.M)
NAMES = ("prompt", "previous", "induction", "answer", "limits")
CELL, TEXT_Y, ARC_TOP = 15, 150, 12  # px per one-character token, the text's baseline, the highest arc
CHAR = 7  # px per character of a longer token's label
SHOWN_WEIGHT = 0.02  # arcs below this weight are left out (they would be invisible)


def head_of(circuit: dict, kind: str) -> dict | None:
    """The job of the featured head of ``kind``: of the qualifying heads (or, when none
    qualifies, of the best head, ``featured_jobs``), the one with the best probe score, as
    the attention pages feature it; None without one."""
    source = circuit.get("featured_jobs") or circuit["jobs"]
    jobs = [j for j in source.get("jobs", []) if j["kind"] == kind]
    scores = circuit["ablation"]["clean"][kind]
    return max(jobs, key=lambda j: scores[j["layer"]][j["head"]]) if jobs else None


def arcs_svg(tokens: list[int], row: list[float], labels: TokenLabels, query: int,
             target: int | None, title: str, ui) -> str:
    """The attention of position ``query`` as arcs over the text, thicker for more weight,
    the target's red; the picture is cut just above its highest arc."""

    widths = [max(CELL, CHAR * len(labels(t)) + 6) for t in tokens]
    starts = [10 + sum(widths[:i]) for i in range(len(tokens))]

    def x(i):
        return starts[i] + widths[i] // 2

    arcs, top = [], TEXT_Y - 24
    for j, weight in enumerate(row):
        if weight < SHOWN_WEIGHT or j == query:
            continue
        span = abs(x(query) - x(j))
        lift = max(ARC_TOP, TEXT_Y - 14 - min(TEXT_Y - 20, span * 0.45))
        top = min(top, int(((TEXT_Y - 12) + lift) / 2) - 6)  # a quadratic's peak is halfway
        colour = "#d62728" if j == target else "#1f77b4"
        arcs.append(f'<path d="M{x(query)},{TEXT_Y - 12} Q{(x(query) + x(j)) // 2},{lift:.0f} '
                    f'{x(j)},{TEXT_Y - 12}" fill="none" stroke="{colour}" '
                    f'stroke-width="{1 + 7 * weight:.1f}" stroke-opacity="{0.25 + 0.75 * weight:.2f}">'
                    f"<title>{escape(labels(tokens[j]))} {j}: {number(ui, weight)}</title></path>")
    top = max(top, 0)
    width, height = sum(widths) + 20, TEXT_Y + 26 - top
    out = [f'<svg class="gl-arcs" width="{width}" '
           f'height="{height}" viewBox="0 {top} {width} {height}" role="img" '
           f'aria-label="{escape(title)}">', *arcs, '<g text-anchor="middle">']
    # the one-character tokens as one text with a position per character (the page's
    # weight); the query, the target and longer labels each their own
    plain = [i for i, t in enumerate(tokens) if i not in (query, target) and len(labels(t)) == 1]
    out.append(f'<text x="{" ".join(str(x(i)) for i in plain)}" y="{TEXT_Y}">'
               f'{escape("".join(labels(tokens[i]) for i in plain))}</text>')
    for i, token in enumerate(tokens):
        if i in plain:
            continue
        cls = ' class="gl-arcs-query"' if i == query else (' class="gl-arcs-target"' if i == target else "")
        out.append(f'<text x="{x(i)}" y="{TEXT_Y}"{cls}>{escape(labels(token))}</text>')
    indices = [i for i in range(len(tokens)) if i % 10 == 0 or i == query]
    out.append('<g class="gl-arcs-index">')
    out += [f'<text x="{x(i)}" y="{TEXT_Y + 16}">{i}</text>' for i in indices]
    out.append("</g></g></svg>")
    return "".join(out)


def job_figure(circuit: dict, job: dict, labels: TokenLabels, ui) -> str:
    """One head's attention from its job's position on the circuit's prompt, as arcs, with
    the generated sentence saying whether it reaches its target (``circuits`` ``jobs``)."""
    kind, tokens = job["kind"], circuit["tokens"]
    row = circuit["rows"][job["layer"]][job["head"]]
    head = f"L{job['layer']}H{job['head']}"
    query = job["position"]
    fields = dict(head=head, position=query, token=labels(tokens[query]),
                  weight=number(ui, job["weight"] or 0.0))
    if job["target"] is None:
        sentence = fmt(ui, "journey.no_target", **fields)
    elif job["hits"]:
        sentence = fmt(ui, f"journey.{kind}.hits", **fields, target=job["target"],
                       target_token=labels(tokens[job["target"]]))
    else:
        sentence = fmt(ui, f"journey.{kind}.misses", **fields, target=job["target"],
                       target_token=labels(tokens[job["target"]]), looks_at=job["looks_at"],
                       looks_token=labels(tokens[job["looks_at"]]),
                       looks_weight=number(ui, job["looks_weight"]))
    score = circuit["ablation"]["clean"][kind][job["layer"]][job["head"]]
    if score < circuit["qualifies"]:
        sentence += " " + fmt(ui, "journey.not_qualifying", head=head, score=number(ui, score),
                              kind=ui[f"journey.kind.{kind}"],
                              qualifies=number(ui, circuit["qualifies"]))
    title = fmt(ui, "journey.arcs_title", head=head, position=query)
    svg = arcs_svg(tokens, row, labels, query, job["target"], title, ui)
    return (f'<figure class="gl-journey-figure" data-layer="{job["layer"]}" '
            f'data-head="{job["head"]}">{svg}<figcaption>{escape(sentence)} '
            f'{escape(fmt(ui, "journey.arcs_key", shown=SHOWN_WEIGHT))}</figcaption></figure>')


def job_of(circuit: dict, layer: int, head: int) -> dict | None:
    """The job of one head on the circuit's prompt: of a qualifying head, or of the best head
    of a kind none of which qualifies (``featured_jobs``); None for any other head."""
    source = circuit.get("featured_jobs") or circuit["jobs"]
    return next((j for j in source.get("jobs", [])
                 if (j["layer"], j["head"]) == (layer, head)), None)


def attention_figure(circuit: dict, kind: str, labels: TokenLabels, ui) -> str:
    job = head_of(circuit, kind)
    if job is None:
        return md_escape(fmt(ui, "journey.no_head", kind=ui[f"journey.kind.{kind}"]))
    return job_figure(circuit, job, labels, ui)


def prompt_block(circuit: dict, labels: TokenLabels, ui) -> str:
    tokens = circuit["tokens"]
    top = circuit["top"]
    guesses = ", ".join(f"“{labels(t)}” {number(ui, p)}" for t, p in top)
    split = " | ".join(f"{i} “{labels(t)}”" for i, t in enumerate(tokens))
    return md_escape(fmt(ui, "journey.prompt", prompt=circuit["prompt"], n=len(tokens),
                         last=len(tokens) - 1, token=labels(tokens[-1]), guesses=guesses,
                         split=split, vocab=circuit.get("vocab", len(labels.labels))))


def answer_block(circuit: dict, labels: TokenLabels, ui) -> str:
    token, p = circuit["top"][0]
    attribution = circuit["attribution"]
    parts = ""
    if "unavailable" not in attribution:
        mlp = attribution["mlps"]
        layer = max(range(len(mlp)), key=lambda l: mlp[l])
        parts = " " + fmt(ui, "journey.answer_parts", logit=number(ui, attribution["logit"]),
                          layer=layer, mlp=number(ui, mlp[layer]))
    return md_escape(fmt(ui, "journey.answer", token=labels(token), p=number(ui, p),
                         nats=number(ui, -math.log(p))) + parts)


def limits_block(circuit: dict, labels: TokenLabels, ui) -> str:
    """The induction heads by name, then where copying holds and where it fails."""
    heads = circuit["ablation"]["heads"]["induction"]
    if not circuit.get("limits"):
        return md_escape(ui["journey.unmeasured"])
    intro = md_escape(fmt(ui, "journey.limits", count=len(heads), heads=names(heads, ui))
                      if heads else fmt(ui, "journey.limits.none",
                                        qualifies=number(ui, circuit["qualifies"])))
    return "\n".join([intro, "", *limits_lines(circuit, labels, ui, intro=False)])


def fill_journey(markdown: str, page_uri: str, circuit: dict | None, labels: TokenLabels,
                 ui) -> str:
    """``markdown`` with each journey marker replaced (unchanged without one); an unknown
    marker name stops the build naming the page."""
    if not JOURNEY_MARKER.search(markdown):
        return markdown

    def replace(match) -> str:
        name = match.group(1)
        if name not in NAMES:
            raise DocsBuildError(f"{page_uri}: unknown marker <!-- glassllm:journey {name} -->; "
                                 f"the names are {', '.join(NAMES)}")
        if circuit is None:
            return md_escape(ui["journey.unmeasured"])
        if name == "prompt":
            return prompt_block(circuit, labels, ui)
        if name == "answer":
            return answer_block(circuit, labels, ui)
        if name == "limits":
            return limits_block(circuit, labels, ui)
        return attention_figure(circuit, "previous_token" if name == "previous" else "induction",
                                labels, ui)

    return JOURNEY_MARKER.sub(replace, markdown)
