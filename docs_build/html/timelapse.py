"""The time-lapse of training: how the featured heads' attention on the probe changed from
step 0 to the end, beside the losses and the heads' scores, with the step each head formed
marked (``data/training_record.py`` holds the record).

One figure: a chart (losses on the left axis; the two featured heads' scores and the English
written twice loss ratio on the right; the recipe's phases as bands, a dashed line where each
head formed, a line for the snapshot shown), per featured head its attention on the probe at
that snapshot, and a chart per kind of every head of its layer (``heads_svg``). Every snapshot of a head is one frame of a
film strip, one PNG file (``strip_png``) that the page shows one frame of; the slider and the
play button of ``assets/timelapse.js`` move through them. Without JavaScript the figure shows
the last snapshot, and the table under it the numbers of every hundredth step and of the
snapshots where a phase begins or a head forms.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from ..data.training_record import KINDS, TrainingRecord
from ..text.markdown import fmt, number
from ..text.numbers import format_value
from .colours import ColourScale
from .heatmap import heatmap_pixels
from .png import png_bytes
from .tables import table_box

SERIES = (  # (key, colour, dashed): losses solid on the left axis, scores and the ratio
    # dashed on the right
    ("train_loss", "#1f77b4", False), ("heldout_loss", "#ff7f0e", False),
    ("previous_token", "#2ca02c", True), ("induction", "#d62728", True),
    ("copy_ratio", "#9467bd", True))
RIGHT_AXIS = ("previous_token", "induction", "copy_ratio")
HEAD_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f")
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 260, 48, 44, 22, 36


def strip_png(frames: np.ndarray) -> bytes:
    """(snapshots, n, n) attention weights as one image, the frames side by side, one pixel
    per weight on one fixed 0–1 scale (so frames compare); the masked future light grey."""
    count, n, _ = frames.shape
    masked = np.triu(np.ones((n, n), dtype=bool), 1)
    strip = np.concatenate(list(frames), axis=1)
    return png_bytes(heatmap_pixels(strip, np.tile(masked, (1, count)),
                                    ColourScale(diverging=False, low=0.0, high=1.0)))


def head_name(record: TrainingRecord, kind: str, ui) -> str:
    head = record.featured[kind]
    return fmt(ui, f"timelapse.head.{kind}", layer=head.layer, head=head.head)


def legend_name(record: TrainingRecord, kind: str, ui) -> str:
    head = record.featured[kind]
    return fmt(ui, f"timelapse.legend.{kind}", layer=head.layer, head=head.head)


def story(record: TrainingRecord, ui) -> list[str]:
    """What the record shows, one generated sentence per head and one for the data mixes."""
    steps, out = record.steps, []
    for kind in KINDS:
        series, formed = record.series(kind), record.formed_at[kind]
        name = head_name(record, kind, ui)
        if formed is None:
            peak = int(np.argmax(series))  # a head that qualified once and fell back says so
            key = "timelapse.fell_back" if series[peak] >= record.threshold else "timelapse.never"
            out.append(fmt(ui, key, head=name, last=number(ui, series[-1]),
                           peak=number(ui, series[peak]), peak_step=steps[peak],
                           threshold=number(ui, record.threshold)))
            continue
        at = record.index_of(formed)
        if at == 0:
            out.append(fmt(ui, "timelapse.from_start", head=name,
                           low=number(ui, min(series))))
            continue
        rise = int(np.argmax(np.diff(series)))  # the largest rise: snapshots rise, rise + 1
        out.append(fmt(ui, "timelapse.formed", head=name, step=formed,
                       low=number(ui, min(series[at:])), last=number(ui, series[-1]),
                       jump_from=number(ui, series[rise]), jump_start=steps[rise],
                       jump_to=number(ui, series[rise + 1]), jump_end=steps[rise + 1]))
    out += every_head(record, ui)
    ratios = [s.copy_ratio for s in record.snapshots]
    low = int(np.argmin(ratios))
    out.append(fmt(ui, "timelapse.ratio", start=number(ui, ratios[0]), last=number(ui, ratios[-1]),
                   low=number(ui, ratios[low]), low_step=steps[low],
                   heldout_start=number(ui, record.snapshots[0].heldout_loss),
                   heldout_last=number(ui, record.snapshots[-1].heldout_loss)))
    return out


def every_head(record: TrainingRecord, ui) -> list[str]:
    """By the same rule, which heads of each kind's layer formed, and when; the others with
    their last score."""
    out = []
    for kind in KINDS:
        formed = [(h, step) for h, step in enumerate(record.heads_formed_at[kind])
                  if step is not None]
        never = [f"{h} ({number(ui, record.series(kind, h)[-1])})"
                 for h, step in enumerate(record.heads_formed_at[kind]) if step is None]
        parts = [fmt(ui, "timelapse.heads.formed", head=h, step=step) for h, step in formed]
        if never:
            parts.append(fmt(ui, "timelapse.heads.never", heads=", ".join(never)))
        out.append(fmt(ui, f"timelapse.heads.{kind}", layer=record.layers[kind],
                       threshold=number(ui, record.threshold), what="; ".join(parts)))
    return out


def phase_name(phase: int, ui) -> str:
    """A phase of the recipe as the chart's band names it (counted from 1)."""
    return fmt(ui, "timelapse.phase_n", n=phase + 1)


