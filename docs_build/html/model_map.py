"""The map of the model: one SVG with a box per step, linked to its page, in data-flow order.

It is given the steps (``engine.schema.Step``, which carry ``glassllm.steps.STEP_FACTS``:
where each runs, whether it has a head axis), the shapes of the example run
(``data.shapes.step_shapes``), the labels of one language and a link per step.

The block is drawn once, framed and marked "× L"; the residual stream is the thick line on
the left that the two residual adds sit on. Every box is an ``<a href>`` with an
``<title>`` (its accessible name and tooltip: an ``aria-label`` beside it would say the same
again on every step page) and ``data-step="<id>"``; the box of the current step carries
``aria-current="step"`` (set by the page, or by the replay as it plays). Colours are CSS
classes (``glassllm.css``) over Material's variables, so the map follows light and dark mode.

On request (``kv_cache``) the map also draws the K/V cache that generation keeps beside the
block's keys and values: a box (``<g class="gl-map-cache">``, not a step, so no link) that
``attn.k_rope`` and ``attn.v`` store into, with two empty bars — the positions read from the
cache and the ones a step adds — that the replay fills as it plays (``ui/map.js``).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from html import escape
from typing import Callable, Mapping, Sequence

from ..errors import DocsBuildError
from ..text.numbers import shape_text

# Where each step sits: (row, column). Column 0 is the residual stream; 1–3 the branches
# beside it (a fractional column sits between two). New steps need a place here.
PLACES: dict[str, tuple[int, float]] = {
    "embed": (0, 0),
    "attn.norm": (1, 2),
    "attn.q": (2, 1), "attn.k": (2, 2), "attn.v": (2, 3),
    "attn.q_rope": (3, 1), "attn.k_rope": (3, 2),
    "attn.scores": (4, 1.5),
    "attn.mask": (5, 1.5),
    "attn.softmax": (6, 1.5),
    "attn.context": (7, 2.5),
    "attn.out": (8, 2), "attn.residual": (8, 0),
    "mlp.norm": (9, 2),
    "mlp.gate": (10, 1), "mlp.up": (10, 3),
    "mlp.act": (11, 2),
    "mlp.down": (12, 2), "mlp.residual": (12, 0),
    "final_norm": (13, 0),
    "logits": (14, 0), "probs": (14, 1), "sample": (14, 2),
    "loss": (15, 1), "loss.grad": (15, 2),
}
COLUMNS = 4

# Data flow between boxes. "stream" edges run along the residual stream; a "branch" leaves
# the stream at its target's row (the norms read the stream without consuming it).
FLOW, STREAM, BRANCH = "flow", "stream", "branch"
EDGES: tuple[tuple[str, str, str], ...] = (
    ("embed", "attn.residual", STREAM),
    ("embed", "attn.norm", BRANCH),
    ("attn.norm", "attn.q", FLOW), ("attn.norm", "attn.k", FLOW), ("attn.norm", "attn.v", FLOW),
    ("attn.q", "attn.q_rope", FLOW), ("attn.k", "attn.k_rope", FLOW),
    ("attn.q_rope", "attn.scores", FLOW), ("attn.k_rope", "attn.scores", FLOW),
    ("attn.scores", "attn.mask", FLOW), ("attn.mask", "attn.softmax", FLOW),
    ("attn.softmax", "attn.context", FLOW), ("attn.v", "attn.context", FLOW),
    ("attn.context", "attn.out", FLOW), ("attn.out", "attn.residual", FLOW),
    ("attn.residual", "mlp.residual", STREAM),
    ("attn.residual", "mlp.norm", BRANCH),
    ("mlp.norm", "mlp.gate", FLOW), ("mlp.norm", "mlp.up", FLOW),
    ("mlp.gate", "mlp.act", FLOW), ("mlp.up", "mlp.act", FLOW),
    ("mlp.act", "mlp.down", FLOW), ("mlp.down", "mlp.residual", FLOW),
    ("mlp.residual", "final_norm", STREAM),
    ("final_norm", "logits", FLOW),
    ("logits", "probs", FLOW), ("probs", "sample", FLOW),
    ("logits", "loss", FLOW), ("loss", "loss.grad", FLOW),
)
# The side notes beside the last two rows: which run those steps belong to.
RUN_NOTES = (("sample", "generation"), ("loss.grad", "training"))
# The K/V cache box (kv_cache=True): its place, and the steps whose rows it stores
CACHE_PLACE = (3, 3)
CACHE_SOURCES = ("attn.k_rope", "attn.v")


@dataclass(frozen=True)
class MapStrings:
    """The map's words in one language, already filled in (``map_strings`` makes them)."""

    title: str  # the SVG's accessible name
    description: str  # what the map shows, with the example's sizes
    stream: str  # the residual stream's label
    block: str  # the block frame's label, with "× L"
    repeat: str  # the short "× L" of the small map
    generation: str
    training: str
    shape: str  # the word before a box's shape in its accessible label
    cache: str = ""  # the K/V cache box's label
    cache_description: str = ""  # what it holds, its accessible name before the replay fills it


