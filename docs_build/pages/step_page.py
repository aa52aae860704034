"""The Markdown of one step page in one language: its label and text, where it runs, its
equation, its source line, the snapshot's statistics, tables and heatmaps (per head for head
steps, the featured head beside its probe run), a worked number, and the way to its
neighbours."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

import numpy as np

from ..data.catalog import StepCatalog
from ..data.heads import FEATURED_STEPS, PREVIOUS_TOKEN, FeaturedHead, HeadStudy
from ..data.run import WHERE_BLOCK, ExampleRun, Snapshot
from ..data.worked import block_layer_head, worked_example
from ..engine.schema import Step
from ..html.heatmap import HeatmapStrings, heatmap_html
from ..html.slices import make_slice
from ..html.tables import TableStrings, shown_cells, table_html
from ..html.math import display_math
from ..html.sampling import SamplingStrings, sampling_html
from ..html.source_code import excerpt_html, statement_at
from ..html.stats import stats_html
from ..html.tabs import tabs_html
from ..html.timelapse import timelapse_html
from ..html.worked import worked_html
from ..html.exercises import exercise_section
from ..html.fused import fused_product
from ..text.languages import Language
from ..text.markdown import fmt, md_code, md_escape, md_rel, number
from ..text.step_texts import StepText
from .backward_section import backward_section
from .during_generation import during_generation_text
from .journey import job_figure, job_of
from .stash import Stash
from .tokenization import tokenization_html
from .urls import catalog_page_uri, model_card_uri, source_page_uri, step_page_uri

TOKENIZATION_STEP = "embed"  # the step page that shows how the example's text was split into tokens
TIMELAPSE_STEP = "attn.softmax"  # the step page that shows how its heads formed in training
REPEAT_STEP = "attn.scores"  # shows a head on a prompt with a repeat as arcs (attn.softmax is at its page budget)


@dataclass(frozen=True)
class Source:
    """Where a step's source line is shown: the site's source page and maybe the repository."""

    repo_url_of: object = None  # (path, line) -> URL, or None without repo_url
    codes: dict | None = None  # module file ("glassllm/nn.py") -> its text, for the excerpt
    links: object = None  # urls.Links: the source page's URL inside the excerpt's HTML

    def repo_url(self, path: str, line: int) -> str | None:
        return self.repo_url_of(path, line) if self.repo_url_of else None


def where_text(step: Step, run: ExampleRun, ui) -> str:
    where = run.where[step.id]
    if where == WHERE_BLOCK:
        layers = [s.layer for s in run.snapshots[step.id]]
        span = f"{layers[0]}–{layers[-1]}" if len(layers) > 1 else str(layers[0])
        return fmt(ui, "where.block", layers=span)
    return ui[f"where.{where}"]


def _heads_of(step: Step, run: ExampleRun) -> int:
    return int(run.snapshots[step.id][0].value.shape[0])


def _is_kv(n_heads: int, run: ExampleRun) -> bool:
    """Whether a head axis of this size counts key/value heads (grouped-query attention)."""
    return n_heads == run.config.n_kv_heads != run.config.n_heads


def _uid(step_id: str, layer, head) -> str:
    base = re.sub(r"[^A-Za-z0-9]+", "-", step_id)
    return f"{base}-L{'x' if layer is None else layer}-H{'x' if head is None else head}"


def slice_html(step: Step, snap: Snapshot, head: int | None, ui, run: ExampleRun,
               limits: tuple[int, int], beside: str = "") -> str:
    """Table and heatmap of one 2-D slice (one layer, one head); ``beside``, if given, is
    HTML placed next to the heatmap (the same head on the probe)."""
    value = snap.value if head is None else snap.value[head]
    s = make_slice(step, snap.layer, head, value, snap.row_tokens, run.labels)
    vocab = s.cols.kind == "vocab"
    strings = TableStrings(
        corner=ui["table.corner.vocab"] if s.cols.kind == "byte-grid" else ui["table.corner"],
        more_cols=ui["table.more_cols"], more_rows=ui["table.more_rows"],
        scroll_hint=ui["table.scroll_hint"], decimal=ui["number.decimal"])
    max_rows, max_cols = limits
    focus = sorted(set(run.prompt_tokens) | set(run.loss_tokens) | set(run.loss_targets)
                   | set(run.generated_tokens))
    parts = []
    if vocab and s.matrix.shape[1] > max_cols:
        shown = min(max_cols, len(focus))
        parts.append(f'<p class="gl-note">{escape(fmt(ui, "table.vocab_cols", shown=shown, total=s.matrix.shape[1]))}</p>')
    if s.cols.kind == "byte-grid":
        total = int(np.asarray(value).shape[0])
        parts.append(f'<p class="gl-note">{escape(fmt(ui, "table.top_tokens", shown=min(max_rows, total), total=total))}</p>')
    parts.append(table_html(s, strings, max_rows, max_cols, focus_cols=focus))
    where = " · ".join(x for x in (
        fmt(ui, "layer", layer=snap.layer) if snap.layer is not None else "",
        fmt(ui, "head", head=head) if head is not None else "") if x)
    rows_caption = ui["heatmap.rows.byte"] if s.cols.kind == "byte-grid" else ui["heatmap.rows.token"]
    cols_caption = {"token": ui["heatmap.cols.token"], "vocab": ui["heatmap.cols.vocab"],
                    "byte-grid": ui["heatmap.cols.byte"]}.get(s.cols.kind, ui["heatmap.cols.feature"])
    if head is not None:  # the replay's legend says the same of its head slices
        cols_caption += " · " + ui["heatmap.scale_head"]
    hm_strings = HeatmapStrings(
        title=fmt(ui, "heatmap.title", step=step.id, where=where or step.id),
        masked=ui["heatmap.masked"], nonfinite=ui["heatmap.nonfinite"],
        rows_caption=rows_caption, cols_caption=cols_caption, decimal=ui["number.decimal"])
    heatmap = heatmap_html(s, hm_strings, _uid(step.id, snap.layer, head),
                             table_cells=shown_cells(s, max_rows, max_cols, focus))
    parts.append(f'<div class="gl-pair">{heatmap}{beside}</div>' if beside else heatmap)
    return "\n".join(parts)


def probe_html(step: Step, layer: int, head: int, study: HeadStudy, labels, ui) -> str:
    """One head's snapshot on the probe (a random string written twice) with its two scores,
    as a heatmap: the pattern a previous-token or induction head draws there."""
    record = next(r for r in study.probe_trace.records if r.id == step.id and r.layer == layer)
    s = make_slice(step, layer, head, np.asarray(record.value)[head], study.probe_tokens,
                   labels)
    where = f"{fmt(ui, 'layer', layer=layer)} · {fmt(ui, 'head', head=head)}"
    strings = HeatmapStrings(
        title=fmt(ui, "probe.heatmap_title", step=step.id, where=where), masked=ui["heatmap.masked"],
        nonfinite=ui["heatmap.nonfinite"], rows_caption=ui["heatmap.rows.token"],
        cols_caption=(ui["heatmap.cols.token"] if s.cols.kind == "token" else ui["heatmap.cols.feature"])
        + " · " + ui["heatmap.scale_head"], decimal=ui["number.decimal"])
    caption = fmt(ui, "probe.caption", length=study.length, n=len(study.probe_tokens),
                  previous=number(ui, study.report.previous_token[layer, head]),
                  induction=number(ui, study.report.induction[layer, head]))
    return (f'<div class="gl-probe" data-run="probe" data-layer="{layer}" data-head="{head}">'
            f'<p class="gl-note">{escape(caption)}</p>'
            + heatmap_html(s, strings, _uid(step.id, layer, head) + "-probe", readout=False)
            + "</div>")


def featured_note(featured: FeaturedHead, ui) -> str:
    """Why the page opens on this head, from its score."""
    return fmt(ui, f"featured.{featured.kind}", layer=featured.layer, head=featured.head,
               score=number(ui, np.float32(featured.score)))


def example_job(featured: FeaturedHead, run: ExampleRun) -> tuple[list, np.ndarray, int | None]:
    """The featured head on the example's text: the keys, its attention row from the last
    position, and its target there (None where the text gives it none)."""
    snap = next(s for s in run.snapshots["attn.softmax"] if s.layer == featured.layer)
    row = np.asarray(snap.value)[featured.head][-1]
    last = len(row) - 1
    keys = list(snap.row_tokens)[:len(row)]
    if featured.kind == PREVIOUS_TOKEN:
        target = last - 1 if last > 0 else None
    else:
        earlier = [i for i in range(last) if keys[i] == keys[last]]
        target = earlier[-1] + 1 if earlier else None
    return keys, row, target


def on_a_repeat(featured: FeaturedHead, run: ExampleRun, study: HeadStudy, ui,
                stash: Stash) -> list[str]:
    """Where the example's text does not show the featured head doing its job, the same head
    on the circuit's prompt, which holds a repeat (``glassllm.circuits``), as arcs: Markdown
    lines, none where the head does its job on the example or has no job on that prompt."""
    _, row, target = example_job(featured, run)
    job = None if study.circuit is None else job_of(study.circuit, featured.layer, featured.head)
    if job is None or (target is not None and int(np.argmax(row)) == target):
        return []
    intro = fmt(ui, "featured.repeat", head=featured.head, prompt=study.circuit["prompt"])
    return [md_escape(intro), "", stash.put(job_figure(study.circuit, job, run.labels, ui)), ""]


def job_note(featured: FeaturedHead, run: ExampleRun, ui) -> str:
    """Where the featured head looks from the last position of the example's own text, and
    whether that is its target (the byte before, for a previous-token head; the byte after
    the current byte's last earlier occurrence, for an induction head), from the numbers."""
    keys, row, target = example_job(featured, run)
    last = len(row) - 1
    label = run.labels
    fields = dict(head=featured.head, token=label(keys[last]))
    if target is None:
        return fmt(ui, "featured.job.none", **fields)
    looks = int(np.argmax(row))
    fields.update(weight=number(ui, row[target]), target=target, target_token=label(keys[target]))
    if looks == target:
        return fmt(ui, "featured.job.hits", **fields)
    return fmt(ui, "featured.job.misses", **fields, looks_at=looks, looks_token=label(keys[looks]),
               looks_weight=number(ui, row[looks]))


def scalar_html(step: Step, snap: Snapshot, labels, ui) -> str:
    value = snap.value
    text = number(ui, value.item() if value.dtype.kind in "iu" else value)
    detail = ""
    if value.dtype.kind in "iu":
        detail = fmt(ui, "scalar.sample", token=int(value), label=labels(int(value)))
    return (f'<p class="gl-scalar" data-step="{escape(step.id)}" data-search-exclude>'
            f'<span class="gl-scalar-value">{escape(text)}</span>'
            + (f' <span class="gl-scalar-detail">{escape(detail)}</span>' if detail else "")
            + "</p>")


def snapshot_intro(snap: Snapshot, run: ExampleRun, ui) -> str:
    if snap.run == "generation":
        token = run.traced.token
        return fmt(ui, "snapshot.generation", prompt=run.labels.text(run.traced_tokens),
                   n=len(run.traced_tokens), step=run.settings.traced_step,
                   token=f"{token} ({run.labels(token)})")
    return fmt(ui, "snapshot.loss", text=run.labels.text(run.loss_tokens + run.loss_targets[-1:]),
               n=len(run.loss_tokens), loss=number(ui, np.float32(run.loss)))


SAMPLING_STEPS = ("probs", "sample")  # the pages with the temperature / top-k control


def sampling_control(run: ExampleRun, ui) -> str:
    """The temperature / top-k control on the traced step's logits (its last row: the next
    token's), opened on the run's own T and k, with the run's probabilities."""
    s = run.settings
    logits = np.asarray(run.traced.trace.get("logits", None).value)[-1]
    probs = np.asarray(run.traced.trace.get("probs", None).value)
    return sampling_html(logits, probs, 1.0 if s.greedy else s.temperature, s.top_k, run.labels,
                         SamplingStrings(ui["sampling.title"], ui["sampling.intro"],
                                         ui["sampling.temperature"], ui["sampling.top_k"],
                                         ui["table.corner"], ui["number.decimal"]))


def run_panel_html(step_id: str, run: ExampleRun, ui, study: HeadStudy | None = None) -> str:
    """Where the reader runs the model on their own text and this page's snapshot and worked
    numbers switch to it (assets/runtime/panel.js, data-mode "step"); the traced step's text
    to start from, and the layer and query head the worked numbers are worked in."""
    traced = run.labels.decode(run.traced_tokens)
    layer, head = block_layer_head(run, study)
    return (f'<div class="glassllm-run" data-mode="step" data-step="{escape(step_id)}" '
            f'data-text="{escape(traced, quote=True)}" data-worked-layer="{layer}" '
            f'data-worked-head="{head}"><p>{escape(ui["runtime.needs_js"])}</p></div>')


def render_step_page(step: Step, catalog: StepCatalog, run: ExampleRun, text: StepText,
                     labels: dict[str, str], ui: dict[str, str], lang: Language,
                     source: Source, stash: Stash, limits: tuple[int, int] = (12, 12),
                     study: HeadStudy | None = None, map_html: str = "",
                     strip_urls: dict[str, str] | None = None,
                     exercise_texts: dict | None = None,
                     backward_texts: dict | None = None) -> str:
    """The Markdown of one step page in one language (its big HTML blocks go to ``stash``).

    ``labels`` maps every step ID to its label in this language (for previous/next links).
    With ``study``, the attention pages (``FEATURED_STEPS``) open each layer on its featured
    head and show that head on the probe beside the prompt's run. ``map_html``, if given, is
    the small map of the model shown beside the step's facts. ``strip_urls`` (kind -> URL
    from this page): the film strips of the training record's time-lapse, which
    ``TIMELAPSE_STEP`` shows when the checkpoint has a record. ``exercise_texts`` (the
    language's exercises.yml): the exercises after the worked number. ``backward_texts`` (the
    language's backward.yml): the Backward section before them.
    """
    me = step_page_uri(step.id, lang)
    snaps = run.snapshots[step.id]
    lines = [f"# {md_escape(text.label)}", "",
             f"{md_code(step.id)} · {md_escape(fmt(ui, 'step.position', position=step.position + 1, count=len(catalog.steps)))}",
             "{: .gl-step-id }", ""]
    if map_html:
        lines += [stash.put(map_html), ""]
    if not step.head_axis:
        heads = ui["head_axis.no"]
    elif _is_kv(_heads_of(step, run), run):
        heads = fmt(ui, "head_axis.kv", heads=_heads_of(step, run),
                    group=run.config.n_heads // run.config.n_kv_heads)
    else:
        heads = fmt(ui, "head_axis.yes", heads=_heads_of(step, run))
    src_link = (f"[{md_escape(fmt(ui, 'source.line', file=step.file, line=step.line))}]"
                f"({md_rel(me, source_page_uri(step.file, lang.prefix))}#L{step.line})")
    repo = source.repo_url(step.file, step.line)
    if repo:
        src_link += f" · [{md_escape(ui['source.repo'])}](<{repo}>)"
    lines += [f"- **{md_escape(ui['step.runs'])}:** {md_escape(where_text(step, run, ui))}",
              f"- **{md_escape(ui['step.head_axis'])}:** {md_escape(heads)}",
              f"- **{md_escape(ui['step.generation'])}:** "
              f"{md_escape(during_generation_text(step, run, ui))}",
              "",
              # what is computed, and where, before the notes on why (the reading order)
              f"## {md_escape(ui['equation.title'])}", "",
              display_math(step.latex), "",
              f"{md_escape(ui['equation.plain'])}: {md_code(step.plain)}", "",
              f"**{md_escape(ui['step.source'])}:** {src_link}", ""]
    if source.codes and source.links and step.file in source.codes:
        code = source.codes[step.file]
        first, last = statement_at(code, step.line)
        page = source.links.rel(me, source_page_uri(step.file, lang.prefix))
        fused = fused_product(code, first, last)
        if fused is not None:  # the excerpt starts at the product the marked line slices
            first = fused[1]
        lines += [stash.put(excerpt_html(code, first, last, page)), ""]
        if fused is not None:
            product = (f"[{md_escape(fmt(ui, 'source.product', file=step.file, line=fused[1]))}]"
                       f"({md_rel(me, source_page_uri(step.file, lang.prefix))}#L{fused[1]})")
            lines += [md_escape(fmt(ui, "source.fused", name=fused[0], line=fused[1],
                                    marker=step.line)) + " " + product, ""]
    lines += [text.body.rstrip(), ""]
    if step.id == TOKENIZATION_STEP:  # how the example's text became the tokens it looks up
        lines += [f"## {md_escape(ui['tokenize.title'])}", "",
                  stash.put(tokenization_html(run, ui)), ""]
    lines += [md_escape(ui["runtime.step_intro"]), "{: .glr-step-intro }", "",
              run_panel_html(step.id, run, ui, study), "",
              f"## {md_escape(ui['snapshot.title'])} {{: .gl-snapshot-title }}", "",
              md_escape(snapshot_intro(snaps[0], run, ui))
              + f" [{md_escape(ui['snapshot.example_link'])}]({md_rel(me, catalog_page_uri(lang))}#example)",
              "",
              stash.put(stats_html(snaps, ui)), ""]
    for snap in snaps:
        if snap.layer is not None:
            lines += [f"### {md_escape(fmt(ui, 'layer', layer=snap.layer))}", ""]
        if snap.value.ndim == 0:
            lines += [stash.put(scalar_html(step, snap, run.labels, ui)), ""]
        elif step.head_axis and snap.value.ndim >= 2:
            n_heads = snap.value.shape[0]
            group = "gl-tabs-" + _uid(step.id, snap.layer, None)
            queries = run.config.n_heads // run.config.n_kv_heads
            tab_labels = [fmt(ui, "head.kv", head=h, queries=f"{h * queries}–{(h + 1) * queries - 1}")
                          if _is_kv(n_heads, run) else fmt(ui, "head", head=h)
                          for h in range(n_heads)]
            featured = (study.featured.get(snap.layer)
                        if study is not None and step.id in FEATURED_STEPS else None)
            if featured is None:
                blocks = [slice_html(step, snap, h, ui, run, limits) for h in range(n_heads)]
                lines += [stash.put(tabs_html(group, tab_labels, blocks)), ""]
            else:
                blocks = [slice_html(step, snap, h, ui, run, limits,
                                     beside=probe_html(step, snap.layer, h, study, run.labels, ui)
                                     if h == featured.head else "")
                          for h in range(n_heads)]
                tab_labels[featured.head] = fmt(ui, f"head.{featured.kind}", head=featured.head)
                lines += [md_escape(featured_note(featured, ui) + " " + job_note(featured, run, ui)),
                          "{: .gl-featured-note }", "",
                          stash.put(tabs_html(group, tab_labels, blocks, featured.head)), ""]
                if step.id == REPEAT_STEP:
                    lines += on_a_repeat(featured, run, study, ui, stash)
        else:
            lines += [stash.put(slice_html(step, snap, None, ui, run, limits)), ""]
    if step.id in SAMPLING_STEPS:
        lines += [f"### {md_escape(ui['sampling.title'])}", "", stash.put(sampling_control(run, ui)), ""]
    if step.id == TIMELAPSE_STEP and study is not None and study.record is not None \
            and strip_urls is not None:
        record = study.record
        intro = fmt(ui, "timelapse.intro", count=len(record.snapshots), last=record.steps[-1],
                    every=record.every, n=len(record.probe_tokens),
                    threshold=number(ui, record.threshold))
        lines += [f"## {md_escape(ui['timelapse.title'])}", "", md_escape(intro), "",
                  stash.put(timelapse_html(record, strip_urls, ui, "gl-timelapse-step",
                                           table=False, told=False)), "",
                  f"[{md_escape(ui['timelapse.card_link'])}]({md_rel(me, model_card_uri(lang))})",
                  ""]
    worked = worked_example(step.id, run, study)
    if worked is not None:  # one entry of the snapshot above, redone by hand
        lines += [f"## {md_escape(ui['worked.title'])}", "", stash.put(worked_html(worked, ui)), ""]
    if backward_texts is not None:  # the gradient's rule, its values, one entry by hand
        lines += backward_section(step, run, study, backward_texts, ui, lang, source, stash, me)
    if exercise_texts is not None:  # questions on this page's numbers, answers folded
        lines += exercise_section(step.id, run, study, exercise_texts, ui, stash.put)
    previous, following = catalog.neighbours(step.id)
    nav = []
    if previous:
        nav.append(f"[{md_escape(fmt(ui, 'nav.previous', label=labels[previous.id]))}]"
                   f"({md_rel(me, step_page_uri(previous.id, lang))}){{ .gl-prev }}")
    nav.append(f"[{md_escape(ui['nav.catalog'])}]({md_rel(me, catalog_page_uri(lang))})")
    if following:
        nav.append(f"[{md_escape(fmt(ui, 'nav.next', label=labels[following.id]))}]"
                   f"({md_rel(me, step_page_uri(following.id, lang))}){{ .gl-next }}")
    lines += [" · ".join(nav), "{: .gl-step-nav }", ""]
    return "\n".join(lines)
