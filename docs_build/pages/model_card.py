"""The model card page (``model-card/``, ``pt/model-card/``): prose from ``docs/_texts``,
figures from the checkpoint's ``report.json`` (``scripts/train_demo.py``'s measurements on
held-out texts against issue 28's criteria), its training record and what this build measured.

The prose, ``docs/_texts/<lang>/model-card.md`` (front matter ``label:``, then Markdown that
may use the placeholders of ``data.facts.FACTS``), holds the words; every number, table and
sentence here is generated from the report, the record and the build's own measurements, in
the page's language: where a criterion is missed the page says so, with the number. Without a
``report.json`` (``model: random``, or a checkpoint without one) the page says the model has no
report and still shows the head scores and losses the build measured.
"""

from __future__ import annotations

import ast
import json
import re
from html import escape
from pathlib import Path

import numpy as np

from ..data.heads import HeadStudy
from ..data.training_record import TrainingRecord
from ..engine.child import initial_seed
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

# report.json's criteria (scripts/train_demo.py: CRITERIA) -> the label of what each
# measures (card.criterion.<key> in ui.yml); the comparison is read from the name
CRITERIA = {
    "held-out English <= 1.25 nats/byte": "heldout",
    "English written twice: second/first copy loss <= 0.5": "english_twice",
    "English written twice: a layer-1 head >= 0.4 on the copy target": "english_head",
    "made-up names met again in a story: loss ratio <= 0.5": "names",
    "random token sequences written twice: ratio <= 0.2": "random_twice",
    "parameters <= 2,000,000": "parameters",
    "weights file <= 8 MB": "weights",
}
SIGNS = {"<=": "≤", ">=": "≥"}
# keys of report.json's "training" with a label in ui.yml (card.training.<key>); others are
# shown under their own name, in the report's order ("corpus" has a table of its own)
TRAINING_KEYS = ("steps", "batch_size", "seed", "init", "seconds", "cpu_seconds",
                 "record_seconds", "record_cpu_seconds", "resumed_from", "threads",
                 "tokens_seen", "tokenizer_sha256", "weights_dtype", "command")
# the data sources of the recipe (scripts/train_demo.py: parse_source) -> their arguments,
# as card.mix.<name> names them
SOURCE_ARGS = {"english": (), "corpus": ("text",), "names_story": (),
               "span_copy": ("k", "span", "prefix"), "random_twice": ("k", "span", "gap", "prefix"),
               "repeated_spans": ("span", "gap", "prefix"), "twice": ("span", "gap"),
               "chains": ("k",)}
TOKENIZER_FILE = "tokenizer.json"


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