def map_strings(ui: Mapping[str, str], config, n: int) -> MapStrings:
    """``MapStrings`` from a language's UI strings (``map.*`` keys) and the example's sizes."""
    sizes = dict(n=n, d=config.d_model, layers=config.n_layers, heads=config.n_heads,
                 kv_heads=config.n_kv_heads, head_dim=config.head_dim, d_ff=config.d_ff,
                 vocab=config.vocab_size)
    return MapStrings(
        title=ui["map.title"], description=ui["map.description"].format(**sizes),
        stream=ui["map.stream"], block=ui["map.block"].format(**sizes),
        repeat=ui["map.repeat"].format(**sizes), generation=ui["runs.generation"],
        training=ui["runs.training"], shape=ui["stats.shape"], cache=ui["map.cache"],
        cache_description=ui["map.cache_description"].format(**sizes))


@dataclass(frozen=True)
class Geometry:
    """Sizes in SVG user units. The small map draws the same layout without box text."""

    col_pitch: float
    box_w: float
    box_h: float
    row_pitch: float
    margin: float
    header: float  # room above the block for its label
    footer: float  # room below the block
    stack: float  # offset of the cards behind a head step's box
    stream_w: float
    arrow: float
    text: bool


FULL = Geometry(col_pitch=168, box_w=156, box_h=48, row_pitch=60, margin=8, header=26,
                footer=14, stack=3, stream_w=5, arrow=7, text=True)
SMALL = Geometry(col_pitch=44, box_w=38, box_h=14, row_pitch=20, margin=3, header=12,
                 footer=5, stack=1.5, stream_w=2.5, arrow=3.5, text=False)
LABEL_FONT, SHAPE_FONT, LINE_GAP = 11, 10, 12  # px in user units (glassllm.css agrees)
# Characters per line that fit a full-size box (146 units inside): 22 at 11 px even in a
# wide sans-serif (DejaVu Sans, ~0.6 em a letter), 24 in a 10 px monospace font.
LABEL_CHARS, SHAPE_CHARS = 22, 24
UID = "gl-map"  # the prefix of the map's SVG ids: one map per page


def check_layout(steps: Sequence) -> None:
    """Refuse steps the map cannot place and places or edges of steps that do not exist."""
    ids = [step.id for step in steps]
    unplaced = [sid for sid in ids if sid not in PLACES]
    if unplaced:
        raise DocsBuildError(f"step(s) {', '.join(unplaced)} have no place in the model map; "
                             f"add them to PLACES and EDGES in docs_build/html/model_map.py")
    stale = sorted(set(PLACES) - set(ids))
    if stale:
        raise DocsBuildError(f"the model map places step(s) {', '.join(stale)} that are not in "
                             f"glassllm.STEPS; remove them from docs_build/html/model_map.py")
    rows = [PLACES[step.id][0] for step in steps if step.is_layer_step]
    inside = [step.id for step in steps if not step.is_layer_step
              and rows and min(rows) <= PLACES[step.id][0] <= max(rows)]
    if inside:
        raise DocsBuildError(f"the model map draws step(s) {', '.join(inside)} inside the block "
                             f"though they run once per pass; move them in docs_build/html/model_map.py")