def _value(snapshot, record: TrainingRecord, key: str, index: int) -> float | None:
    if key in KINDS:
        return record.series(key)[index]
    return getattr(snapshot, key)


def right_top(record: TrainingRecord) -> float:
    """The top of the right-hand axis: 1, or the highest English-twice ratio above it (in
    tenths)."""
    return max(1.0, math.ceil(10 * max(s.copy_ratio for s in record.snapshots)) / 10)


def phase_runs(record: TrainingRecord) -> list[tuple[int, int, int]]:
    """(first snapshot, the snapshot its band ends at, data mix) for each run of snapshots
    taken in one mix."""
    phases = [s.phase for s in record.snapshots]
    starts = [i for i, p in enumerate(phases) if i == 0 or p != phases[i - 1]]
    ends = starts[1:] + [len(phases) - 1]
    return [(start, end, phases[start]) for start, end in zip(starts, ends)]


def phase_bands(record: TrainingRecord, x, top: float, plot_h: float, *, font_size: int,
                title=None) -> list[str]:
    """A chart's phases: each run of snapshots in one data mix, up to the next run's first
    snapshot, numbered above the plot (``title(phase)`` its tooltip), every other run shaded."""
    out = []
    for run, (first, end, phase) in enumerate(phase_runs(record)):
        x0, x1 = x(record.steps[first]), x(record.steps[end])
        if run % 2 == 0:
            out.append(f'<rect class="gl-tl-band" x="{x0:.0f}" y="{top}" width="{x1 - x0:.0f}" '
                       f'height="{plot_h}" fill="currentColor" fill-opacity="0.07"/>')
        tip = f"<title>{escape(title(phase))}</title>" if title else ""
        out.append(f'<text x="{(x0 + x1) / 2:.0f}" y="{top - font_size + 2}" '
                   f'text-anchor="middle" font-size="{font_size}">{tip}{phase + 1}</text>')
    return out


def polyline_points(points: list[tuple[float, float]], tolerance: float = 0.5) -> str:
    """A polyline's points attribute, whole pixels, without the points that lie within
    ``tolerance`` pixels of the line through the points kept around them (Ramer-Douglas-
    Peucker): the same drawing with fewer numbers, so a record of hundreds of snapshots keeps
    the page within its budget."""
    xy = [(round(px), round(py)) for px, py in points]
    keep = {0, len(xy) - 1} if xy else set()
    stack = [(0, len(xy) - 1)]
    while stack:
        first, last = stack.pop()
        (x0, y0), (x1, y1) = xy[first], xy[last]
        length = math.hypot(x1 - x0, y1 - y0)
        far, farthest = tolerance, None
        for i in range(first + 1, last):
            px, py = xy[i]
            d = (abs((x1 - x0) * (y0 - py) - (x0 - px) * (y1 - y0)) / length if length
                 else math.hypot(px - x0, py - y0))
            if d > far:
                far, farthest = d, i
        if farthest is not None:
            keep.add(farthest)
            stack += [(first, farthest), (farthest, last)]
    return " ".join(f"{xy[i][0]},{xy[i][1]}" for i in sorted(keep))


