"""The model card page (``model-card/``, ``pt/model-card/``): prose from ``docs/_texts``,
figures from the checkpoint's ``training.json`` and from what this build measured.

The prose, ``docs/_texts/<lang>/model-card.md`` (front matter
``label:``, then Markdown that may use the placeholders of ``data.facts.FACTS``), holds the words;
every number and table here is generated. Without a ``training.json`` (``model: random``, or a
checkpoint without one) the page says there is no training card and still shows the head
scores and losses the build measured.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

import numpy as np

from ..data.heads import HeadStudy
from ..data.training_record import FORMS, TrainingRecord
from ..errors import DocsBuildError
from ..html.tables import table_box
from ..html.timelapse import timelapse_html
from ..text.files import TEXTS_DIRNAME
from ..text.languages import Language
from ..text.markdown import fmt, grouped, md_escape
from ..text.numbers import format_value
from ..text.step_texts import StepText, parse_step_text
from .circuit_proof import proof_section
from .urls import CARD_PAGE
# keys of training.json's "training" with a label in ui.yml (card.training.<key>); others are
# shown under their own name, in the card's order
TRAINING_KEYS = ("steps", "batch_size", "seq_len", "lr", "min_lr", "warmup", "schedule",
                 "optimizer", "betas", "weight_decay", "grad_clip", "init_std", "seed",
                 "switch_at", "switch_step", "seconds", "cpu_seconds", "load_average", "torch",
                 "transformers", "threads", "attn_implementation", "deterministic", "command")
CURVE_SERIES = (  # key in a curve point, colour, dashed (scores on the right-hand axis)
    ("train_loss", "#1f77b4", False), ("heldout_loss", "#ff7f0e", False),
    ("previous_token", "#2ca02c", True), ("induction", "#d62728", True))


def number(value, ui) -> str:
    """A figure of the card as the site writes numbers in the language of ``ui`` (ints as
    they are)."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, float):
        return format_value(np.float32(value), ui["number.decimal"])
    if isinstance(value, np.floating):
        return format_value(value, ui["number.decimal"])
    if isinstance(value, list):
        return ", ".join(number(v, ui) for v in value)
    return str(value)