class _Layout:
    def __init__(self, steps: Sequence, geo: Geometry):
        self.geo = geo
        self.heads = {s.id for s in steps if s.head_axis}
        layer_rows = [PLACES[s.id][0] for s in steps if s.is_layer_step]
        self.block_rows = (min(layer_rows), max(layer_rows)) if layer_rows else None
        last_row = max(PLACES[s.id][0] for s in steps)
        self.width = COLUMNS * geo.col_pitch + 2 * geo.margin
        self.height = self.row_top(last_row) + geo.box_h + geo.margin + geo.stack

    def row_top(self, row: int) -> float:
        g = self.geo
        y = g.margin + g.stack + row * g.row_pitch
        if self.block_rows and row >= self.block_rows[0]:
            y += g.header
        if self.block_rows and row > self.block_rows[1]:
            y += g.footer
        return y

    def stacked(self, step_id: str) -> bool:
        return step_id in self.heads

    def centre_x(self, col: float) -> float:
        return self.geo.margin + (col + 0.5) * self.geo.col_pitch

    def box(self, step_id: str) -> tuple[float, float, float, float]:
        """(left, top, right, bottom) of a step's box."""
        row, col = PLACES[step_id]
        x, y = self.centre_x(col), self.row_top(row)
        return x - self.geo.box_w / 2, y, x + self.geo.box_w / 2, y + self.geo.box_h


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _points(points) -> str:
    return " ".join(f"{_num(x)},{_num(y)}" for x, y in points)


def _edge_points(layout: _Layout, source: str, target: str, kind: str):
    sl, st, sr, sb = layout.box(source)
    tl, tt, tr, tb = layout.box(target)
    if layout.stacked(target):
        tt -= 2 * layout.geo.stack  # the top card, drawn over the box's own top
    sx, tx = (sl + sr) / 2, (tl + tr) / 2
    if kind == BRANCH:  # from the stream, level with the target, into its left side
        y = (tt + tb) / 2
        return [(sx, y), (tl, y)]
    if kind == STREAM or sx == tx:
        return [(sx, sb), (tx, tt)]
    if PLACES[source][0] == PLACES[target][0]:  # side by side: from the facing side
        y = (st + sb) / 2
        return [(sl, y), (tr, y)] if tx < sx else [(sr, y), (tl, y)]
    bend = tt - (layout.geo.row_pitch - layout.geo.box_h) / 2
    return [(sx, sb), (sx, bend), (tx, bend), (tx, tt)]


def _label_lines(label: str) -> list[str]:
    lines = textwrap.wrap(label, LABEL_CHARS, break_long_words=False) or [label]
    return lines if len(lines) <= 2 else [lines[0], " ".join(lines[1:])]


def _text(x: float, y: float, content: str, cls: str, size: float, chars: int) -> str:
    """A centred line; a line longer than ``chars`` gets a smaller font, so it still fits
    (a font never widens the text, unlike ``textLength``)."""
    style = ""
    if len(content) > chars:
        style = f' style="font-size:{_num(size * chars / len(content))}px"'
    return (f'<text class="{cls}" x="{_num(x)}" y="{_num(y)}" text-anchor="middle"{style}>'
            f"{escape(content)}</text>")


def _box(step, layout: _Layout, label: str, shape: tuple, href: str, strings: MapStrings,
         current: bool) -> str:
    g = layout.geo
    left, top, right, bottom = layout.box(step.id)
    name = f"{label} ({step.id}), {strings.shape} {shape_text(shape)}"
    attrs = (f'href="{escape(href)}" class="gl-map-step" data-step="{escape(step.id)}"'
             + (' aria-current="step"' if current else ""))
    parts = [f"<a {attrs}><title>{escape(name)}</title>"]
    if layout.stacked(step.id):  # cards behind the box: one slice per head
        for k in (2, 1):
            parts.append(f'<rect class="gl-map-card" x="{_num(left + k * g.stack)}" '
                         f'y="{_num(top - k * g.stack)}" width="{_num(g.box_w)}" '
                         f'height="{_num(g.box_h)}" rx="3"/>')
    parts.append(f'<rect class="gl-map-box" x="{_num(left)}" y="{_num(top)}" '
                 f'width="{_num(g.box_w)}" height="{_num(g.box_h)}" rx="4"/>')
    if g.text:
        x = (left + right) / 2
        lines = _label_lines(label)
        first = top + (18 if len(lines) == 1 else 14)
        for k, line in enumerate(lines):
            parts.append(_text(x, first + k * LINE_GAP, line, "gl-map-label", LABEL_FONT, LABEL_CHARS))
        parts.append(_text(x, bottom - 7, shape_text(shape), "gl-map-shape", SHAPE_FONT, SHAPE_CHARS))
    parts.append("</a>")
    return "".join(parts)