def chart_svg(record: TrainingRecord, ui, shown: int) -> tuple[str, list[float]]:
    """The chart's SVG, and the x of every snapshot's step in it (for the shown-step line)."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    steps = record.steps
    x_max = max(steps) or 1
    losses = [v for s in record.snapshots for v in (s.train_loss, s.heldout_loss)
              if v is not None]
    y_max = max(1.0, math.ceil(max(losses)))
    top = right_top(record)

    def x(step):
        return LEFT + plot_w * step / x_max

    def y(value, score):
        return TOP + plot_h * (1 - (value / top if score else value / y_max))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-tl-chart" width="{WIDTH}" '
           f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-label="{escape(ui["timelapse.chart"])}">']
    out += phase_bands(record, x, TOP, plot_h, font_size=10, title=lambda p: phase_name(p, ui))
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
               f'stroke="currentColor" stroke-opacity="0.4"/>')
    # the grid as one path and the tick labels in three groups (the page weighs less)
    fracs = [i / 4 for i in range(5)]
    rows = [TOP + plot_h * (1 - frac) for frac in fracs]
    out.append('<path d="' + "".join(f"M{LEFT} {gy:.0f}H{LEFT + plot_w}" for gy in rows)
               + '" stroke="currentColor" stroke-opacity="0.12"/>')
    out.append('<g font-size="10" text-anchor="end">' + "".join(
        f'<text x="{LEFT - 4}" y="{gy + 4:.0f}">{escape(number(ui, np.float32(y_max * frac)))}</text>'
        for frac, gy in zip(fracs, rows)) + "</g>")
    out.append('<g font-size="10">' + "".join(  # the right axis: scores and the ratio
        f'<text x="{LEFT + plot_w + 4}" y="{y(frac, True) + 4:.0f}">{escape(number(ui, np.float32(frac)))}</text>'
        for frac in fracs) + "</g>")
    out.append('<g font-size="10" text-anchor="middle">' + "".join(
        f'<text x="{LEFT + plot_w * frac:.0f}" y="{TOP + plot_h + 14}">{round(x_max * frac)}</text>'
        for frac in fracs) + "</g>")
    out.append(f'<text x="{LEFT + plot_w / 2:.0f}" y="{HEIGHT - 4}" text-anchor="middle" '
               f'font-size="11">{escape(ui["timelapse.x"])}</text>')
    for kind, colour in (("previous_token", "#2ca02c"), ("induction", "#d62728")):
        formed = record.formed_at[kind]
        if formed is not None:
            out.append(f'<line class="gl-tl-formed" data-kind="{kind}" x1="{x(formed):.0f}" '
                       f'x2="{x(formed):.0f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="{colour}" '
                       f'stroke-dasharray="2 3"><title>'
                       f'{escape(fmt(ui, "timelapse.formed_mark", head=head_name(record, kind, ui), step=formed))}'
                       f"</title></line>")
    for key, colour, dashed in SERIES:
        score = key in RIGHT_AXIS
        points = polyline_points([(x(s.step), y(_value(s, record, key, i), score))
                                  for i, s in enumerate(record.snapshots)
                                  if _value(s, record, key, i) is not None])
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        out.append(f'<polyline data-series="{key}" points="{points}" fill="none" '
                   f'stroke="{colour}" stroke-width="1.8"{dash}/>')
    now = x(steps[shown])
    out.append(f'<line class="gl-tl-now" x1="{now:.0f}" x2="{now:.0f}" y1="{TOP}" '
               f'y2="{TOP + plot_h}" stroke="currentColor" stroke-width="1.5" stroke-opacity="0.6"/>')
    out.append("</svg>")
    return "".join(out), [round(x(step)) for step in steps]


def legend_html(record: TrainingRecord, ui) -> str:
    """The chart's key, under it (it wraps on a narrow screen): a line sample per series."""
    items = []
    for key, colour, dashed in SERIES:
        label = legend_name(record, key, ui) if key in KINDS else ui[f"timelapse.{key}"]
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        items.append(f'<li><svg width="22" height="8" aria-hidden="true"><line x1="1" x2="21" '
                     f'y1="4" y2="4" stroke="{colour}" stroke-width="2"{dash}/></svg>'
                     f"{escape(label)}</li>")
    return f'<ul class="gl-tl-legend">{"".join(items)}</ul>'


def frame_label(record: TrainingRecord, kind: str, index: int, ui) -> str:
    return fmt(ui, "timelapse.frame", head=head_name(record, kind, ui),
               step=record.steps[index], score=number(ui, record.series(kind)[index]))


TABLE_EVERY = 100  # steps between two rows of the scores table (the charts draw every snapshot)
TABLE_ROWS = 60  # at most about this many rows at that spacing: a longer run, a multiple of it