def figure(value, ui) -> str:
    """A measured value: whole numbers grouped (3,576,488), others as ``number``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return grouped(ui, value)
    return number(value, ui)


def _table(ui, header: list[str], rows: list[list[str]], cls: str, row_attrs=None) -> str:
    """A small HTML table; every cell is already escaped HTML; ``ui`` gives its scroll hint."""
    head = "".join(f'<th scope="col">{h}</th>' for h in header)
    attrs = row_attrs or [""] * len(rows)
    body = "".join(f"<tr{attr}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
                   for attr, row in zip(attrs, rows))
    return (table_box(ui["table.scroll_hint"])
            + f'<table class="{cls}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _paragraphs(sentences: list[str]) -> list[str]:
    return [line for sentence in sentences for line in (md_escape(sentence), "")]


def _get(report: dict, *keys):
    """``report[k0][k1]...``, or ``DocsBuildError`` naming what report.json lacks."""
    value = report
    for i, key in enumerate(keys):
        if not isinstance(value, dict) or key not in value:
            raise DocsBuildError(f"report.json has no {'.'.join(map(str, keys[:i + 1]))}; "
                                 f"write it again with scripts/train_demo.py")
        value = value[key]
    return value


# -- the model --------------------------------------------------------------------------------

def tokenizer_facts(checkpoint: str | None) -> dict | None:
    """What the checkpoint's ``tokenizer.json`` is (its model type, whether it splits bytes,
    its vocabulary and merges), read as JSON; None without one (the byte tokenizer)."""
    if checkpoint is None or not (Path(checkpoint) / TOKENIZER_FILE).is_file():
        return None
    path = Path(checkpoint) / TOKENIZER_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = data["model"]
        return {"type": str(model["type"]), "vocab": len(model["vocab"]),
                "merges": len(model.get("merges") or []),
                "byte_level": "ByteLevel" in json.dumps(data.get("pre_tokenizer"))}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DocsBuildError(f"{path}: cannot read the tokenizer ({error}); fix the "
                             f"checkpoint's tokenizer.json") from error


def model_section(run, study: HeadStudy, ui) -> list[str]:
    c, s = run.config, run.settings
    source = (fmt(ui, "card.source.random", seed=s.seed) if s.checkpoint is None
              else fmt(ui, "card.source.checkpoint", model=s.model))
    lines = [f"## {md_escape(ui['card.model'])}", "", md_escape(source), "",
             md_escape(fmt(ui, "card.sizes", d_model=c.d_model, layers=c.n_layers,
                           heads=c.n_heads, kv_heads=c.n_kv_heads, d_ff=c.d_ff,
                           vocab=grouped(ui, c.vocab_size), max_len=c.max_len,
                           parameters=grouped(ui, run.model.parameter_count))), ""]
    lines += _paragraphs([tokenizer_sentence(run, study, ui)])
    if study.card is None:
        lines += ['<p class="gl-no-card">' + escape(ui["card.none"]) + "</p>", ""]
    return lines


def tokenizer_sentence(run, study: HeadStudy, ui) -> str:
    """The tokenizer in one sentence: byte-level BPE (or the bytes themselves), its vocabulary,
    and how many bytes a token stands for on the held-out text."""
    facts = tokenizer_facts(run.settings.checkpoint)
    heldout = study.heldout
    per_token = ("" if heldout is None or not heldout.n_tokens else " " + fmt(
        ui, "card.tokenizer.per_token", bytes=grouped(ui, heldout.n_bytes),
        tokens=grouped(ui, heldout.n_tokens), per=number(heldout.n_bytes / heldout.n_tokens, ui)))
    if facts is None:
        return ui["card.tokenizer.bytes"] + per_token
    key = "card.tokenizer.byte_bpe" if facts["byte_level"] and facts["type"] == "BPE" \
        else "card.tokenizer.other"
    return fmt(ui, key, kind=facts["type"], vocab=grouped(ui, facts["vocab"]),
               merges=grouped(ui, facts["merges"])) + per_token


# -- the report: issue 28's criteria, measured on held-out texts ------------------------------

def criterion_parts(name: str) -> tuple[str, str]:
    """(label key, comparison sign) of a criterion of report.json."""
    if name not in CRITERIA:
        raise DocsBuildError(f"report.json has the criterion {name!r}, which the model card "
                             f"cannot name: add it to CRITERIA in docs_build/pages/model_card.py "
                             f"and its label card.criterion.<key> to every ui.yml")
    signs = [sign for sign in SIGNS if f" {sign} " in name]
    if len(signs) != 1:
        raise DocsBuildError(f"report.json's criterion {name!r} must say '<=' or '>=' its target")
    return CRITERIA[name], SIGNS[signs[0]]


def criteria_section(report: dict, ui) -> list[str]:
    """Each criterion: what it measures, the measured value, the target and whether it is met;
    a sentence that counts them and names each missed one with its number."""
    criteria = _get(report, "criteria")
    rows, missed = [], []
    for name, c in criteria.items():
        key, sign = criterion_parts(name)
        value, target, met = c.get("value"), c.get("target"), c.get("met")
        if not isinstance(met, bool) or not isinstance(value, (int, float)) \
                or not isinstance(target, (int, float)):
            raise DocsBuildError(f"report.json's criterion {name!r} needs a number value and "
                                 f"target and a true/false met")
        what = ui[f"card.criterion.{key}"]
        verdict = ui["card.criteria.met" if met else "card.criteria.missed"]
        rows.append([escape(what), escape(figure(value, ui)), escape(f"{sign} {figure(target, ui)}"),
                     escape(verdict) if met else f'<strong class="gl-missed">{escape(verdict)}</strong>'])
        if not met:
            missed.append(fmt(ui, "card.criteria.miss", what=what, value=figure(value, ui),
                              sign=sign, target=figure(target, ui)))
    count = sum(1 for c in criteria.values() if c["met"])
    summary = [fmt(ui, "card.criteria.summary", met=count, total=len(criteria))]
    if missed:
        summary.append(fmt(ui, "card.criteria.missed_list", missed="; ".join(missed)))
    else:
        summary.append(ui["card.criteria.all_met"])
    header = [escape(ui[k]) for k in ("card.criteria.what", "card.criteria.measured",
                                      "card.criteria.target", "card.criteria.met_header")]
    return [f"## {md_escape(ui['card.criteria'])}", "", *_paragraphs([" ".join(summary)]),
            _table(ui, header, rows, "gl-card-table gl-criteria"), "",
            *_paragraphs(measure_sentences(report, ui))]


def measure_sentences(report: dict, ui) -> list[str]:
    """What each held-out test measured, from report.json's ``measures``."""
    m = _get(report, "measures")
    et, names, rt, pt, held = (_get(report, "measures", key) for key in (
        "english_twice", "names", "random_twice", "previous_token", "heldout"))
    return [
        fmt(ui, "card.report.heldout",
            loss=number(_get(report, "measures", "heldout_english_nats_per_byte"), ui),
            sentences=held["english_sentences"]),
        fmt(ui, "card.report.english_twice", items=et["items"], first=number(et["first_loss"], ui),
            second=number(et["second_loss"], ui), ratio=number(et["ratio"], ui),
            layer=et["induction"]["layer"], head=et["induction"]["head"],
            score=number(et["induction"]["score"], ui)),
        fmt(ui, "card.report.names", stories=names["stories"], first=number(names["first_loss"], ui),
            again=number(names["again_loss"], ui), ratio=number(names["ratio"], ui),
            every=number(names["ratio_every_token"], ui)),
        fmt(ui, "card.report.random_twice", n=held["random_sequences"], length=held["random_length"],
            first=number(rt["first_loss"], ui), second=number(rt["second_loss"], ui),
            ratio=number(rt["ratio"], ui), layer=rt["induction"]["layer"],
            head=rt["induction"]["head"], score=number(rt["induction"]["score"], ui)),
        fmt(ui, "card.report.previous_token", layer=pt["layer"], head=pt["head"],
            score=number(pt["score"], ui)),
        fmt(ui, "card.report.size", parameters=grouped(ui, m["parameters"]),
            bytes=grouped(ui, m["weights_bytes"]))
        + (" " + ui["card.report.float16"]
           if _get(report, "training").get("weights_dtype") == "float16" else ""),
    ]