def _cache_box(layout: _Layout, strings: MapStrings) -> str:
    """The K/V cache: a box with two bars of width 0 (read from the cache, added by the step)
    that the replay sizes; its label is the box's accessible name until then."""
    g = layout.geo
    row, col = CACHE_PLACE
    x, top = layout.centre_x(col), layout.row_top(row)
    left = x - g.box_w / 2
    inner = g.box_h * (0.3 if g.text else 0.5)  # the bars' height
    bar_top = top + g.box_h - inner - (6 if g.text else 2)
    name = escape(strings.cache_description)
    parts = [f'<g class="gl-map-cache" data-cache="" role="img" aria-label="{name}">'
             f"<title>{name}</title>",
             f'<rect class="gl-map-cache-box" x="{_num(left)}" y="{_num(top)}" '
             f'width="{_num(g.box_w)}" height="{_num(g.box_h)}" rx="4"/>']
    pad = 6 if g.text else 2
    for part in ("read", "added"):
        parts.append(f'<rect class="gl-map-cache-{part}" data-cache-part="{part}" '
                     f'x="{_num(left + pad)}" y="{_num(bar_top)}" width="0" '
                     f'height="{_num(inner)}" data-x="{_num(left + pad)}" '
                     f'data-width="{_num(g.box_w - 2 * pad)}"/>')
    if g.text:
        parts.append(_text(x, top + 16, strings.cache, "gl-map-label", LABEL_FONT, LABEL_CHARS))
    parts.append("</g>")
    return "".join(parts)


def _cache_edges(layout: _Layout) -> list[str]:
    """Dashed arrows from the steps whose rows the cache stores into its box."""
    g = layout.geo
    row, col = CACHE_PLACE
    x, top = layout.centre_x(col), layout.row_top(row)
    out = []
    for source in CACHE_SOURCES:
        sl, st, sr, sb = layout.box(source)
        if PLACES[source][0] == row:  # side by side: from its right side into the box's left
            points = [(sr, (st + sb) / 2), (x - g.box_w / 2, (st + sb) / 2)]
        else:  # above it: straight down
            points = [((sl + sr) / 2, sb), (x, top)]
        out.append(f'<polyline class="gl-map-edge gl-map-cache-edge" points="{_points(points)}" '
                   f'marker-end="url(#{UID}-arrow)"/>')
    return out