def table_every(record: TrainingRecord) -> int:
    """The steps between two regular rows of the scores table: TABLE_EVERY, or the multiple
    of it that keeps a long run's table to about TABLE_ROWS rows."""
    return TABLE_EVERY * max(1, math.ceil(record.steps[-1] / (TABLE_EVERY * TABLE_ROWS)))


def table_rows(record: TrainingRecord) -> list[int]:
    """The snapshots the table shows: every ``table_every`` steps, the first of each phase,
    the one where a head forms and the one before it, and the last; a table of all the
    hundreds of snapshots would weigh more than the page's budget, and the charts draw every
    one."""
    keep = {0, len(record.snapshots) - 1}
    every = table_every(record)
    for i, s in enumerate(record.snapshots):
        if s.step % every == 0 or (i and s.phase != record.snapshots[i - 1].phase):
            keep.add(i)
    for kind in KINDS:
        for step in record.heads_formed_at[kind]:
            if step is not None:
                i = record.steps.index(step)
                keep.update({max(i - 1, 0), i})
    return sorted(keep)


def scores_table(record: TrainingRecord, ui) -> str:
    """The numbers of the snapshots ``table_rows`` picks: phase, losses, the English-twice
    ratio, and the score of every head the rule follows (layer 0's previous-token scores, the
    induction layer's induction scores), the step where a head forms marked."""
    heads = [(kind, h) for kind in KINDS for h in range(record.n_heads(kind))]
    header = [ui["timelapse.x"], ui["timelapse.phase"], ui["timelapse.train_loss"],
              ui["timelapse.heldout_loss"], ui["timelapse.copy_ratio"],
              *[fmt(ui, f"timelapse.legend.{kind}", layer=record.layers[kind], head=h)
                for kind, h in heads]]
    rows = []
    for i in table_rows(record):
        s = record.snapshots[i]
        cells = [str(s.step), escape(phase_name(s.phase, ui)),
                 "—" if s.train_loss is None else number(ui, s.train_loss),
                 number(ui, s.heldout_loss), number(ui, s.copy_ratio)]
        for kind, h in heads:
            cell = escape(number(ui, record.series(kind, h)[i]))
            if record.heads_formed_at[kind][h] == s.step:
                cell = f'<strong class="gl-tl-forms">{cell} ({escape(ui["timelapse.forms"])})</strong>'
            cells.append(cell)
        rows.append(f'<tr data-step="{s.step}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    return (table_box(ui["table.scroll_hint"]) + f'<table class="gl-card-table gl-tl-table">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def heads_svg(record: TrainingRecord, kind: str, ui) -> str:
    """Every head of the kind's layer: its score at every snapshot (one line each, the
    featured head's thicker), the recipe's phases as bands, the threshold dashed, and a dotted
    line where each head formed."""
    width, height, left, right, top, bottom = 320, 200, 34, 10, 22, 32
    plot_w, plot_h = width - left - right, height - top - bottom
    steps, layer = record.steps, record.layers[kind]
    x_max = max(steps) or 1

    def x(step):
        return left + plot_w * step / x_max

    def y(value):
        return top + plot_h * (1 - value)

    title = fmt(ui, f"timelapse.heads_chart.{kind}", layer=layer)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-tl-heads-chart" data-kind="{kind}" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{escape(title)}">']
    out += phase_bands(record, x, top, plot_h, font_size=9)
    out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
               f'stroke="currentColor" stroke-opacity="0.4"/>')
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(record.threshold):.0f}" '
               f'y2="{y(record.threshold):.0f}" stroke="currentColor" stroke-opacity="0.5" '
               f'stroke-dasharray="4 3"/>')
    out.append('<g font-size="9" text-anchor="end">' + "".join(
        f'<text x="{left - 3}" y="{y(v) + 3:.0f}">{escape(number(ui, np.float32(v)))}</text>'
        for v in (0.0, 0.5, 1.0)) + "</g>")
    out.append('<g font-size="9" text-anchor="middle">' + "".join(
        f'<text x="{x(x_max * f):.0f}" y="{top + plot_h + 12}">{round(x_max * f)}</text>'
        for f in (0, 0.5, 1)) + "</g>")
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle" '
               f'font-size="10">{escape(ui["timelapse.x"])}</text>')
    for h in range(record.n_heads(kind)):
        colour = HEAD_COLOURS[h % len(HEAD_COLOURS)]
        formed = record.heads_formed_at[kind][h]
        if formed is not None:
            out.append(f'<line class="gl-tl-formed" data-kind="{kind}" data-head="{h}" '
                       f'x1="{x(formed):.0f}" x2="{x(formed):.0f}" y1="{top}" y2="{top + plot_h}" '
                       f'stroke="{colour}" stroke-dasharray="2 3"/>')
        points = polyline_points([(x(step), y(min(v, 1.0)))
                                  for step, v in zip(steps, record.series(kind, h))])
        featured = h == record.featured[kind].head
        out.append(f'<polyline data-head="{h}" points="{points}" fill="none" stroke="{colour}" '
                   f'stroke-width="{2.4 if featured else 1.2}"/>')
    out.append("</svg>")
    items = "".join(
        f'<li><svg width="22" height="8" aria-hidden="true"><line x1="1" x2="21" y1="4" y2="4" '
        f'stroke="{HEAD_COLOURS[h % len(HEAD_COLOURS)]}" stroke-width="2"/></svg>'
        f'{escape(fmt(ui, f"timelapse.legend.{kind}", layer=layer, head=h))}</li>'
        for h in range(record.n_heads(kind)))
    return (f'<figure class="gl-tl-every"><figcaption>{escape(title)}</figcaption>'
            f'{"".join(out)}<ul class="gl-tl-legend">{items}</ul></figure>')