def _table(ui, header: list[str], rows: list[list[str]], cls: str, row_attrs=None) -> str:
    """A small HTML table; every cell is already escaped HTML; ``ui`` gives its scroll hint."""
    head = "".join(f'<th scope="col">{h}</th>' for h in header)
    attrs = row_attrs or [""] * len(rows)
    body = "".join(f"<tr{attr}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
                   for attr, row in zip(attrs, rows))
    return (table_box(ui["table.scroll_hint"])
            + f'<table class="{cls}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


# -- sections ---------------------------------------------------------------------------------

def model_section(run, study: HeadStudy, ui) -> list[str]:
    c, s = run.config, run.settings
    source = (fmt(ui, "card.source.random", seed=s.seed) if s.checkpoint is None
              else fmt(ui, "card.source.checkpoint", model=s.model))
    lines = [f"## {md_escape(ui['card.model'])}", "", md_escape(source), "",
             md_escape(fmt(ui, "card.sizes", d_model=c.d_model, layers=c.n_layers,
                           heads=c.n_heads, kv_heads=c.n_kv_heads, d_ff=c.d_ff,
                           vocab=c.vocab_size, max_len=c.max_len,
                           parameters=run.model.parameter_count)), ""]
    if study.card is None:
        lines += ['<p class="gl-no-card">' + escape(ui["card.none"]) + "</p>", ""]
    return lines


def corpus_section(card: dict, ui, lang: Language) -> list[str]:
    corpus = card.get("corpus") or {}
    lines = [f"## {md_escape(ui['card.corpus'])}", ""]
    if corpus.get("description"):
        # the card is written in English; a Portuguese page quotes it as such
        lang_attr = ' lang="en"' if lang.html_lang != "en" else ""
        note = "" if not lang_attr else f'<p class="gl-note">{escape(ui["card.in_english"])}</p>'
        lines += [f'<blockquote class="gl-corpus"{lang_attr}><p>{escape(str(corpus["description"]))}'
                  f"</p></blockquote>{note}", ""]
    if corpus.get("license"):  # the card's own words too
        licence = md_escape(str(corpus["license"]))
        lines += [f"**{md_escape(ui['card.license'])}:** "
                  + (f'<span lang="en">{licence}</span>' if lang.html_lang != "en" else licence), ""]
    mix = corpus.get("mix")
    if isinstance(mix, dict) and mix:
        rows = [[escape(part_name(name, ui)), escape(number(share, ui))] for name, share in mix.items()]
        lines += [_table(ui, [escape(ui["card.mix.part"]), escape(ui["card.mix.share"])], rows,
                         "gl-card-table"), ""]
    sources = [s for s in corpus.get("sources") or [] if isinstance(s, dict) and s.get("name")]
    if sources:
        lines += [f"### {md_escape(ui['card.sources'])}", "", md_escape(ui["card.sources.intro"]), "",
                  sources_table(sources, ui, lang), ""]
    return lines


def part_name(name: str, ui) -> str:
    """A part of the corpus mix as the page names it (``card.part.<name>``, else its key)."""
    key = f"card.part.{name}"
    return ui[key] if key in ui else str(name)


def sources_table(sources: list[dict], ui, lang: Language) -> str:
    """Each real-text source: what it is, where it comes from (a Debian package and version),
    its licence, its size, and the SHA-256 of the text training read."""
    lang_attr = ' lang="en"' if lang.html_lang != "en" else ""  # the card's own words
    header = [escape(ui[k]) for k in ("card.sources.name", "card.sources.package",
                                      "card.license", "card.sources.size", "card.sources.sha256")]
    rows = []
    for s in sources:
        size = fmt(ui, "card.sources.bytes", bytes=grouped(ui, s.get('bytes', 0)),
                   lines=grouped(ui, s.get('lines', 0)))
        package = " ".join(str(s[k]) for k in ("package", "version") if s.get(k))
        sha = str(s.get("sha256", ""))
        rows.append([f"<strong>{escape(part_name(s['name'], ui))}</strong><br>"
                     f"<span{lang_attr}>{escape(str(s.get('text', '')))}</span>",
                     f"<code>{escape(package)}</code>" if package else "—",
                     f"<span{lang_attr}>{escape(str(s.get('license', '—')))}</span>",
                     escape(size), f'<code class="gl-sha">{escape(sha)}</code>' if sha else "—"])
    return _table(ui, header, rows, "gl-card-table gl-sources")


def explain_section(run, study: HeadStudy, ui) -> list[str]:
    """What the card's numbers mean, generated from them: the training against the held-out
    loss, what the two data mixes do, and what the model cannot do."""
    card = study.card or {}
    corpus, training = card.get("corpus") or {}, card.get("training") or {}
    curve = [p for p in card.get("curve") or [] if isinstance(p, dict)]
    paragraphs = []
    final_train = curve[-1].get("train_loss") if curve else None
    if study.heldout is not None and isinstance(final_train, (int, float)) and len(curve) > 1:
        mix = corpus.get("mix") or {}
        share = mix.get("copying")
        paragraphs.append(fmt(
            ui, "card.explain.losses", train=number(float(final_train), ui),
            every=curve[-1]["step"] - curve[-2]["step"], heldout=number(study.heldout.loss, ui),
            sentences=heldout_sentences(study), copy_first=number(float(study.report.copy_first), ui),
            ln95=number(math.log(95), ui)) + (
            " " + fmt(ui, "card.explain.copy_share", share=percent(share))
            if isinstance(share, (int, float)) else ""))
    circuits, english = corpus.get("circuits_mix"), corpus.get("mix")
    switch = training.get("switch_step")
    if isinstance(circuits, dict) and isinstance(english, dict) and isinstance(switch, int):
        paragraphs.append(fmt(ui, "card.explain.mix", switch=switch,
                              circuits=mix_text(circuits, ui), english=mix_text(english, ui)))
    c = run.config
    paragraphs.append(fmt(ui, "card.explain.limits", max_len=c.max_len,
                          parameters=grouped(ui, run.model.parameter_count)))
    return [f"## {md_escape(ui['card.explain'])}", "",
            *[line for p in paragraphs for line in (md_escape(p), "")]]


def heldout_sentences(study: HeadStudy) -> int:
    text = Path(study.heldout.source).read_text(encoding="utf-8")
    return sum(1 for line in text.splitlines() if line.strip())


def percent(share: float) -> str:
    return f"{round(100 * share):d} %"


def mix_text(mix: dict, ui) -> str:
    return ", ".join(f"{part_name(name, ui)} {percent(share)}" for name, share in mix.items()
                     if isinstance(share, (int, float)))


def training_section(card: dict, ui) -> list[str]:
    training = card.get("training") or {}
    if not isinstance(training, dict) or not training:
        return []
    rows = [[escape(ui[f"card.training.{k}"] if k in TRAINING_KEYS else k),
             escape(number(value, ui))] for k, value in training.items()]
    return [f"## {md_escape(ui['card.training'])}", "",
            _table(ui, [escape(ui["card.setting"]), escape(ui["card.value"])], rows, "gl-card-table"), ""]


def appearance_step(curve: list[dict], key: str = "induction") -> int | None:
    """The first step at which ``key`` reaches half its largest value over training."""
    scores = [(p["step"], p[key]) for p in curve if isinstance(p.get(key), (int, float))]
    top = max((v for _, v in scores), default=0.0)
    if top <= 0:
        return None
    return next(step for step, v in scores if v >= top / 2)


def curve_svg(curve: list[dict], ui) -> str:
    """The training curve: losses on the left axis (nats/byte), head scores on the right
    (0–1), step on the horizontal axis; a dotted line where the induction head appeared."""
    width, height, left, right, top, bottom = 640, 280, 48, 44, 12, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    steps = [p["step"] for p in curve]
    x_max = max(steps) or 1
    losses = [p[k] for p in curve for k in ("train_loss", "heldout_loss")
              if isinstance(p.get(k), (int, float))]
    y_max = max(1.0, math.ceil(max(losses, default=1.0)))

    def x(step):
        return left + plot_w * step / x_max

    def y_loss(v):
        return top + plot_h * (1 - v / y_max)

    def y_score(v):
        return top + plot_h * (1 - v)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-curve" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{escape(ui["card.curve.title"])}">',
           f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
           f'stroke="currentColor" stroke-opacity="0.4"/>']
    for i in range(5):  # grid and tick labels: losses at left, scores at right
        frac = i / 4
        gy = top + plot_h * (1 - frac)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}" '
                   f'stroke="currentColor" stroke-opacity="0.12"/>')
        out.append(f'<text x="{left - 4}" y="{gy + 4:.1f}" text-anchor="end" font-size="10">'
                   f'{escape(number(float(y_max * frac), ui))}</text>')
        out.append(f'<text x="{left + plot_w + 4}" y="{gy + 4:.1f}" font-size="10">'
                   f'{escape(number(float(frac), ui))}</text>')
        sx = left + plot_w * frac
        out.append(f'<text x="{sx:.1f}" y="{top + plot_h + 14}" text-anchor="middle" '
                   f'font-size="10">{round(x_max * frac)}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" '
               f'font-size="11">{escape(ui["card.curve.x"])}</text>')
    out.append(f'<text x="12" y="{top + plot_h / 2:.1f}" text-anchor="middle" font-size="11" '
               f'transform="rotate(-90 12 {top + plot_h / 2:.1f})">{escape(ui["card.curve.y_loss"])}</text>')
    out.append(f'<text x="{width - 8}" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
               f'font-size="11" transform="rotate(90 {width - 8} {top + plot_h / 2:.1f})">'
               f'{escape(ui["card.curve.y_score"])}</text>')
    appeared = appearance_step(curve)
    if appeared is not None:
        out.append(f'<line class="gl-curve-appeared" x1="{x(appeared):.1f}" x2="{x(appeared):.1f}" '
                   f'y1="{top}" y2="{top + plot_h}" stroke="#d62728" stroke-dasharray="2 3"/>')
    for key, colour, dashed in CURVE_SERIES:
        scale = y_score if dashed else y_loss
        points = " ".join(f"{x(p['step']):.1f},{scale(float(p[key])):.1f}" for p in curve
                          if isinstance(p.get(key), (int, float)))
        if points:
            dash = ' stroke-dasharray="5 3"' if dashed else ""
            out.append(f'<polyline data-series="{key}" points="{points}" fill="none" '
                       f'stroke="{colour}" stroke-width="1.8"{dash}/>')
    legend_x = left + 8
    for key, colour, dashed in CURVE_SERIES:
        label = ui[f"card.curve.{key}"]
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        out.append(f'<line x1="{legend_x}" x2="{legend_x + 18}" y1="{top + 12}" y2="{top + 12}" '
                   f'stroke="{colour}" stroke-width="2"{dash}/><text x="{legend_x + 22}" '
                   f'y="{top + 16}" font-size="10">{escape(label)}</text>')
        legend_x += 30 + 6 * len(label)
    out.append("</svg>")
    return "".join(out)