def model_map_svg(steps: Sequence, shapes: Mapping[str, tuple], labels: Mapping[str, str],
                  href_of: Callable[[str], str], strings: MapStrings,
                  current: str | None = None, small: bool = False,
                  kv_cache: bool = False) -> str:
    """The map as an inline ``<svg>``: one linked box per step of ``steps`` (execution
    order, which is also the keyboard's tab order).

    ``shapes`` and ``labels`` map every step ID to its snapshot shape and its label;
    ``href_of(id)`` gives the link to its page from the page the map stands on. ``current``
    names the step whose box is marked ``aria-current="step"``; ``small`` draws the
    thumbnail of the step pages (boxes without text; their names stay in the labels);
    ``kv_cache`` adds the K/V cache box beside the keys and values (the replay's map).
    Raises ``DocsBuildError`` for a step the map has no place for, ``KeyError`` for an
    unknown ``current`` or a step without a shape or label.
    """
    check_layout(steps)
    ids = [step.id for step in steps]
    if current is not None and current not in ids:
        raise KeyError(f"unknown step ID {current!r} for the model map; use one of {', '.join(ids)}")
    missing = [sid for sid in ids if sid not in shapes or sid not in labels]
    if missing:
        raise KeyError(f"the model map lacks the shape or label of step(s) {', '.join(missing)}")
    geo = SMALL if small else FULL
    layout = _Layout(steps, geo)
    by_id = {step.id: step for step in steps}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-map-svg" '
           f'viewBox="0 0 {_num(layout.width)} {_num(layout.height)}" '
           f'width="{_num(layout.width)}" height="{_num(layout.height)}" role="group" '
           f'aria-labelledby="{UID}-title" aria-describedby="{UID}-desc">',
           f'<title id="{UID}-title">{escape(strings.title)}</title>',
           f'<desc id="{UID}-desc">{escape(strings.description)}</desc>',
           "<defs>"]
    for name in ("arrow", "stream-arrow"):
        out.append(f'<marker id="{UID}-{name}" viewBox="0 0 8 8" refX="7" refY="4" '
                   f'markerWidth="{_num(geo.arrow)}" markerHeight="{_num(geo.arrow)}" '
                   f'markerUnits="userSpaceOnUse" orient="auto">'
                   f'<path class="gl-map-{name}head" d="M0,0 L8,4 L0,8 z"/></marker>')
    out.append("</defs>")
    if layout.block_rows:
        first, last = layout.block_rows
        top = layout.row_top(first) - geo.header + 2
        bottom = layout.row_top(last) + geo.box_h + geo.footer / 2 + 2
        out.append(f'<rect class="gl-map-block" x="{_num(geo.margin / 2)}" y="{_num(top)}" '
                   f'width="{_num(layout.width - geo.margin)}" height="{_num(bottom - top)}" rx="6"/>')
        label = strings.block if geo.text else strings.repeat
        out.append(f'<text class="gl-map-block-label" x="{_num(layout.width - geo.margin)}" '
                   f'y="{_num(top + geo.header * 0.62)}" text-anchor="end">{escape(label)}</text>')
    for source, target, kind in EDGES:
        if source not in by_id or target not in by_id:
            continue
        cls, marker = ("gl-map-stream", "stream-arrow") if kind == STREAM else ("gl-map-edge", "arrow")
        out.append(f'<polyline class="{cls}" points="{_points(_edge_points(layout, source, target, kind))}" '
                   f'marker-end="url(#{UID}-{marker})"/>')
    if geo.text and layout.block_rows:  # the stream's name, along its empty stretch
        x = layout.centre_x(0) - 2 * geo.stream_w
        y = (layout.row_top(2) + layout.row_top(8)) / 2
        out.append(f'<text class="gl-map-stream-label" x="{_num(x)}" y="{_num(y)}" '
                   f'text-anchor="middle" transform="rotate(-90 {_num(x)} {_num(y)})">'
                   f"{escape(strings.stream)}</text>")
        for step_id, run in RUN_NOTES:
            if step_id in by_id:
                _, top, right, bottom = layout.box(step_id)
                out.append(f'<text class="gl-map-note" x="{_num(right + 10)}" '
                           f'y="{_num((top + bottom) / 2 + 4)}">'
                           f"{escape(getattr(strings, run))}</text>")
    if kv_cache and all(source in by_id for source in CACHE_SOURCES):
        out += _cache_edges(layout)
        out.append(_cache_box(layout, strings))
    for step in steps:
        out.append(_box(step, layout, labels[step.id], shapes[step.id], href_of(step.id),
                        strings, step.id == current))
    out.append("</svg>")
    return "".join(out)


def model_map_html(steps: Sequence, shapes: Mapping[str, tuple], labels: Mapping[str, str],
                   href_of: Callable[[str], str], strings: MapStrings,
                   current: str | None = None, small: bool = False,
                   kv_cache: bool = False) -> str:
    """The map in its figure (``gl-map``, ``gl-map--small``): the page's block of HTML."""
    svg = model_map_svg(steps, shapes, labels, href_of, strings, current, small, kv_cache)
    size = "gl-map--small" if small else "gl-map--full"
    caption = "" if small else f"<figcaption>{escape(strings.description)}</figcaption>"
    return (f'<figure class="gl-map {size}" data-search-exclude>'
            f'<div class="gl-map-scroll">{svg}</div>{caption}</figure>')
