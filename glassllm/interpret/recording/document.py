"""What both versions share: the document (version 1) or index (version 2) that holds a
recording's every part but its arrays, written and checked here against its model's Config.
Its JSON is parsed only after ``glassllm.safe_json`` has bounded nesting and numbers."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

from ...files import safe_json
from ...backward import GRADS
from ...files.checkpoint import tensor_shapes
from ...config import Config
from ...steps import HEAD_STEPS, LAYER_STEPS, STEPS, scan_markers
from ...text.tokenizer import BYTE_VOCAB_SIZE, decode
from .arrays import is_count, short
from .events import (AXES, KIND_STEPS, RECORDING_KINDS, Event, Pass, Recording,
                     expected_shape)

FORMAT = "glassllm.recording"
VERSION = 2  # the newest version this module reads; it writes version 2 (binary)
JSON_VERSION = 1  # the JSON format, still read and written for ".json" files

# Upper bounds a reader checks before building anything from a file.
MAX_SIZE = 2**31 - 1  # any Config size: the sampled token is stored as int32
MAX_DEPTH = 32  # the format nests 4 levels; Python's parser fails near 1000
MAX_NUMBER_CHARS = 64  # a float32 written by repr takes at most 24
MAX_UPDATE_ENTRIES = 64  # sampled weights per parameter in a training recording's update
_SIZES = ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "max_len", "d_ff")
HINT = 'record one with: python -m glassllm record "some text" --tokens 8 --out run.glrec'


def steps_table(step_ids, grads: bool = False) -> dict:
    """Equation, axes and source line of each step that occurs, so a file is self-contained;
    with ``grads`` (a training recording) also each step's backward rule
    (``glassllm.backward.GRADS``) as ``grad_latex`` and ``grad_plain``."""
    markers = scan_markers()
    table = {}
    for step_id in step_ids:
        info = STEPS[step_id]
        entry = {"latex": info.latex, "plain": info.plain, "axes": list(AXES[step_id]),
                 "heads": step_id in HEAD_STEPS}
        if step_id in markers:
            entry["source"] = dict(markers[step_id])
        if grads:
            entry["grad_latex"], entry["grad_plain"] = GRADS[step_id].latex, GRADS[step_id].plain
        table[step_id] = entry
    return table


def _token_part(rec: Recording, tokens: list[int]) -> dict:
    """Tokens and their text; with a checkpoint's tokenizer also ``strings``, how each token
    reads (byte tokens need none: each is one byte). Without a tokenizer, a model whose
    vocabulary is larger than the bytes (random weights of a real model's shape) produces
    IDs no text stands for: those have no ``text`` (the readers never need it)."""
    if rec.tokenizer is None:
        if any(t >= BYTE_VOCAB_SIZE for t in tokens):
            return {"tokens": tokens}
        return {"tokens": tokens, "text": decode(tokens)}
    return {"tokens": tokens, "text": rec.tokenizer.decode(tokens),
            "strings": rec.tokenizer.strings(tokens)}


def document(rec: Recording, version: int) -> dict:
    """Everything of a recording but its events (both versions share it)."""
    step_ids = list(dict.fromkeys(e.step for e in rec.events))
    doc = {
        "format": FORMAT, "version": version, "kind": rec.kind,
        "config": rec.config,
        "prompt": _token_part(rec, rec.prompt),
    }
    if rec.kind == "generation":
        doc["generated"] = _token_part(rec, rec.generated)
        doc["sampling"] = rec.sampling
        doc["cache"] = bool(rec.cache)
    else:
        doc["targets"] = _token_part(rec, rec.targets)
        doc["loss"] = rec.loss
    if rec.kind == "training":
        if rec.update is None:
            raise ValueError("a training recording needs its update (capture.record_training)")
        doc["update"] = rec.update
    doc["events_per_pass"] = rec.events_per_pass()
    doc["steps"] = steps_table(step_ids, grads=rec.kind == "training")
    return doc


def event_place(e: Event) -> dict:
    item = {"step": e.step, "layer": e.layer, "order": e.order}
    if e.gen is not None:
        item["gen"] = e.gen
    if e.head is not None:
        item["head"] = e.head
    if e.grad:
        item["grad"] = True
    return item


def json_text(doc) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _tokens(doc: dict, key: str, where: str, vocab: int) -> list[int]:
    part = doc.get(key)
    tokens = part.get("tokens") if isinstance(part, dict) else None
    if (not isinstance(tokens, list)
            or not all(is_count(t) and t < vocab for t in tokens)):
        raise ValueError(f"{where}: '{key}.tokens' must be a list of token IDs in [0, {vocab})")
    return tokens


def _config(doc: dict, where: str) -> Config:
    config = doc.get("config")
    if not isinstance(config, dict):
        raise ValueError(f"{where}: 'config' must be an object with the model's Config fields")
    try:
        cfg = Config(**config)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: 'config' is not a valid glassllm Config ({err})") from None
    for name in _SIZES:
        if getattr(cfg, name) > MAX_SIZE:
            raise ValueError(f"{where}: 'config.{name}' is {getattr(cfg, name)}, above "
                             f"{MAX_SIZE}: no recording can hold a model that size")
    for name in ("rope_theta", "norm_eps"):
        if not math.isfinite(getattr(cfg, name)):
            raise ValueError(f"{where}: 'config.{name}' must be a finite number")
    return cfg


def event_place_checked(item, at: str, kind: str, cfg: Config, passes: list[Pass],
                         per_pass: int) -> tuple[str, dict, tuple[int, ...]]:
    """An event's step, indices and shape, checked against the model and the run (both
    versions): ``(step, {"layer", "order", "gen", "head"}, shape)``."""
    step = item.get("step") if isinstance(item, dict) else None
    if not isinstance(step, str) or step not in STEPS:
        raise ValueError(f"{at} must name a step of glassllm.STEPS in 'step'")
    if step not in KIND_STEPS[kind]:
        raise ValueError(f"{at}: step {step!r} does not occur in a {kind} recording")
    ints = {}
    for key in ("layer", "order", "gen", "head"):
        value = item.get(key)
        if value is not None and not is_count(value):
            raise ValueError(f"{at}: '{key}' must be a non-negative integer or absent")
        ints[key] = value
    layer, head, gen = ints["layer"], ints["head"], ints["gen"]
    if ints["order"] is None or ints["order"] >= per_pass:
        raise ValueError(f"{at}: 'order' must be the event's position in its pass, "
                         f"0 to {per_pass - 1}")
    if step in LAYER_STEPS and (layer is None or layer >= cfg.n_layers):
        raise ValueError(f"{at}: {step} runs in every block, so 'layer' must be 0 to "
                         f"{cfg.n_layers - 1}")
    if step not in LAYER_STEPS and layer is not None:
        raise ValueError(f"{at}: {step} runs outside the blocks, so it has no 'layer'")
    if kind == "generation" and (gen is None or gen >= len(passes)):
        raise ValueError(f"{at}: every event of a generation recording needs 'gen', the "
                         f"index of its generation step, 0 to {len(passes) - 1}")
    if kind != "generation" and gen is not None:
        raise ValueError(f"{at}: a {kind} recording has one pass, so events have no 'gen'")
    run = passes[gen or 0]
    shape = expected_shape(step, cfg, run.tokens, run.keys)
    if head is not None:
        if step not in HEAD_STEPS or head >= shape[0]:
            raise ValueError(f"{at}: 'head' is only for head steps, 0 to the number of "
                             f"heads - 1")
        shape = shape[1:]
    given = item.get("shape")
    # integers, as JSON writes them: 2.0 and true are not sizes (JSON.parse cannot tell
    # 2.0 from 2, so the page's reader refuses them from the text)
    if (not isinstance(given, list) or len(given) != len(shape)
            or not all(is_count(size) and size == needed for size, needed in zip(given, shape))):
        raise ValueError(f"{at}: {step} has shape {short(given)}, but this model and run give "
                         f"it shape {list(shape)}")
    return step, ints, shape


def checked_document(doc, where: str, version: int) -> tuple[Recording, list[Pass], list]:
    """The checks both versions share, on the parsed JSON document (v1) or index (v2):
    ``(recording without events, what each pass computed, the raw event list)``."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{where} is not a glassllm recording (it has no \"format\": "
                         f"\"{FORMAT}\" field); {HINT}")
    given = doc.get("version")
    if not is_count(given) or given < 1:
        raise ValueError(f"{where}: 'version' must be a positive integer; {HINT}")
    if given > VERSION:
        raise ValueError(f"{where} is a version {given} recording but this glassllm reads "
                         f"versions up to {VERSION}; upgrade glassllm or record the run again")
    if given != version:
        raise ValueError(f"{where}: 'version' is {given}, but version {given} recordings are "
                         + ("binary files (*.glrec), not JSON" if given == VERSION else
                            "JSON, not binary files")
                         + "; the file was damaged or edited — record it again")
    kind = doc.get("kind")
    if kind not in RECORDING_KINDS:
        raise ValueError(f"{where}: 'kind' must be one of {', '.join(RECORDING_KINDS)}, "
                         f"got {short(kind)}")
    cfg = _config(doc, where)
    vocab = cfg.vocab_size
    prompt = _tokens(doc, "prompt", where, vocab)
    if not prompt:
        raise ValueError(f"{where}: 'prompt.tokens' is empty; a run needs at least one token")
    rec = Recording(kind=kind, config=asdict(cfg), prompt=prompt, events=[])
    if kind == "generation":
        rec.generated = _tokens(doc, "generated", where, vocab)
        if not rec.generated:
            raise ValueError(f"{where}: 'generated.tokens' is empty; a generation recording "
                             f"has at least one generated token")
        rec.sampling = doc.get("sampling")
        # absent in the files written before cached recordings: each step recomputed all
        cache = doc.get("cache", False)
        if not isinstance(cache, bool):
            raise ValueError(f"{where}: 'cache' must be true (generated with the KV cache: "
                             f"each step after the first computes one new position) or "
                             f"false (each step recomputes the whole sequence), got "
                             f"{short(cache)}")
        rec.cache = cache
    else:
        rec.targets = _tokens(doc, "targets", where, vocab)
        if len(rec.targets) != len(prompt):
            raise ValueError(f"{where}: 'targets.tokens' needs one target per input token "
                             f"({len(prompt)}), it has {len(rec.targets)}")
        loss = doc.get("loss")
        if (isinstance(loss, bool) or not isinstance(loss, (int, float))
                or not math.isfinite(loss)):
            raise ValueError(f"{where}: 'loss' must be a finite number")
        rec.loss = float(loss)
    passes = rec.passes()
    if passes[-1].keys > cfg.max_len:
        raise ValueError(f"{where}: its last pass reads {passes[-1].keys} tokens, more than "
                         f"config.max_len ({cfg.max_len})")
    raw_events = doc.get("events")
    if not isinstance(raw_events, list):
        raise ValueError(f"{where}: 'events' must be a list of snapshots")
    expected = rec.event_count()
    if len(raw_events) != expected:
        raise ValueError(f"{where}: has {len(raw_events)} events but a {kind} recording of "
                         f"this model needs {expected} (18*L + 5 per pass"
                         + (", then the gradient of each" if kind == "training" else "")
                         + "); the file is truncated or was edited — record it again")
    _check_gradient_events(raw_events, rec.events_per_pass(), kind, where)
    if kind == "training":
        rec.update = _checked_update(doc.get("update"), cfg, f"{where}: 'update'")
    elif "update" in doc:
        raise ValueError(f"{where}: only a training recording has an 'update'")
    return rec, passes, raw_events