# -- the training -----------------------------------------------------------------------------

def source_text(source: str, ui) -> str:
    """A data source of the recipe (``span_copy(32, [3, 10], 8)``) in words, or the source
    itself for one the card has no words for."""
    match = re.fullmatch(r"(\w+)(?:\((.*)\))?", source.strip())
    name = match.group(1) if match else None
    if name not in SOURCE_ARGS:
        return source
    try:
        args = ast.literal_eval(f"({match.group(2)},)") if match.group(2) else ()
    except (ValueError, SyntaxError):
        return source
    if len(args) != len(SOURCE_ARGS[name]):
        return source
    fields = {}
    for field, value in zip(SOURCE_ARGS[name], args):
        if field == "span":
            if not (isinstance(value, list) and len(value) == 2):
                return source
            fields["shortest"], fields["longest"] = value
        elif field == "text":  # corpus('harvard_sentences'): the text's name on the page
            if not isinstance(value, str):
                return source
            fields[field] = part_name(value, ui)
        else:
            fields[field] = grouped(ui, value) if isinstance(value, int) else value
    return fmt(ui, f"card.mix.{name}", **fields)


def phases_section(report: dict, ui) -> list[str]:
    """The recipe's phases, trained one after the other: steps, row length, learning rate,
    warm-up, schedule and the data mix, every source in words with its share."""
    phases = report.get("phases")
    if not isinstance(phases, list) or not phases:
        return []
    header = [escape(ui[k]) for k in ("card.phase", "card.phase.steps", "card.phase.context",
                                      "card.phase.lr", "card.phase.mix")]
    rows, first = [], 0
    for n, phase in enumerate(phases, 1):
        steps = int(_get(phase, "steps"))
        mix = _get(phase, "mix")
        total = sum(float(w) for w in mix.values()) or 1.0
        parts = "".join(f"<li>{round(100 * float(weight) / total)} %: "
                        f"{escape(source_text(source, ui))} <code>{escape(source)}</code></li>"
                        for source, weight in mix.items())
        lr = (fmt(ui, "card.phase.cosine", lr=number(phase.get("lr"), ui),
                  min_lr=number(phase["min_lr"], ui), warmup=phase.get("warmup", 0))
              if phase.get("min_lr") is not None else
              fmt(ui, "card.phase.constant", lr=number(phase.get("lr"), ui),
                  warmup=phase.get("warmup", 0)))
        rows.append([str(n), escape(fmt(ui, "card.phase.range", steps=grouped(ui, steps),
                                        start=first, end=first + steps)),
                     escape(number(phase.get("context"), ui)), escape(lr),
                     f'<ul class="gl-mix">{parts}</ul>'])
        first += steps
    return [f"### {md_escape(ui['card.phases'])}", "",
            *_paragraphs([fmt(ui, "card.phases.intro", n=len(phases), steps=grouped(ui, first))]),
            _table(ui, header, rows, "gl-card-table gl-phases"), ""]


