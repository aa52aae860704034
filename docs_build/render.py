"""Markdown of the generated pages: one per step, the catalog, and the source pages.

Plain functions of (catalog, example run, texts, UI strings): no MkDocs events here. Links
between Markdown pages are written as relative ``.md`` links so MkDocs checks them (a broken
one fails ``--strict``); links inside raw HTML are computed with ``Links``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from html import escape

import numpy as np
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

from . import model_map as MM
from . import values as V
from . import worked as W
from .catalog import Step, StepCatalog
from .example import WHERE_BLOCK, ExampleRun, Snapshot
from .heads import FEATURED_STEPS, FeaturedHead, HeadStudy
from .i18n import Language
from .source import code_block_html, source_page_uri
from .texts import StepText
from .values import shape_text


class Stash:
    """Large HTML (value tables, heatmaps, code listings) kept out of the Markdown.

    Markdown's raw-HTML parsing and the search indexer would spend seconds on tens of
    thousands of tags that are neither Markdown nor searchable text, so a page's Markdown
    holds a placeholder per block and ``fill`` puts the blocks into the finished HTML
    (the plugin does so in ``on_post_page``). ``anchors`` are ids the block carries,
    repeated in the placeholder so MkDocs can still validate links to them.
    """

    _SLOT = re.compile(r'<div class="gl-slot" data-gl-slot="(\d+)">.*?</div>', re.S)

    def __init__(self) -> None:
        self.blocks: list[str] = []

    def put(self, html: str, anchors=()) -> str:
        self.blocks.append(html)
        ids = "".join(f'<span id="{escape(a)}"></span>' for a in anchors)
        return f'<div class="gl-slot" data-gl-slot="{len(self.blocks) - 1}">{ids}</div>'

    def fill(self, html: str) -> str:
        return self._SLOT.sub(lambda m: self.blocks[int(m.group(1))], html)


def step_page_uri(step_id: str, lang: Language) -> str:
    return f"{lang.prefix}steps/{step_id}.md"


def catalog_page_uri(lang: Language) -> str:
    return f"{lang.prefix}steps/index.md"


class Links:
    """Site URLs of source files, as MkDocs computes them, and relative links between them."""

    def __init__(self, use_directory_urls: bool = True) -> None:
        self.use_directory_urls = use_directory_urls

    def url(self, src_uri: str) -> str:
        return File(src_uri, None, "", self.use_directory_urls).url

    def rel(self, from_uri: str, to_uri: str, anchor: str | None = None) -> str:
        url = get_relative_url(self.url(to_uri), self.url(from_uri))
        return url + (f"#{anchor}" if anchor else "")


def md_rel(from_uri: str, to_uri: str) -> str:
    """A Markdown link target from one source page to another (MkDocs rewrites it)."""
    return posixpath.relpath(to_uri, posixpath.dirname(from_uri) or ".")


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#+!|$.-])")


def md_escape(text: str) -> str:
    """Plain text safe inside Markdown: no emphasis, links, math or raw HTML from it."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_code(text: str) -> str:
    """A Markdown code span holding ``text`` verbatim, whatever backticks it contains."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fmt(ui: dict[str, str], key: str, **fields) -> str:
    return ui[key].format(**fields)


def display_math(latex: str) -> str:
    """Display math in arithmatex's generic output form, typeset by KaTeX in the browser."""
    return f'<div class="arithmatex gl-equation">\\[{escape(latex, quote=False)}\\]</div>'


def inline_math(latex: str) -> str:
    return f'<span class="arithmatex">\\({escape(latex, quote=False)}\\)</span>'


@dataclass(frozen=True)
class Source:
    """Where a step's source line is shown: the site's source page and maybe the repository."""

    repo_url_of: object = None  # (path, line) -> URL, or None without repo_url

    def repo_url(self, path: str, line: int) -> str | None:
        return self.repo_url_of(path, line) if self.repo_url_of else None


# -- step pages ---------------------------------------------------------------------------

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