def _check_gradient_events(raw_events: list, per_pass: int, kind: str, where: str) -> None:
    """A training recording holds its forward's events, then their gradients (``"grad":
    true``) in the reverse order: gradient ``per_pass + i`` is of forward event ``per_pass - 1
    - i``, with the same step, layer and head. No other recording has a gradient."""
    for i, item in enumerate(raw_events):
        grad = item.get("grad", False) if isinstance(item, dict) else False
        wanted = kind == "training" and i >= per_pass
        if grad is not wanted:
            raise ValueError(f"{where}: events[{i}]: " + (
                "'grad' must be true: a training recording's events after its forward are "
                "the gradients" if wanted else
                "'grad' is only for the gradients of a training recording, after its forward"))
        if wanted:
            mirror = raw_events[2 * per_pass - 1 - i]
            if not isinstance(mirror, dict) or any(item.get(key) != mirror.get(key) for key in ("step", "layer", "head")):
                raise ValueError(f"{where}: events[{i}] is a gradient, so it must have the step, "
                                 f"layer and head of events[{2 * per_pass - 1 - i}], the forward "
                                 f"event it is the gradient of (the backward runs in reverse)")


def _number(value, at: str, low: float = -math.inf) -> float:
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < low):
        raise ValueError(f"{at} must be a finite number" + (f" ≥ {low:g}" if low > -math.inf
                                                              else ""))
    return float(value)