def training_section(report: dict, ui, lang: Language) -> list[str]:
    """How the model was trained: a sentence with the steps, the time and the command, the
    report's training settings, the recipe's phases and the corpus."""
    training = _get(report, "training")
    seconds, cpu = training.get("seconds"), training.get("cpu_seconds")
    sentence = fmt(ui, "card.training.intro", steps=grouped(ui, int(_get(training, "steps"))),
                   seconds=number(seconds, ui), cpu=number(cpu, ui),
                   threads=number(training.get("threads"), ui))
    rows = [[escape(ui[f"card.training.{k}"] if k in TRAINING_KEYS else k),
             f"<code>{escape(str(value))}</code>" if k in ("command", "tokenizer_sha256")
             and value is not None else escape(figure(value, ui))]
            for k, value in training.items() if k != "corpus"]
    lines = [f"## {md_escape(ui['card.training'])}", "", *_paragraphs([sentence]),
             _table(ui, [escape(ui["card.setting"]), escape(ui["card.value"])], rows,
                    "gl-card-table gl-training"), ""]
    lines += phases_section(report, ui)
    sources = [s for s in training.get("corpus") or [] if isinstance(s, dict) and s.get("name")]
    if sources:
        lines += [f"### {md_escape(ui['card.sources'])}", "", md_escape(ui["card.sources.intro"]),
                  "", sources_table(sources, ui, lang), ""]
    return lines


def part_name(name: str, ui) -> str:
    """A part of the corpus as the page names it (``card.part.<name>``, else its key)."""
    key = f"card.part.{name}"
    return ui[key] if key in ui else str(name)


def sources_table(sources: list[dict], ui, lang: Language) -> str:
    """Each real-text source: what it is, where it comes from (a Debian package and version),
    its licence, its size, and the SHA-256 of the text training read."""
    lang_attr = ' lang="en"' if lang.html_lang != "en" else ""  # the report's own words
    header = [escape(ui[k]) for k in ("card.sources.name", "card.sources.package",
                                      "card.license", "card.sources.size", "card.sources.sha256")]
    rows = []
    for s in sources:
        size = fmt(ui, "card.sources.bytes", bytes=grouped(ui, s.get('bytes', 0)),
                   lines=grouped(ui, s.get('lines', 0)))
        times = s.get("times", 1)
        if isinstance(times, int) and times > 1:  # train_demo.py --repeat
            size += "; " + fmt(ui, "card.sources.times", times=grouped(ui, times))
        package = " ".join(str(s[k]) for k in ("package", "version") if s.get(k))
        sha = str(s.get("sha256", ""))
        text = f"<br><span{lang_attr}>{escape(str(s['text']))}</span>" if s.get("text") else ""
        rows.append([f"<strong>{escape(part_name(s['name'], ui))}</strong>{text}",
                     f"<code>{escape(package)}</code>" if package else "—",
                     f"<span{lang_attr}>{escape(str(s.get('license', '—')))}</span>",
                     escape(size), f'<code class="gl-sha">{escape(sha)}</code>' if sha else "—"])
    return _table(ui, header, rows, "gl-card-table gl-sources")


# -- the record -------------------------------------------------------------------------------

