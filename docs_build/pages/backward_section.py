"""A step page's "Backward" section: the step's backward rule (``glassllm.backward.GRADS``)
rendered as its equation is, the link to its ``# @grad`` line, ∂ℒ/∂value from the example's
training step (``engine/training_step.py``) as a table and heatmap, and one entry of the rule
worked by hand (``data/backward.py``). The words are ``docs/_texts/<lang>/backward.yml``.

Weight: the pages stay under their 120 KB budget, so the section shows one slice — the layer
and head the page's worked number uses (the featured head) —: the largest entries of its last
row in a small table, a heatmap whose readout holds every value, and the largest |gradient|
of every layer and head in one small table; the worked entry is plain text, not typeset math.
The four attention pages of ``FEATURED_STEPS`` (probe heatmaps beside the forward's, ~114 KB
before this section) get the rule, its line, the table and the worked entry only.
"""

from __future__ import annotations

import dataclasses
import re
from html import escape
from pathlib import Path

import numpy as np

from ..data.backward import GENERATION_ONLY, GradWorked, grad_snapshots, grad_worked
from ..data.heads import FEATURED_STEPS
from ..data.worked import block_layer_head
from ..html.heatmap import HeatmapStrings, heatmap_html
from ..html.math import display_math
from ..html.slices import make_slice
from ..text.files import load_sentences
from ..text.languages import Language
from ..text.markdown import fmt, md_code, md_escape, md_rel, number
from .urls import source_page_uri

FILENAME = "backward.yml"
ANCHOR = "backward"  # the section's id: the training-step page links each step's
# the heaviest page (step_page.TIMELAPSE_STEP: the time-lapse too): its last row's gradients
# are shown once, as the worked entry's terms (Ā and A of the row), not also in a table
ROW_IN_WORKED = "attn.softmax"
TOP = 6  # entries of the last row's gradient the table lists
GRAD_CLASS = "gl-grad"  # on the gradient's table and heatmap: not the forward's snapshot


def load_backward_texts(docs_dir: Path, lang: Language) -> dict[str, str]:
    """``docs/_texts/<lang>/backward.yml``: a flat dict of strings."""
    return load_sentences(docs_dir, lang.code, FILENAME,
                          "the Backward sections and the training-step page")


def rule_of(run, step_id: str):
    return next(r for r in run.training.rules if r.id == step_id)


def grad_link(rule, me: str, lang: Language, source, ui) -> str:
    """Markdown: the ``# @grad`` line on the site's source page, and in the repository."""
    link = (f"[{md_escape(fmt(ui, 'source.line', file=rule.file, line=rule.line))}]"
            f"({md_rel(me, source_page_uri(rule.file, lang.prefix))}#L{rule.line})")
    repo = source.repo_url(rule.file, rule.line)
    if repo:
        link += f" · [{md_escape(ui['source.repo'])}](<{repo}>)"
    return link


def _grad_heatmap(step, snap, head, ui, run) -> str:
    """The gradient of one slice as a heatmap whose hover readout holds every value (no table
    beside it: the attention pages have no room for one), marked as a gradient: its own
    element IDs and data-step, so neither the forward's scripts nor its tests take it."""
    value = snap.value if head is None else snap.value[head]
    s = make_slice(dataclasses.replace(step, id=f"∂ℒ/∂{step.id}"), snap.layer, head, value,
                   snap.row_tokens, run.labels)
    where = " · ".join(x for x in (
        fmt(ui, "layer", layer=snap.layer) if snap.layer is not None else "",
        fmt(ui, "head", head=head) if head is not None else "") if x)
    rows = ui["heatmap.rows.byte"] if s.cols.kind == "byte-grid" else ui["heatmap.rows.token"]
    cols = {"token": ui["heatmap.cols.token"], "vocab": ui["heatmap.cols.vocab"],
            "byte-grid": ui["heatmap.cols.byte"]}.get(s.cols.kind, ui["heatmap.cols.feature"])
    strings = HeatmapStrings(
        title=fmt(ui, "heatmap.title", step=s.step_id, where=where or s.step_id),
        masked=ui["heatmap.masked"], nonfinite=ui["heatmap.nonfinite"], rows_caption=rows,
        cols_caption=cols, decimal=ui["number.decimal"])
    uid = re.sub(r"[^A-Za-z0-9]+", "-", step.id) + f"-grad-L{snap.layer}-H{head}"
    return heatmap_html(s, strings, uid).replace('<figure class="gl-heatmap"',
                                                 f'<figure class="gl-heatmap {GRAD_CLASS}"')