def _checked_update(update, cfg: Config, at: str) -> dict:
    """A training recording's ``update`` (``capture.update_section``): the optimiser's settings,
    its step count and the loss after it, then every parameter of the model in
    ``state_dict()`` order with its sampled entries (index, before, grad, m, v, after)."""
    if not isinstance(update, dict):
        raise ValueError(f"{at} must be an object: the optimiser's update of every parameter")
    if update.get("optimizer") != "AdamW":
        raise ValueError(f"{at}.optimizer must be \"AdamW\", got {short(update.get('optimizer'))}")
    out = {"optimizer": "AdamW"}
    for key, low in (("lr", 0.0), ("beta1", 0.0), ("beta2", 0.0), ("eps", 0.0),
                     ("loss_after", -math.inf)):
        out[key] = _number(update.get(key), f"{at}.{key}", low)
    if not is_count(update.get("step")) or update["step"] < 1:
        raise ValueError(f"{at}.step must be the optimiser's step count, 1 or more")
    out["step"] = update["step"]
    params = update.get("params")
    shapes_count = 9 * cfg.n_layers + 2 + (not cfg.tie_word_embeddings)
    if not isinstance(params, list) or len(params) != shapes_count:
        raise ValueError(f"{at}.params must list the model's {shapes_count} parameters in "
                         f"state_dict() order")
    out["params"] = []
    for (name, dims), param in zip(tensor_shapes(cfg).items(), params):
        where = f"{at}.params[{len(out['params'])}]"
        shape = [size for size, _ in dims]
        if not isinstance(param, dict) or param.get("name") != name:
            raise ValueError(f"{where}: expected parameter {name!r} (state_dict() order)")
        given = param.get("shape")
        if (not isinstance(given, list) or len(given) != len(shape)
                or not all(is_count(a) and a == b for a, b in zip(given, shape))):
            raise ValueError(f"{where}: {name} has shape {shape} in this model, the file says "
                             f"{short(param.get('shape'))}")
        checked = {"name": name, "shape": shape}
        for key in ("weight_decay", "grad_norm", "change_norm"):
            checked[key] = _number(param.get(key), f"{where}.{key}", 0.0)
        entries = param.get("entries")
        if (not isinstance(entries, list)
                or not 1 <= len(entries) <= min(MAX_UPDATE_ENTRIES, math.prod(shape))):
            raise ValueError(f"{where}.entries must list 1 to {MAX_UPDATE_ENTRIES} sampled "
                             f"weights of {name}")
        checked["entries"] = []
        for k, entry in enumerate(entries):
            here = f"{where}.entries[{k}]"
            index = entry.get("index") if isinstance(entry, dict) else None
            if (not isinstance(index, list) or len(index) != len(shape)
                    or not all(is_count(i) and i < size for i, size in zip(index, shape))):
                raise ValueError(f"{here}.index must be an index into {name}'s shape {shape}")
            checked["entries"].append(
                {"index": index, **{key: _number(entry.get(key), f"{here}.{key}",
                                                 0.0 if key == "v" else -math.inf)
                                    for key in UPDATE_VALUES}})
        out["params"].append(checked)
    return out


# what a training recording keeps of each sampled weight: its value before the update, its
# gradient, the optimiser's two moments after the update, and its value after
UPDATE_VALUES = ("before", "grad", "m", "v", "after")


def parse_json(text: str, where: str):
    try:
        return safe_json.loads(text, where, MAX_DEPTH, MAX_NUMBER_CHARS, "a recording")
    except safe_json.NotJSON as err:
        raise ValueError(f"{where} is not a glassllm recording: it is {err}; {HINT}") from None