def stats_html(snaps: list[Snapshot], ui) -> str:
    """Shape, dtype, min/max/mean and non-finite count of each layer's snapshot."""
    per_layer = len(snaps) > 1 or snaps[0].layer is not None
    head = [ui["stats.layer"]] if per_layer else []
    head += [ui[k] for k in ("stats.shape", "stats.dtype", "stats.min", "stats.max",
                             "stats.mean", "stats.nonfinite")]
    out = [V.table_box(ui["table.scroll_hint"])
           + '<table class="gl-stats" data-search-exclude><thead><tr>']
    out += [f'<th scope="col">{escape(h)}</th>' for h in head]
    out.append("</tr></thead><tbody>")
    for snap in snaps:
        st = V.stats(snap.value)
        cells = [str(snap.layer)] if per_layer else []
        nonfinite = str(st.nonfinite)
        parts = [f"{V.MINUS_INF} {st.neg_inf}" if st.neg_inf else "",
                 f"{V.PLUS_INF} {st.pos_inf}" if st.pos_inf else "",
                 f"{V.NOT_A_NUMBER} {st.nan}" if st.nan else ""]
        detail = ", ".join(p for p in parts if p)
        if detail:
            nonfinite += f" ({detail})"
        cells += [shape_text(st.shape), st.dtype, st.minimum, st.maximum, st.mean, nonfinite]
        layer_attr = f' data-layer="{snap.layer}"' if snap.layer is not None else ""
        out.append(f'<tr data-step="{escape(snap.step_id)}"{layer_attr}>'
                   + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _uid(step_id: str, layer, head) -> str:
    base = re.sub(r"[^A-Za-z0-9]+", "-", step_id)
    return f"{base}-L{'x' if layer is None else layer}-H{'x' if head is None else head}"


def slice_html(step: Step, snap: Snapshot, head: int | None, ui, run: ExampleRun,
               limits: tuple[int, int], beside: str = "") -> str:
    """Table and heatmap of one 2-D slice (one layer, one head); ``beside``, if given, is
    HTML placed next to the heatmap (the same head on the probe)."""
    value = snap.value if head is None else snap.value[head]
    s = V.make_slice(step.id, snap.layer, head, value, snap.row_tokens)
    vocab = s.cols.kind == "vocab"
    strings = V.TableStrings(
        corner=ui["table.corner.vocab"] if s.cols.kind == "byte-grid" else ui["table.corner"],
        more_cols=ui["table.more_cols"], more_rows=ui["table.more_rows"],
        scroll_hint=ui["table.scroll_hint"])
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
    parts.append(V.table_html(s, strings, max_rows, max_cols, focus_cols=focus))
    where = " · ".join(x for x in (
        fmt(ui, "layer", layer=snap.layer) if snap.layer is not None else "",
        fmt(ui, "head", head=head) if head is not None else "") if x)
    rows_caption = ui["heatmap.rows.byte"] if s.cols.kind == "byte-grid" else ui["heatmap.rows.token"]
    cols_caption = {"token": ui["heatmap.cols.token"], "vocab": ui["heatmap.cols.vocab"],
                    "byte-grid": ui["heatmap.cols.byte"]}.get(s.cols.kind, ui["heatmap.cols.feature"])
    if head is not None:  # the replay's legend says the same of its head slices
        cols_caption += " · " + ui["heatmap.scale_head"]
    hm_strings = V.HeatmapStrings(
        title=fmt(ui, "heatmap.title", step=step.id, where=where or step.id),
        masked=ui["heatmap.masked"], nonfinite=ui["heatmap.nonfinite"],
        rows_caption=rows_caption, cols_caption=cols_caption)
    heatmap = V.heatmap_html(s, hm_strings, _uid(step.id, snap.layer, head),
                             in_table=V.table_shows_all(s, max_rows, max_cols, focus))
    parts.append(f'<div class="gl-pair">{heatmap}{beside}</div>' if beside else heatmap)
    return "\n".join(parts)


def probe_html(step: Step, layer: int, head: int, study: HeadStudy, ui) -> str:
    """One head's snapshot on the probe (a random string written twice) with its two scores,
    as a heatmap: the pattern a previous-token or induction head draws there."""
    record = next(r for r in study.probe_trace.records if r.id == step.id and r.layer == layer)
    s = V.make_slice(step.id, layer, head, np.asarray(record.value)[head], study.probe_tokens)
    where = f"{fmt(ui, 'layer', layer=layer)} · {fmt(ui, 'head', head=head)}"
    strings = V.HeatmapStrings(
        title=fmt(ui, "probe.heatmap_title", step=step.id, where=where), masked=ui["heatmap.masked"],
        nonfinite=ui["heatmap.nonfinite"], rows_caption=ui["heatmap.rows.token"],
        cols_caption=(ui["heatmap.cols.token"] if s.cols.kind == "token" else ui["heatmap.cols.feature"])
        + " · " + ui["heatmap.scale_head"])
    caption = fmt(ui, "probe.caption", length=study.length, n=len(study.probe_tokens),
                  previous=V.format_value(study.report.previous_token[layer, head]),
                  induction=V.format_value(study.report.induction[layer, head]))
    return (f'<div class="gl-probe" data-run="probe" data-layer="{layer}" data-head="{head}">'
            f'<p class="gl-note">{escape(caption)}</p>'
            + V.heatmap_html(s, strings, _uid(step.id, layer, head) + "-probe", readout=False)
            + "</div>")


def featured_note(featured: FeaturedHead, ui) -> str:
    """Why the page opens on this head, from its score."""
    return fmt(ui, f"featured.{featured.kind}", layer=featured.layer, head=featured.head,
               score=V.format_value(np.float32(featured.score)))


def tabs_html(group: str, labels: list[str], blocks: list[str],
              featured: int | None = None) -> str:
    """Tabs in the HTML form pymdownx.tabbed (alternate style) writes, so Material styles them;
    the ``featured`` tab (else the first) is open first, and marked ``gl-featured``."""
    opened = 0 if featured is None else featured
    inputs = "".join(
        f'<input{" checked" if i == opened else ""} id="{group}-{i}" name="{group}" type="radio">'
        for i in range(len(labels)))
    tab_labels = "".join(f'<label for="{group}-{i}"'
                         + (' class="gl-featured"' if i == featured else "")
                         + f">{escape(label)}</label>" for i, label in enumerate(labels))
    contents = "".join(f'<div class="tabbed-block">\n{block}\n</div>' for block in blocks)
    return (f'<div class="tabbed-set tabbed-alternate" data-tabs="{len(labels)}">{inputs}'
            f'<div class="tabbed-labels">{tab_labels}</div>'
            f'<div class="tabbed-content">{contents}</div></div>')


def scalar_html(step: Step, snap: Snapshot, ui) -> str:
    value = snap.value
    text = V.format_value(value.item() if value.dtype.kind in "iu" else value)
    detail = ""
    if value.dtype.kind in "iu":
        detail = fmt(ui, "scalar.sample", token=int(value), label=V.token_label(int(value)))
    return (f'<p class="gl-scalar" data-step="{escape(step.id)}" data-search-exclude>'
            f'<span class="gl-scalar-value">{escape(text)}</span>'
            + (f' <span class="gl-scalar-detail">{escape(detail)}</span>' if detail else "")
            + "</p>")


def snapshot_intro(step: Step, snap: Snapshot, run: ExampleRun, ui) -> str:
    if snap.run == "generation":
        token = run.traced.token
        return fmt(ui, "snapshot.generation", prompt=V.token_text(run.traced_tokens),
                   n=len(run.traced_tokens), step=run.settings.traced_step + 1,
                   token=f"{token} ({V.token_label(token)})")
    return fmt(ui, "snapshot.loss", text=V.token_text(run.loss_tokens + run.loss_targets[-1:]),
               n=len(run.loss_tokens), loss=V.format_value(np.float32(run.loss)))


def render_step_page(step: Step, catalog: StepCatalog, run: ExampleRun, text: StepText,
                     labels: dict[str, str], ui: dict[str, str], lang: Language,
                     source: Source, stash: Stash, limits: tuple[int, int] = (12, 12),
                     study: HeadStudy | None = None, map_html: str = "") -> str:
    """The Markdown of one step page in one language (its big HTML blocks go to ``stash``).

    ``labels`` maps every step ID to its label in this language (for previous/next links).
    With ``study``, the attention pages (``FEATURED_STEPS``) open each layer on its featured
    head and show that head on the probe beside the prompt's run. ``map_html``, if given, is
    the small map of the model shown beside the step's facts.
    """
    me = step_page_uri(step.id, lang)
    snaps = run.snapshots[step.id]
    lines = [f"# {md_escape(text.label)}", "",
             f"{md_code(step.id)} · {md_escape(fmt(ui, 'step.position', position=step.position + 1, count=len(catalog.steps)))}",
             "{: .gl-step-id }", ""]
    if map_html:
        lines += [stash.put(map_html), ""]
    if not step.has_head_axis:
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
              f"- **{md_escape(ui['step.source'])}:** {src_link}",
              "",
              text.body.rstrip(), "",
              f"## {md_escape(ui['equation.title'])}", "",
              display_math(step.latex), "",
              f"{md_escape(ui['equation.plain'])}: {md_code(step.plain)}", "",
              f"## {md_escape(ui['snapshot.title'])}", "",
              md_escape(snapshot_intro(step, snaps[0], run, ui))
              + f" [{md_escape(ui['snapshot.example_link'])}]({md_rel(me, catalog_page_uri(lang))}#example)",
              "",
              stash.put(stats_html(snaps, ui)), ""]
    for snap in snaps:
        if snap.layer is not None:
            lines += [f"### {md_escape(fmt(ui, 'layer', layer=snap.layer))}", ""]
        if snap.value.ndim == 0:
            lines += [stash.put(scalar_html(step, snap, ui)), ""]
        elif step.has_head_axis and snap.value.ndim >= 2:
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
                                     beside=probe_html(step, snap.layer, h, study, ui)
                                     if h == featured.head else "")
                          for h in range(n_heads)]
                tab_labels[featured.head] = fmt(ui, f"head.{featured.kind}", head=featured.head)
                lines += [md_escape(featured_note(featured, ui)), "{: .gl-featured-note }", "",
                          stash.put(tabs_html(group, tab_labels, blocks, featured.head)), ""]
        else:
            lines += [stash.put(slice_html(step, snap, None, ui, run, limits)), ""]
    worked = W.worked_example(step.id, run, study)
    if worked is not None:  # one entry of the snapshot above, redone by hand
        lines += [f"## {md_escape(ui['worked.title'])}", "", stash.put(W.worked_html(worked, ui)), ""]
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