def timelapse_section(record: TrainingRecord, strip_urls: dict[str, str], ui) -> list[str]:
    """The record of how the circuits formed (``html/timelapse.py``), with its introduction."""
    intro = fmt(ui, "timelapse.intro", count=len(record.snapshots), last=record.steps[-1],
                every=record.every, n=len(record.probe_tokens),
                threshold=number(record.threshold, ui))
    return [f"## {md_escape(ui['timelapse.title'])}", "", md_escape(intro), "",
            timelapse_html(record, strip_urls, ui, "gl-timelapse-card"), ""]


# -- measured by this build -------------------------------------------------------------------

def before_training(run, study: HeadStudy, ui) -> str:
    """What "before training" is on this site, as ``engine.child.untrained_model`` picks it."""
    if run.settings.checkpoint is None:
        return ui["card.before.random"]
    seed = initial_seed(study.card)
    if seed is not None:
        return fmt(ui, "card.before.report", seed=seed)
    if study.card is not None:
        return fmt(ui, "card.before.unrecorded", seed=run.settings.seed)
    return ui["card.before.random"]


def measured_section(run, study: HeadStudy, ui) -> list[str]:
    """Losses and the copy test, as this build measured them, beside the report's figure."""
    measures = (study.card or {}).get("measures") or {}
    header = [escape(ui[k]) for k in ("card.measure", "card.measure.model",
                                      "card.measure.untrained", "card.measure.card")]
    rows = []
    if study.heldout is not None:
        reported = measures.get("heldout_english_nats_per_byte")
        rows.append([escape(fmt(ui, "card.measure.heldout", bytes=grouped(ui, study.heldout.n_bytes),
                                window=study.heldout.window)),
                     escape(number(study.heldout.loss, ui)),
                     escape(number(study.heldout.untrained_loss, ui)),
                     escape(number(reported, ui) if reported is not None else "—")])
    rows.append([escape(fmt(ui, "card.measure.loss_text", text=run.labels.text(
                     run.loss_tokens + run.loss_targets[-1:]))),
                 escape(number(run.loss, ui)), escape(number(study.untrained_loss, ui)), "—"])
    for key, mine, theirs in (
            ("card.measure.copy_first", study.report.copy_first, study.untrained.copy_first),
            ("card.measure.copy_second", study.report.copy_second, study.untrained.copy_second),
            ("card.measure.copy_ratio", study.report.copy_ratio, study.untrained.copy_ratio)):
        rows.append([escape(fmt(ui, key, length=study.length)), escape(number(float(mine), ui)),
                     escape(number(float(theirs), ui)), "—"])
    lines = [f"## {md_escape(ui['card.measured'])}", "",
             md_escape(fmt(ui, "card.measured.intro", before=before_training(run, study, ui))), "",
             _table(ui, header, rows, "gl-card-table gl-measured"), ""]
    if study.heldout is None:
        lines += [md_escape(ui["card.no_heldout"]), ""]
    return lines


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


def report_sections(report: dict, ui, lang: Language) -> list[str]:
    """The criteria and the training of ``report`` (a checkpoint's report.json);
    ``DocsBuildError`` naming what is missing or wrong in it."""
    try:
        return criteria_section(report, ui) + training_section(report, ui, lang)
    except DocsBuildError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise DocsBuildError(f"report.json is not the report scripts/train_demo.py writes "
                             f"(missing or wrong {error!r}); write it again with that "
                             f"script") from error


def render_model_card(run, study: HeadStudy, title: str, prose: str, ui, lang: Language,
                      strip_urls: dict[str, str] | None = None) -> str:
    """The Markdown of the model card page in one language; ``prose`` is already filled;
    ``strip_urls``: the time-lapse's film strips (kind -> URL from this page), if the
    checkpoint has a training record."""
    lines = [f"# {md_escape(title)}", "", prose.rstrip(), ""]
    lines += model_section(run, study, ui)
    if study.card is not None:
        lines += report_sections(study.card, ui, lang)
        if study.record is not None and strip_urls is not None:
            lines += timelapse_section(study.record, strip_urls, ui)
    lines += measured_section(run, study, ui)
    lines += heads_section(study, ui)
    if study.circuit is not None:
        lines += proof_section(study.circuit, run.labels, ui)
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