def curve_section(card: dict, ui) -> list[str]:
    curve = [p for p in card.get("curve") or [] if isinstance(p, dict) and "step" in p]
    if not curve:
        return []
    appeared = appearance_step(curve)
    caption = (fmt(ui, "card.curve.caption", step=appeared) if appeared is not None
               else ui["card.curve.caption_none"])
    header = [escape(ui[k]) for k in ("card.curve.x", "card.curve.train_loss",
                                      "card.curve.heldout_loss", "card.curve.previous_token",
                                      "card.curve.induction")]
    rows = [[escape(number(p.get(k), ui)) for k in ("step", "train_loss", "heldout_loss",
                                                 "previous_token", "induction")] for p in curve]
    return [f"## {md_escape(ui['card.curve'])}", "",
            f'<figure class="gl-curve-figure">{curve_svg(curve, ui)}'
            f"<figcaption>{escape(caption)}</figcaption></figure>", "",
            f'<details class="gl-curve-data"><summary>{escape(ui["card.curve.data"])}</summary>'
            + _table(ui, header, rows, "gl-card-table") + "</details>", ""]


def before_training_folder(run, study: HeadStudy) -> str | None:
    """The checkpoint's folder of initial weights that "before training" runs on (as
    ``engine.child.untrained_model`` picks it), or None for random weights."""
    initial = ((study.card or {}).get("record") or {}).get("initial_weights")
    if run.settings.checkpoint is None or not isinstance(initial, str):
        return None
    return initial