def timelapse_html(record: TrainingRecord, strip_urls: dict[str, str], ui, uid: str,
                   table: bool = True, told: bool = True) -> str:
    """The time-lapse figure (``strip_urls``: kind -> the URL of its film strip from this
    page), (``told``) its story and (``table``) its table of scores per snapshot."""
    count = len(record.snapshots)
    shown = count - 1
    chart, xs = chart_svg(record, ui, shown)
    heads = []
    for kind in KINDS:
        series = " ".join(format_value(v) for v in record.series(kind))
        position = 100.0 * shown / max(count - 1, 1)
        heads.append(
            f'<figure class="gl-tl-head" data-kind="{kind}" data-scores="{series}" '
            f'data-label="{escape(ui["timelapse.frame"])}" '
            f'data-head="{escape(head_name(record, kind, ui))}">'
            f'<div class="gl-tl-frame" role="img" aria-label="{escape(frame_label(record, kind, shown, ui))}" '
            f'style="background-image:url(&quot;{escape(strip_urls[kind])}&quot;);'
            f'background-size:{count * 100}% 100%;background-position:{position:.4f}% 0"></div>'
            f'<figcaption>{escape(frame_label(record, kind, shown, ui))}</figcaption></figure>')
    steps = " ".join(str(s) for s in record.steps)
    controls = (f'<div class="gl-tl-controls" hidden><button type="button" class="gl-tl-play" '
                f'data-play="{escape(ui["timelapse.play"])}" data-pause="{escape(ui["timelapse.pause"])}">'
                f'{escape(ui["timelapse.play"])}</button>'
                f'<input type="range" id="{uid}-slider" class="gl-tl-slider" min="0" max="{count - 1}" '
                f'step="1" value="{shown}" aria-label="{escape(ui["timelapse.slider"])}">'
                f'<output for="{uid}-slider" class="gl-tl-step">'
                f'{escape(fmt(ui, "timelapse.step", step=record.steps[shown]))}</output></div>')
    paragraphs = "".join(f"<p>{escape(sentence)}</p>" for sentence in story(record, ui)) if told else ""
    return (f'<div class="gl-timelapse" id="{uid}" data-steps="{steps}" '
            f'data-x="{" ".join(str(v) for v in xs)}" '
            f'data-step-label="{escape(ui["timelapse.step"])}">'
            + (f'<div class="gl-tl-story">{paragraphs}</div>' if told else "")
            + f'<figure class="gl-tl-figure">{chart}{legend_html(record, ui)}<div class="gl-tl-heads">{"".join(heads)}</div>'
            f"{controls}<figcaption>{escape(fmt(ui, 'timelapse.caption', n=len(record.probe_tokens)))}"
            f"</figcaption></figure>"
            + (f'<div class="gl-tl-every-heads">{"".join(heads_svg(record, kind, ui) for kind in KINDS)}'
               f'</div><p class="gl-note">{escape(fmt(ui, "timelapse.heads_caption", threshold=number(ui, record.threshold)))}</p>'
               if told else "")
            + (f'<details class="gl-tl-data"><summary>{escape(fmt(ui, "timelapse.data", every=table_every(record)))}</summary>'
               f"{scores_table(record, ui)}</details>" if table else "") + "</div>")