def _top_entries(step, snap, head, run, texts, ui, where: str) -> str:
    """The last position's row of the gradient (the prediction the generation made): its
    ``TOP`` largest entries by size, with their column, in a small table."""
    value = np.asarray(snap.value if head is None else snap.value[head])
    row = value[-1] if value.ndim == 2 else value.reshape(-1)
    order = np.argsort(-np.abs(row), kind="stable")[:TOP]
    i = value.shape[0] - 1 if value.ndim == 2 else None
    tokens = run.training.tokens

    def column(j: int) -> str:
        if step.vocabulary:
            return f"{j} ({run.labels(j)})"
        if step.axes[-1] == "key":
            return f"{j} ({run.labels(tokens[j])})"
        return str(j)
    cells = "".join(f"<tr><td>{escape(column(int(j)))}</td>"
                    f"<td>{escape(number(ui, np.float32(row[j])))}</td></tr>" for j in order)
    caption = fmt(texts, "top.caption", where=where or step.id, count=str(len(order)),
                  i="" if i is None else str(i))
    return (f'<table class="gl-grad-top" data-step="{escape(step.id)}" data-layer="{snap.layer}" '
            f'data-head="{head}" data-row="{"" if i is None else i}" '
            f'data-cols="{" ".join(str(int(j)) for j in order)}"><caption>{escape(caption)}'
            f'</caption><thead><tr><th scope="col">{escape(texts["top.column"])}</th>'
            f'<th scope="col">∂ℒ/∂</th></tr></thead><tbody>{cells}</tbody></table>')


def _summary(snaps, head_axis: bool, texts, ui) -> str:
    """The largest |∂ℒ/∂value| of each layer (and head): a small table."""
    rows = []
    for snap in snaps:
        value = np.abs(np.asarray(snap.value, dtype=np.float64))
        per = value.reshape(value.shape[0], -1).max(axis=1) if head_axis else [value.max()]
        cells = "".join(f"<td>{escape(number(ui, np.float32(v)))}</td>" for v in per)
        layer = "—" if snap.layer is None else str(snap.layer)
        rows.append(f"<tr><th scope=\"row\">{layer}</th>{cells}</tr>")
    heads = snaps[0].value.shape[0] if head_axis else 1
    head_cells = "".join(f'<th scope="col">{h}</th>' for h in range(heads)) if head_axis else \
        f'<th scope="col">{escape(texts["summary.max"])}</th>'
    return (f'<table class="gl-grad-summary"><caption>{escape(texts["summary.caption"])}</caption>'
            f'<thead><tr><th scope="col">{escape(texts["summary.corner"])}</th>{head_cells}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>')


def _segment(part, ui, before) -> str:
    if not isinstance(part, float):
        return str(part)
    text = number(ui, np.float32(part))
    after_operator = isinstance(before, str) and before.rstrip()[-1:] in ("−", "+", "×", "/")
    return f"({text})" if part < 0 and after_operator else text  # "x − (-y)", not "x − -y"