def measured_section(run, study: HeadStudy, ui) -> list[str]:
    """Losses and the copy test, as this build measured them, beside the card's figures."""
    final = (study.card or {}).get("final") or {}
    header = [escape(ui[k]) for k in ("card.measure", "card.measure.model",
                                      "card.measure.untrained", "card.measure.card")]
    rows = []
    if study.heldout is not None:
        card_figure = final.get("heldout_loss")
        rows.append([escape(fmt(ui, "card.measure.heldout", bytes=study.heldout.n_bytes,
                                window=study.heldout.window)),
                     escape(number(study.heldout.loss, ui)), escape(number(study.heldout.untrained_loss, ui)),
                     escape(number(card_figure, ui) if card_figure is not None else "—")])
    rows.append([escape(fmt(ui, "card.measure.loss_text", text=run.labels.text(
                     run.loss_tokens + run.loss_targets[-1:]))),
                 escape(number(run.loss, ui)), escape(number(study.untrained_loss, ui)), "—"])
    for key, mine, theirs, card_key in (
            ("card.measure.copy_first", study.report.copy_first, study.untrained.copy_first,
             "copy_loss_first"),
            ("card.measure.copy_second", study.report.copy_second, study.untrained.copy_second,
             "copy_loss_second"),
            ("card.measure.copy_ratio", study.report.copy_ratio, study.untrained.copy_ratio,
             "copy_ratio")):
        figure = final.get(card_key)
        rows.append([escape(fmt(ui, key, length=study.length)), escape(number(float(mine), ui)),
                     escape(number(float(theirs), ui)),
                     escape(number(figure, ui) if figure is not None else "—")])
    initial = before_training_folder(run, study)
    rows += grammar_rows(study, final, ui)
    before = (ui["card.before.random"] if initial is None
              else fmt(ui, "card.before.record", folder=initial))
    lines = [f"## {md_escape(ui['card.measured'])}", "",
             md_escape(fmt(ui, "card.measured.intro", before=before)), "",
             _table(ui, header, rows, "gl-card-table gl-measured"), ""]
    if study.heldout is None:
        lines += [md_escape(ui["card.no_heldout"]), ""]
    return lines


def grammar_rows(study: HeadStudy, final: dict, ui) -> list[list[str]]:
    """The held-out grammar's row (the training grammar drawn with another seed), labelled as
    not English, beside the training card's figure; none without heldout_grammar.txt."""
    grammar = study.heldout_grammar
    if grammar is None:
        return []
    figure = final.get("heldout_grammar_loss")
    return [[escape(fmt(ui, "card.measure.heldout_grammar", bytes=grammar.n_bytes,
                        window=grammar.window)),
             escape(number(grammar.loss, ui)), escape(number(grammar.untrained_loss, ui)),
             escape(number(figure, ui) if figure is not None else "—")]]


