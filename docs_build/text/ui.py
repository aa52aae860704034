"""The UI strings of the generated pages: ``docs/_texts/<lang>/ui.yml``, every key checked."""

from __future__ import annotations

import string
from pathlib import Path

import yaml

from ..errors import DocsBuildError
from .files import TEXTS_DIRNAME, read_text, yaml_problem
from .languages import Language

# Every key a language's ui.yml must define, with the placeholders each one may use. The
# build refuses a ui.yml that lacks a key or uses an unknown placeholder, naming the file.
UI_KEYS: dict[str, tuple[str, ...]] = {
    "language_name": (),
    "nav.steps": (),
    "nav.source": (),
    "step.position": ("position", "count"),
    "step.runs": (),
    "where.model": (),
    "where.block": ("layers",),
    "where.generation": (),
    "where.training": (),
    "step.head_axis": (),
    # a step page's shapes during the example's generation (pages/during_generation.py)
    "step.generation": (),
    "generation.none": (),
    "generation.same": ("shape", "count"),
    "generation.first": ("n", "shape"),
    "generation.cached": ("n", "first", "second", "last", "later"),
    "generation.cached_one": ("n", "first", "later"),
    "generation.growing": ("start", "end"),
    "head_axis.yes": ("heads",),
    "head_axis.kv": ("heads", "group"),
    "head_axis.no": (),
    "step.source": (),
    "source.line": ("file", "line"),
    "source.repo": (),
    "equation.title": (),
    "equation.plain": (),
    "snapshot.title": (),
    "snapshot.generation": ("prompt", "n", "step", "token"),
    "snapshot.loss": ("text", "n", "loss"),
    "snapshot.example_link": (),
    "stats.shape": (),
    "stats.dtype": (),
    "stats.min": (),
    "stats.max": (),
    "stats.mean": (),
    "stats.nonfinite": (),
    "stats.layer": (),
    "layer": ("layer",),
    "head": ("head",),
    "head.kv": ("head", "queries"),
    "table.corner": (),
    "table.corner.vocab": (),
    "table.more_cols": ("n",),
    "table.more_rows": ("n",),
    "table.scroll_hint": (),
    "table.vocab_cols": ("shown", "total"),
    "table.top_tokens": ("shown", "total"),
    "sampling.title": (),
    "sampling.intro": (),
    "sampling.temperature": (),
    "sampling.top_k": (),
    "heatmap.title": ("step", "where"),
    "heatmap.masked": (),
    "heatmap.nonfinite": (),
    "heatmap.scale_head": (),
    "heatmap.rows.token": (),
    "heatmap.rows.byte": (),
    "heatmap.cols.token": (),
    "heatmap.cols.vocab": (),
    "heatmap.cols.feature": (),
    "heatmap.cols.byte": (),
    "scalar.sample": ("token", "label"),
    "nav.previous": ("label",),
    "nav.next": ("label",),
    "nav.catalog": (),
    "catalog.title": (),
    "catalog.intro": (),
    "catalog.example": (),
    "catalog.model": ("d_model", "layers", "heads", "kv_heads", "d_ff", "vocab", "seed"),
    "catalog.generation": ("prompt", "generated", "tokens", "sampling"),
    "catalog.sampling.greedy": (),
    "catalog.sampling.random": ("seed", "temperature"),
    "catalog.loss": ("text", "loss"),
    "catalog.col.position": (),
    "catalog.col.id": (),
    "catalog.col.label": (),
    "catalog.col.equation": (),
    "catalog.col.shape": (),
    "catalog.col.runs": (),
    "runs.model": (),
    "runs.block": (),
    "runs.generation": (),
    "runs.training": (),
    "source.title": ("file",),
    "source.intro": ("file",),
    "source.steps": (),
    "source.no_steps": (),
    "replay.generation": (),
    "replay.loss": (),
    "replay.before": (),  # the untrained model's recording (docs_build/pages/replay.py)
    # the replay page's cached generation against the full recompute (pages/cache_check.py)
    "replay.cache_check": ("tokens", "probs", "logits", "attention"),
    "replay.cache_check_differs": ("tokens",),
    # the example's weights (catalog), the attention pages' featured heads and probe run,
    # and the model card page (docs_build/pages/model_card.py)
    "catalog.weights.random": ("seed",),
    "catalog.weights.checkpoint": ("model",),
    "head.previous_token": ("head",),
    "head.induction": ("head",),
    "featured.previous_token": ("layer", "head", "score"),
    "featured.induction": ("layer", "head", "score"),
    "probe.caption": ("length", "n", "previous", "induction"),
    "probe.heatmap_title": ("step", "where"),
    "card.model": (),
    "card.source.random": ("seed",),
    "card.source.checkpoint": ("model",),
    "card.sizes": ("d_model", "layers", "heads", "kv_heads", "d_ff", "vocab", "max_len",
                   "parameters"),
    "card.none": (),
    "card.corpus": (),
    "card.in_english": (),
    "card.license": (),
    "card.mix.part": (),
    "card.mix.share": (),
    **{f"card.part.{name}": () for name in (
        "wordnet_examples", "wordnet_definitions", "austen", "grammar", "copying",
        "permutation_chains")},
    "card.sources": (),
    "card.sources.intro": (),
    "card.sources.name": (),
    "card.sources.package": (),
    "card.sources.size": (),
    "card.sources.bytes": ("bytes", "lines"),
    "card.sources.sha256": (),
    "card.explain": (),
    "card.explain.losses": ("train", "every", "heldout", "sentences", "copy_first", "ln95"),
    "card.explain.copy_share": ("share",),
    "card.explain.mix": ("switch", "circuits", "english"),
    "card.explain.limits": ("max_len", "parameters"),
    "card.training": (),
    "card.setting": (),
    "card.value": (),
    **{f"card.training.{key}": () for key in (
        "steps", "batch_size", "seq_len", "lr", "min_lr", "warmup", "schedule", "optimizer",
        "betas", "weight_decay", "grad_clip", "init_std", "seed", "seconds", "torch",
        "transformers", "threads", "attn_implementation", "deterministic", "command")},
    "card.curve": (),
    "card.curve.title": (),
    "card.curve.x": (),
    "card.curve.y_loss": (),
    "card.curve.y_score": (),
    "card.curve.train_loss": (),
    "card.curve.heldout_loss": (),
    "card.curve.previous_token": (),
    "card.curve.induction": (),
    "card.curve.caption": ("step",),
    "card.curve.caption_none": (),
    "card.curve.data": (),
    "card.measured": (),
    "card.measured.intro": ("before",),
    "card.before.record": ("folder",),
    "card.before.random": (),
    "card.measure": (),
    "card.measure.model": (),
    "card.measure.untrained": (),
    "card.measure.card": (),
    "card.measure.heldout": ("bytes", "window"),
    "card.measure.loss_text": ("text",),
    "card.measure.copy_first": ("length",),
    "card.measure.copy_second": ("length",),
    "card.measure.copy_ratio": ("length",),
    "card.no_heldout": (),
    "card.heads": (),
    "card.heads.intro": ("length", "n"),
    "card.heads.best": ("prev_layer", "prev_head", "prev_score", "induction_layer",
                        "induction_head", "induction_score"),
    "card.heads.layer": (),
    "card.heads.head": (),
    "card.heads.previous_token": (),
    "card.heads.induction": (),
    "card.heads.untrained_previous_token": (),
    "card.heads.untrained_induction": (),
    # the time-lapse of training (docs_build/html/timelapse.py)
    "timelapse.title": (),
    "timelapse.intro": ('count', 'last', 'n'),
    "timelapse.head.previous_token": ('layer', 'head'),
    "timelapse.head.induction": ('layer', 'head'),
    "timelapse.never": ('head', 'last'),
    "timelapse.from_start": ('head', 'low'),
    "timelapse.formed": ('head', 'step', 'low', 'last', 'jump_from', 'jump_start', 'jump_to', 'jump_end'),
    "timelapse.legend.previous_token": ('layer', 'head'),
    "timelapse.legend.induction": ('layer', 'head'),
    "timelapse.phases": ('first', 'then', 'step', 'start', 'low', 'low_step', 'rebound', 'last'),
    "timelapse.phases_plain": ('first', 'then', 'step', 'start', 'at_switch', 'last'),
    "timelapse.phase.circuits": (),
    "timelapse.phase.english": (),
    "timelapse.formed_mark": ('head', 'step'),
    "timelapse.chart": (),
    "timelapse.x": (),
    "timelapse.train_loss": (),
    "timelapse.heldout_loss": (),
    "timelapse.phase": (),
    "timelapse.copy_ratio": (),
    "timelapse.forms": (),
    "timelapse.frame": ('head', 'step', 'score'),
    "timelapse.play": (),
    "timelapse.pause": (),
    "timelapse.slider": (),
    "timelapse.step": ('step',),
    "timelapse.caption": ('n',),
    "timelapse.data": (),
    "timelapse.card_link": (),
    "card.continuations": (),
    "card.continuations.intro": (),
    "card.continuations.prompt": (),
    "card.continuations.text": (),
    "map.title": (),
    "map.description": ("n", "d", "layers", "heads", "kv_heads", "head_dim", "d_ff", "vocab"),
    "map.stream": (),
    "map.block": ("layers",),
    "map.repeat": ("layers",),
    # the K/V cache box of the replay page's map (html/model_map.py, kv_cache)
    "map.cache": (),
    "map.cache_description": ("n", "d", "layers", "heads", "kv_heads", "head_dim", "d_ff",
                              "vocab"),
    # the worked example of the step pages (docs_build/data/worked.py and html/worked.py)
    "worked.title": (),
    "worked.check": (),
    "worked.col.entry": (),
    "worked.col.hand": (),
    "worked.col.snapshot": (),
    "worked.where.layer": ("layer",),
    "worked.where.head": ("head",),
    "worked.where.row": ("i", "token"),
    "worked.embed": ("i", "token", "id"),
    "worked.rmsnorm": ("where", "d", "c"),
    "worked.head_projection": ("where", "c", "i", "row"),
    "worked.rope": ("where", "c", "pair", "i"),
    "worked.scores": ("where", "j", "key", "head", "g"),
    "worked.mask": ("where", "fi", "fj"),
    "worked.softmax": ("where", "i", "max", "j"),
    "worked.context": ("where", "c", "i", "g"),
    "worked.out": ("where", "c", "dh"),
    "worked.residual": ("where", "c"),
    "worked.mlp_projection": ("where", "c"),
    "worked.act": ("where", "c"),
    "worked.logits": ("i", "v", "chosen"),
    "worked.probs": ("chosen", "v", "other", "w"),
    "worked.sample": ("draw", "seed", "token", "id", "n"),
    "worked.sample.interval": ("token", "id", "n"),
    "worked.sample.greedy": ("n", "token", "id"),
    "worked.loss": ("i", "token", "target", "n"),
    "worked.grad": ("where", "target", "y", "other", "w"),
    # the browser runtime (docs_build/runtime, docs_build/assets/runtime): window.glassllm's
    # messages and the run panel's words (build.js carries them to every page)
    "runtime.text_label": (),
    "runtime.button": ("mb",),
    "runtime.run": (),
    "runtime.cancel": (),
    "runtime.progress_label": (),
    "runtime.stage_download": ("percent",),
    "runtime.stage_start": (),
    "runtime.stage_packages": (),
    "runtime.stage_model": (),
    "runtime.stage_ready": (),
    "runtime.running": (),
    "runtime.cancelled": (),
    "runtime.cancelled_error": (),
    "runtime.engine_error": ("message",),
    "runtime.failed": ("message",),
    "runtime.no_worker": (),
    "runtime.file_protocol": (),
    "runtime.version": ("version", "commit"),
    "runtime.version_modified": ("version", "commit"),
    "runtime.version_unknown": ("version",),
    "runtime.result_tokens": ("n",),
    "runtime.result_next": (),
    "runtime.result_records": ("count", "ms"),
}