def worked_html(worked: GradWorked, texts, ui) -> str:
    """The entry's arithmetic as plain text (numbers in the page's language), the sum's terms
    where it has many, and the hand result beside the value ``gradients`` computed."""
    bits = ([fmt(texts, "worked.layer", layer=worked.layer)] if worked.layer is not None else []) \
        + ([fmt(texts, "worked.head", head=worked.head)] if worked.head is not None else [])
    where = f" ({', '.join(bits)})" if bits else ""
    parts = [f'<div class="gl-grad-worked" data-step="{escape(worked.step_id)}" '
             f'data-hand="{worked.by_hand!r}" data-traced="{worked.traced!r}">',
             f"<p>{escape(fmt(texts, 'worked.intro', symbol=worked.symbol, where=where))}</p>"]
    for line in worked.lines:
        text = "".join(_segment(part, ui, line[k - 1] if k else None) for k, part in enumerate(line))
        parts.append(f'<p class="gl-grad-line"><code>{escape(text)}</code></p>')
    if worked.terms:
        rows = "".join(f"<tr><td>{escape(t.label)}</td>"
                       + "".join(f"<td>{escape(number(ui, np.float32(f)))}</td>" for f in t.factors)
                       + f"<td>{escape(number(ui, np.float32(t.value)))}</td></tr>"
                       for t in worked.terms)
        parts.append(f'<p class="gl-note">{escape(fmt(texts, "worked.terms", count=worked.count, shown=len(worked.terms)))}</p>'
                     f'<table class="gl-grad-terms"><tbody>{rows}</tbody></table>')
    parts.append(f'<p class="gl-note">{escape(fmt(texts, "worked.check", symbol=worked.symbol, hand=number(ui, np.float32(worked.by_hand)), traced=number(ui, np.float32(worked.traced)), compared=texts["compared." + worked.compared]))}</p>')
    parts.append("</div>")
    return "".join(parts)


def backward_section(step, run, study, texts, ui, lang: Language, source, stash,
                     me: str) -> list[str]:
    """The Markdown lines of the section (its HTML blocks through ``stash``)."""
    if run.training is None:
        return []
    rule = rule_of(run, step.id)
    lines = [f"## {md_escape(texts['title'])} {{: #{ANCHOR} }}", ""] + (
        [] if step.id in FEATURED_STEPS else [md_escape(texts["intro"]), ""]) + [
             display_math(rule.latex), "",
             f"{md_escape(ui['equation.plain'])}: {md_code(rule.plain)}", "",
             f"**{md_escape(texts['source'])}:** {grad_link(rule, me, lang, source, ui)}", ""]
    if step.id in GENERATION_ONLY:
        return lines + [md_escape(texts[f"generation_only.{step.id}"]), ""]
    t = run.training
    text = run.labels.text(t.tokens + t.targets[-1:])
    lines += [md_escape(fmt(texts, "values", text=text, n=len(t.tokens),
                            loss=number(ui, np.float32(t.loss)))), ""]
    snaps = grad_snapshots(run, step.id)
    layer, head = block_layer_head(run, study)
    if step.id == "loss.grad":
        lines += [md_escape(texts["loss_grad_zero"]), ""]
    elif snaps[0].value.ndim == 0:
        lines += [f"`∂ℒ/∂ℒ = {number(ui, snaps[0].value.item())}`", ""]
    else:
        shown = next((s for s in snaps if s.layer == layer), snaps[0])
        h = None
        if step.head_axis:
            n_heads = shown.value.shape[0]
            h = head if n_heads == run.config.n_heads else head * n_heads // run.config.n_heads
        where = " · ".join(x for x in (
            fmt(ui, "layer", layer=shown.layer) if shown.layer is not None else "",
            fmt(ui, "head", head=h) if h is not None else "") if x)
        if step.id != ROW_IN_WORKED:
            lines += [stash.put(_top_entries(step, shown, h, run, texts, ui, where)), ""]
        if step.id not in FEATURED_STEPS:  # those pages' probe heatmaps fill their budget
            lines += [stash.put(_grad_heatmap(step, shown, h, ui, run)), ""]
            if len(snaps) > 1 or step.head_axis:
                lines += [stash.put(_summary(snaps, step.head_axis, texts, ui)), ""]
    worked = grad_worked(step.id, run, layer, head)
    lines += [f"### {md_escape(texts['worked.title'])}", "", stash.put(worked_html(worked, texts, ui)), ""]
    return lines