def heads_section(study: HeadStudy, ui) -> list[str]:
    """Every head's two scores (this build, ``glassllm.probes``), the best of each named."""
    prev, ind = study.best_previous_token, study.best_induction
    report, untrained = study.report, study.untrained
    header = [escape(ui[k]) for k in ("card.heads.layer", "card.heads.head",
                                      "card.heads.previous_token", "card.heads.induction",
                                      "card.heads.untrained_previous_token",
                                      "card.heads.untrained_induction")]
    rows, attrs = [], []
    n_layers, n_heads = report.previous_token.shape
    for layer in range(n_layers):
        for head in range(n_heads):
            cells = []
            for kind, scores, best in (("previous_token", report.previous_token, prev),
                                       ("induction", report.induction, ind)):
                text = escape(number(scores[layer, head], ui))
                if (best.layer, best.head) == (layer, head):
                    text = f'<strong class="gl-best">{text}</strong>'
                cells.append(f'<span data-score="{kind}">{text}</span>')
            rows.append([str(layer), str(head), *cells,
                         escape(number(untrained.previous_token[layer, head], ui)),
                         escape(number(untrained.induction[layer, head], ui))])
            attrs.append(f' data-layer="{layer}" data-head="{head}"')
    best_text = fmt(ui, "card.heads.best", prev_layer=prev.layer, prev_head=prev.head,
                    prev_score=number(np.float32(prev.score), ui), induction_layer=ind.layer,
                    induction_head=ind.head, induction_score=number(np.float32(ind.score), ui))
    return [f"## {md_escape(ui['card.heads'])}", "",
            md_escape(fmt(ui, "card.heads.intro", length=study.length, n=2 * study.length)), "",
            f'<p class="gl-best-heads">{escape(best_text)}</p>', "",
            _table(ui, header, rows, "gl-card-table gl-heads", attrs), ""]


def continuations_section(run, study: HeadStudy, ui) -> list[str]:
    if not study.continuations:
        return []
    rows = [[escape(prompt), f"<code>{escape(run.labels.text(tokens))}</code>"]
            for prompt, tokens in study.continuations]
    return [f"## {md_escape(ui['card.continuations'])}", "", md_escape(ui["card.continuations.intro"]),
            "", _table(ui, [escape(ui["card.continuations.prompt"]), escape(ui["card.continuations.text"])],
                       rows, "gl-card-table gl-continuations"), ""]


def timelapse_section(record: TrainingRecord, strip_urls: dict[str, str], ui) -> list[str]:
    """The record of how the circuits formed (``html/timelapse.py``), with its introduction."""
    intro = fmt(ui, "timelapse.intro", count=len(record.snapshots), last=record.steps[-1],
                n=len(record.probe_tokens), threshold=number(FORMS, ui))
    return [f"## {md_escape(ui['timelapse.title'])}", "", md_escape(intro), "",
            timelapse_html(record, strip_urls, ui, "gl-timelapse-card"), ""]


def render_model_card(run, study: HeadStudy, title: str, prose: str, ui, lang: Language,
                      strip_urls: dict[str, str] | None = None) -> str:
    """The Markdown of the model card page in one language; ``prose`` is already filled;
    ``strip_urls``: the time-lapse's film strips (kind -> URL from this page), if the
    checkpoint has a training record."""
    lines = [f"# {md_escape(title)}", "", prose.rstrip(), ""]
    lines += model_section(run, study, ui)
    if study.card is not None:
        lines += corpus_section(study.card, ui, lang)
        lines += training_section(study.card, ui)
        if study.record is not None and strip_urls is not None:
            lines += timelapse_section(study.record, strip_urls, ui)
        else:
            lines += curve_section(study.card, ui)
    lines += measured_section(run, study, ui)
    if study.card is not None:
        lines += explain_section(run, study, ui)
    lines += heads_section(study, ui)
    if study.circuit is not None:
        lines += proof_section(study.circuit, run.labels, ui)
    lines += continuations_section(run, study, ui)
    return "\n".join(lines)


def prose_path(docs_dir: Path, lang: Language) -> Path:
    return Path(docs_dir) / TEXTS_DIRNAME / lang.code / CARD_PAGE


def load_prose(docs_dir: Path, lang: Language) -> StepText:
    """The model card's hand-written words in one language (front matter ``label:``: the
    page title)."""
    path = prose_path(docs_dir, lang)
    if not path.is_file():
        raise DocsBuildError(f"missing {path}: write the {lang.code!r} prose of the model card "
                             f"page there (front matter 'label:' with its title, then Markdown)")
    return parse_step_text(path)