def ui_path(docs_dir: Path, lang: Language) -> Path:
    return Path(docs_dir) / TEXTS_DIRNAME / lang.code / "ui.yml"


def load_ui(docs_dir: Path, lang: Language) -> dict[str, str]:
    """The UI strings of one language, checked against ``UI_KEYS``."""
    path = ui_path(docs_dir, lang)
    if not path.is_file():
        raise DocsBuildError(f"missing {path}: write the {lang.code!r} UI strings of the "
                             f"generated pages there (copy docs/_texts/en/ui.yml and translate)")
    try:
        data = yaml.safe_load(read_text(path))
    except yaml.YAMLError as error:
        raise DocsBuildError(f"{path}{yaml_problem(error)}; fix that line (each line is "
                             f"'key: text', as in docs/_texts/en/ui.yml)") from error
    if not isinstance(data, dict):
        raise DocsBuildError(f"{path} must be a mapping of UI keys to strings")
    missing = [key for key in UI_KEYS if not isinstance(data.get(key), str) or not data[key]]
    if missing:
        raise DocsBuildError(f"{path} lacks the string(s) {', '.join(missing)}; add them "
                             f"(see docs/_texts/en/ui.yml for their meaning)")
    for key, allowed in UI_KEYS.items():
        _check_placeholders(path, key, data[key], allowed)
    return {key: data[key] for key in UI_KEYS}


def _check_placeholders(path: Path, key: str, text: str, allowed: tuple[str, ...]) -> None:
    """Only bare ``{name}`` placeholders of ``allowed``: checked before anything is formatted.

    A format spec or conversion (``{layer:>99999999}``, ``{layer!r}``) is refused, not run:
    the plugin formats every value itself, and a huge width would exhaust the memory.
    """
    hint = ", ".join("{" + a + "}" for a in allowed) or "none"
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion
                  in string.Formatter().parse(text) if name is not None]
    except ValueError as error:
        raise DocsBuildError(f"{path}: {key}: {error} (write literal braces as {{{{ }}}})")
    for name, spec, conversion in fields:
        if spec or conversion:
            written = ("{" + name + (f"!{conversion}" if conversion else "")
                       + (f":{spec}" if spec else "") + "}")
            raise DocsBuildError(f"{path}: {key}: the placeholder {written} has a format spec or "
                                 f"conversion; write {{{name}}} (the plugin formats the value)")
    unknown = sorted({name for name, _, _ in fields} - set(allowed))
    if unknown:
        raise DocsBuildError(f"{path}: {key} uses unknown placeholder(s) "
                             f"{', '.join('{' + u + '}' for u in unknown)}; it may use {hint}")