# -- the catalog --------------------------------------------------------------------------

def example_html(run: ExampleRun, ui) -> str:
    c, s = run.config, run.settings
    sampling = ui["catalog.sampling.greedy"] if s.greedy else fmt(
        ui, "catalog.sampling.random", seed=s.sampling_seed, temperature=V.format_value(s.temperature))
    items = [
        fmt(ui, "catalog.model", d_model=c.d_model, layers=c.n_layers, heads=c.n_heads,
            kv_heads=c.n_kv_heads, d_ff=c.d_ff, vocab=c.vocab_size, seed=c.seed),
        fmt(ui, "catalog.weights.random", seed=s.seed) if s.checkpoint is None
        else fmt(ui, "catalog.weights.checkpoint", model=s.model),
        fmt(ui, "catalog.generation", prompt=V.token_text(run.prompt_tokens),
            generated=V.token_text(run.generated_tokens), tokens=len(run.generation),
            sampling=sampling),
        fmt(ui, "catalog.loss", text=V.token_text(run.loss_tokens + run.loss_targets[-1:]),
            loss=V.format_value(np.float32(run.loss))),
    ]
    return ('<ul class="gl-example" id="example">'
            + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>")


def render_catalog_page(catalog: StepCatalog, run: ExampleRun, labels: dict[str, str],
                        ui: dict[str, str], lang: Language, links: Links) -> str:
    me = catalog_page_uri(lang)
    head = "".join(f'<th scope="col">{escape(ui[k])}</th>' for k in (
        "catalog.col.position", "catalog.col.id", "catalog.col.label", "catalog.col.equation",
        "catalog.col.shape", "catalog.col.runs"))
    rows = []
    for step in catalog.steps:
        href = links.rel(me, step_page_uri(step.id, lang))
        shape = shape_text(run.snapshots[step.id][0].value.shape)
        rows.append(
            f'<tr data-step="{escape(step.id)}"><td>{step.position + 1}</td>'
            f'<td><a href="{escape(href)}"><code>{escape(step.id)}</code></a></td>'
            f'<td><a href="{escape(href)}">{escape(labels[step.id])}</a></td>'
            f"<td>{inline_math(step.latex)}</td><td>{escape(shape)}</td>"
            f'<td>{escape(ui["runs." + run.where[step.id]])}</td></tr>')
    table = (V.table_box(ui["table.scroll_hint"])
             + f'<table class="gl-catalog"><thead><tr>{head}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table></div>')
    return "\n".join([f"# {md_escape(ui['catalog.title'])}", "", md_escape(ui["catalog.intro"]), "",
                      f"## {md_escape(ui['catalog.example'])}", "", example_html(run, ui), "",
                      table, ""])


# -- source pages -------------------------------------------------------------------------

def render_source_page(module_file: str, code: str, catalog: StepCatalog,
                       labels: dict[str, str], ui: dict[str, str], lang: Language,
                       links: Links, stash: Stash) -> str:
    me = source_page_uri(module_file, lang.prefix)
    marked = [step for step in catalog.steps if step.file == module_file]
    markers = {step.line: (step.id, links.rel(me, step_page_uri(step.id, lang)))
               for step in marked}
    lines = [f"# {md_escape(fmt(ui, 'source.title', file=module_file))}", "",
             md_escape(fmt(ui, "source.intro", file=module_file)), ""]
    if marked:
        lines += [md_escape(ui["source.steps"]), ""]
        lines += [f"- [{md_code(step.id)} — {md_escape(labels[step.id])}]"
                  f"({md_rel(me, step_page_uri(step.id, lang))}) · [L{step.line}](#L{step.line})"
                  for step in sorted(marked, key=lambda s: s.line)]
    else:
        lines.append(md_escape(ui["source.no_steps"]))
    block = code_block_html(code, markers)
    lines += ["", stash.put(block, anchors=[f"L{n}" for n in range(1, len(code.splitlines()) + 1)]), ""]
    return "\n".join(lines)


# -- the map of the model -----------------------------------------------------------------

def model_map_html(catalog: StepCatalog, run: ExampleRun, labels: dict[str, str],
                   ui: dict[str, str], lang: Language, links: Links, page_uri: str,
                   current: str | None = None, small: bool = False) -> str:
    """The map of the model (``model_map``) for the page ``page_uri``: shapes of the example
    run, boxes linked to this language's step pages; ``current`` marks one step's box."""
    n = len(run.traced_tokens)
    shapes = MM.step_shapes(run.config, n, len(run.loss_tokens))
    strings = MM.map_strings(ui, run.config, n)
    return MM.model_map_html(
        catalog.steps, shapes, labels,
        lambda step_id: links.rel(page_uri, step_page_uri(step_id, lang)),
        strings, current=current, small=small)


# A line of a hand-written page that the plugin replaces by the map ("small": the thumbnail).
MAP_MARKER = re.compile(r"^<!-- glassllm:model-map( small)? -->[ \t]*$", re.M)


def fill_map_markers(markdown: str, page_uri: str, catalog: StepCatalog, run: ExampleRun,
                     labels: dict[str, str], ui: dict[str, str], lang: Language, links: Links,
                     stash: Stash) -> str:
    """``markdown`` with each ``<!-- glassllm:model-map -->`` line replaced by the map (its
    HTML goes to ``stash``); a page without the marker comes back unchanged."""
    def put(match: re.Match) -> str:
        return stash.put(model_map_html(catalog, run, labels, ui, lang, links, page_uri,
                                        small=bool(match.group(1))))
    return MAP_MARKER.sub(put, markdown)
