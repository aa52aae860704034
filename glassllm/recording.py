"""Recordings: a traced run saved to a file, for the slow-motion replay page to play back.

A recording holds every snapshot of a run in the order the tracer took it. Two kinds exist:

- ``"generation"``: a prompt and ``n`` generated tokens; each generation step is one full
  forward pass over the sequence so far plus ``probs`` and ``sample``, so ``18*L + 5``
  events per token, tagged with the step's index ``gen``.
- ``"loss"``: one traced ``GlassLM.loss`` call: ``18*L + 3`` forward events plus ``loss``
  and ``loss.grad``.

Two formats hold the same recording; ``write_recording`` picks one from the file's suffix
and the readers tell them apart by content:

- **Version 2, binary** (``.glrec``, ``BINARY_SUFFIX``): for real-size runs. The file is
  ``MAGIC`` (8 bytes), the version and the byte length of the index (two little-endian
  uint32), the index (UTF-8 JSON, ``"version": 2``), zero padding to a multiple of
  ``ALIGN`` bytes, then the arrays' raw little-endian bytes. The index holds everything
  but the arrays; each event gives ``dtype``, ``shape``, ``offset`` (from the start of the
  data, a multiple of ``ALIGN`` so a browser can view the bytes as a typed array without
  copying) and ``length``. Events' bytes come in event order without overlapping, so the
  values a file claims never exceed the bytes it holds. Arrays are float32 by default
  (the tracer's own values, exactly) or float16 on request (half the size; ±inf, NaN and
  -0 kept exactly; a finite value beyond float16's range, |x| > 65504, is refused rather
  than written as a misleading inf); the sampled token is int32. The replay page reads
  the index first and decodes an event only when it is shown.
- **Version 1, JSON** (``.json``): one JSON document whose arrays are
  ``{"shape": [...], "dtype": "float32", "data": <base64>}`` — the raw little-endian
  float32 bytes (int32 for the sampled token). Base64 keeps the values exact, with
  ``-inf``, ``+inf`` and ``NaN`` as their IEEE bit patterns (Python's ``json`` would write
  bare ``-Infinity``, which ``JSON.parse`` rejects); everything else is plain JSON written
  with ``allow_nan=False``. About 5.3 bytes per value, so only for small runs.

A run of a checkpoint with its own tokenizer (``record --model DIR``) also gives
``prompt``, ``generated`` and ``targets`` a ``"strings"`` list: how each token reads (byte
tokens need none).

Reading (``loads``, ``read_recording``, ``from_json``) checks the whole index against its
model's Config before decoding an array — each event's step, layer, head, generation step
and shape, and in version 2 each byte range against the file — and bounds sizes, nesting
and number length, so a file cannot make a reader allocate more than it holds. The
replay page's reader (``docs_build/assets/replay-format.js``) accepts exactly the same
files: both are tested on ``tests/fixtures/recordings``.

    rec = record_generation(GlassLM(cfg), encode("Hello"), 6, seed=0)
    write_recording(rec, "run.glrec")                    # or dtype="float16", or "run.json"
    again = read_recording("run.glrec")  # ValueError with a hint if it is not a recording
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import re
import struct
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from . import safe_json
from .model import Config, GlassLM
from .steps import HEAD_STEPS, LAYER_STEPS, STEPS, scan_markers
from .tokenizer import BYTE_VOCAB_SIZE, decode
from .trace import Tracer

if TYPE_CHECKING:
    from .hf_tokenizer import CheckpointTokenizer

FORMAT = "glassllm.recording"
VERSION = 2  # the newest version this module reads; it writes version 2 (binary)
JSON_VERSION = 1  # the JSON format, still read and written for ".json" files
BINARY_SUFFIX = ".glrec"
JSON_SUFFIX = ".json"
# 0x89 first: no text file starts with it (in UTF-8 it is a continuation byte); the CR LF
# shows a transfer that rewrote line endings, as in PNG's signature
MAGIC = b"\x89GLREC\r\n"
_HEADER = struct.Struct("<8sII")  # MAGIC, version, index length in bytes
HEADER_BYTES = _HEADER.size
ALIGN = 8  # the data and every array in it start at multiples of 8 bytes
FLOAT16_MAX = 65504.0
KINDS = ("generation", "loss")

# The meaning of each axis of a snapshot, so a viewer can label rows and columns (a "token"
# axis is labelled with the token at that position; "query"/"key" are token axes too).
AXES: dict[str, tuple[str, ...]] = {
    "embed": ("token", "feature"),
    "attn.norm": ("token", "feature"),
    "attn.q": ("head", "token", "dim"),
    "attn.k": ("kv_head", "token", "dim"),
    "attn.v": ("kv_head", "token", "dim"),
    "attn.q_rope": ("head", "token", "dim"),
    "attn.k_rope": ("kv_head", "token", "dim"),
    "attn.scores": ("head", "query", "key"),
    "attn.mask": ("head", "query", "key"),
    "attn.softmax": ("head", "query", "key"),
    "attn.context": ("head", "token", "dim"),
    "attn.out": ("token", "feature"),
    "attn.residual": ("token", "feature"),
    "mlp.norm": ("token", "feature"),
    "mlp.gate": ("token", "hidden"),
    "mlp.up": ("token", "hidden"),
    "mlp.act": ("token", "hidden"),
    "mlp.down": ("token", "feature"),
    "mlp.residual": ("token", "feature"),
    "final_norm": ("token", "feature"),
    "logits": ("token", "vocab"),
    "probs": ("vocab",),
    "sample": (),
    "loss": (),
    "loss.grad": ("token", "vocab"),
}

# What each kind of recording can hold: no generation run includes the loss (SPEC 4).
KIND_STEPS: dict[str, frozenset[str]] = {
    "generation": frozenset(STEPS) - {"loss", "loss.grad"},
    "loss": frozenset(STEPS) - {"probs", "sample"},
}

# Upper bounds a reader checks before building anything from a file.
MAX_SIZE = 2**31 - 1  # any Config size: the sampled token is stored as int32
MAX_AXES = 32
MAX_DEPTH = 32  # the format nests 4 levels; Python's parser fails near 1000
MAX_NUMBER_CHARS = 64  # a float32 written by repr takes at most 24
_SIZES = ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "max_len", "d_ff")

_DTYPES = {"float32": np.dtype("<f4"), "int32": np.dtype("<i4")}
# what version 2 stores; the readers hand float16 values on as float32 (exactly)
_BINARY_DTYPES = {**_DTYPES, "float16": np.dtype("<f2")}
FLOAT_DTYPES = ("float32", "float16")
_HINT = 'record one with: python -m glassllm record "some text" --tokens 8 --out run.glrec'


@dataclass(frozen=True)
class Event:
    """One snapshot of the run: step ``step`` (in block ``layer``) taken at position ``order``
    of its tracer, during generation step ``gen`` (``None`` in a loss recording)."""

    step: str
    layer: int | None
    value: np.ndarray
    order: int
    gen: int | None = None
    head: int | None = None


@dataclass
class Recording:
    kind: str                      # "generation" or "loss"
    config: dict                   # the model's Config as a dict (d_ff resolved)
    prompt: list[int]              # generation: the prompt; loss: the input tokens
    events: list[Event]
    generated: list[int] = field(default_factory=list)   # generation: the new tokens
    sampling: dict | None = None   # generation: greedy, temperature, top_k, seed
    targets: list[int] = field(default_factory=list)     # loss: one target per position
    loss: float | None = None      # loss: the value GlassLM.loss returned
    # the checkpoint's tokenizer (glassllm.hf_tokenizer); None: byte tokens
    tokenizer: "CheckpointTokenizer | None" = None

    def events_per_pass(self) -> int:
        """Events of one generation step (or of the whole loss run): 18*L + 5."""
        return len(LAYER_STEPS) * int(self.config["n_layers"]) + 5


# -- recording a run ------------------------------------------------------------------------

def record_generation(model: GlassLM, prompt: Sequence[int], n_tokens: int, *,
                      greedy: bool = False, temperature: float = 1.0,
                      top_k: int | None = None, seed: int | None = 0,
                      on_step: Callable[[int], None] | None = None,
                      tokenizer: "CheckpointTokenizer | None" = None) -> Recording:
    """Generate ``n_tokens`` tokens after ``prompt`` with tracing on, keeping every event.

    ``on_step(done)`` is called after each generation step (the command line's progress)."""
    prompt = [int(t) for t in prompt]
    events: list[Event] = []
    generated: list[int] = []
    steps = model.generate(prompt, n_tokens, greedy=greedy, temperature=temperature,
                           top_k=top_k, seed=seed, trace=True, cache=False)
    for gen, step in enumerate(steps):
        events.extend(Event(r.id, r.layer, r.value, r.order, gen, r.head)
                      for r in step.trace.records)
        generated.append(int(step.token))
        if on_step is not None:
            on_step(gen + 1)
    return Recording(kind="generation", config=asdict(model.config), prompt=prompt,
                     events=events, generated=generated, tokenizer=tokenizer,
                     sampling={"greedy": bool(greedy),
                               "temperature": None if greedy else float(temperature),
                               # Python ints: NumPy's are not JSON (generate has checked them)
                               "top_k": None if top_k is None else int(top_k),
                               "seed": None if seed is None else int(seed)})


def record_loss(model: GlassLM, tokens: Sequence[int], targets: Sequence[int] | None = None,
                tokenizer: "CheckpointTokenizer | None" = None) -> Recording:
    """Trace ``model.loss``; without ``targets`` the text predicts itself shifted by one
    (inputs ``tokens[:-1]``, targets ``tokens[1:]``)."""
    tokens = [int(t) for t in tokens]
    if targets is None:
        if len(tokens) < 2:
            raise ValueError("a loss recording needs at least 2 tokens of text: each "
                             "position predicts the next one; give a longer text")
        tokens, targets = tokens[:-1], tokens[1:]
    targets = [int(t) for t in targets]
    tracer = Tracer()
    loss = model.loss(tokens, targets, trace=tracer)
    events = [Event(r.id, r.layer, r.value, r.order, None, r.head) for r in tracer.records]
    return Recording(kind="loss", config=asdict(model.config), prompt=tokens, events=events,
                     targets=targets, loss=float(loss), tokenizer=tokenizer)


# -- arrays <-> JSON --------------------------------------------------------------------------

def _stored(value, floats: str = "float32", where: str = "array") -> tuple[str, np.ndarray]:
    """The dtype name and little-endian contiguous array a recording stores for ``value``:
    integers as int32, floats as ``floats`` (float32 or, in version 2, float16)."""
    array = np.asarray(value)
    if array.dtype.kind in "iub":
        info = np.iinfo(np.int32)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise ValueError(f"integer snapshot does not fit int32 (range {array.min()}.."
                             f"{array.max()}); recordings store integers as int32")
        name = "int32"
    elif array.dtype.kind == "f":
        name = floats
    else:
        raise ValueError(f"cannot record an array of dtype {array.dtype}; "
                         f"recordings hold float or integer snapshots")
    # astype, not ascontiguousarray, which turns the 0-d sampled token into shape (1,); an
    # overflow to float16's inf is looked for below, not warned about
    with np.errstate(over="ignore"):
        stored = array.astype(_BINARY_DTYPES[name], order="C", copy=False)
    if name == "float16":
        # NaN and ±inf stay themselves; only a finite value can turn into a false inf
        over = np.isinf(stored) & np.isfinite(array)
        if over.any():
            raise ValueError(f"{where}: {int(over.sum())} value(s) (largest magnitude "
                             f"{float(np.abs(array[over]).max()):g}) lie beyond float16's "
                             f"range (±{FLOAT16_MAX:g}) and would read as ±inf; write this "
                             f"recording in float32 (the default) instead")
    return name, stored


def encode_array(value) -> dict:
    """``{"shape", "dtype", "data"}``: float values as little-endian float32, integer values
    as int32, base64-encoded. Non-finite floats keep their exact IEEE bit patterns."""
    name, stored = _stored(value)
    return {"shape": list(stored.shape), "dtype": name,
            "data": base64.b64encode(stored.tobytes()).decode("ascii")}


_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def decode_array(obj, where: str = "array") -> np.ndarray:
    """The numpy array of an ``encode_array`` dict (native byte order, a fresh copy)."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object with shape, dtype and data")
    shape, name, data = obj.get("shape"), obj.get("dtype"), obj.get("data")
    if (not isinstance(shape, list) or len(shape) > MAX_AXES
            or not all(_is_count(s) for s in shape)):
        raise ValueError(f"{where}: 'shape' must be a list of at most {MAX_AXES} "
                         f"non-negative integers, got {_short(shape)}")
    if not isinstance(name, str) or name not in _DTYPES:
        raise ValueError(f"{where}: 'dtype' must be one of {', '.join(_DTYPES)}, "
                         f"got {_short(name)}")
    if not isinstance(data, str):
        raise ValueError(f"{where}: 'data' must be a base64 string")
    dtype = _DTYPES[name]
    # exact integer product: int64 would overflow on [2**70] and wrap [2**32, 2**32] to 0
    needed = math.prod(shape) * dtype.itemsize
    # the same alphabet and padding rules as the replay page's reader, on every Python
    if not _BASE64.fullmatch(data):
        raise ValueError(f"{where}: 'data' is not valid base64")
    size = len(data) // 4 * 3 - data[-2:].count("=")
    if size != needed:
        raise ValueError(f"{where}: 'data' holds {size} bytes but shape {shape} of "
                         f"{name} needs {needed}")
    raw = base64.b64decode(data, validate=True)
    return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def _short(value, limit: int = 80) -> str:
    """``repr`` cut to ``limit`` characters, for messages about values of any size."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


# -- recordings <-> JSON ----------------------------------------------------------------------

def _steps_table(step_ids) -> dict:
    """Equation, axes and source line of each step that occurs, so a file is self-contained."""
    markers = scan_markers()
    table = {}
    for step_id in step_ids:
        info = STEPS[step_id]
        entry = {"latex": info.latex, "plain": info.plain, "axes": list(AXES[step_id]),
                 "heads": step_id in HEAD_STEPS}
        if step_id in markers:
            entry["source"] = dict(markers[step_id])
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


def _document(rec: Recording, version: int) -> dict:
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
    else:
        doc["targets"] = _token_part(rec, rec.targets)
        doc["loss"] = rec.loss
    doc["events_per_pass"] = rec.events_per_pass()
    doc["steps"] = _steps_table(step_ids)
    return doc


def _event_place(e: Event) -> dict:
    item = {"step": e.step, "layer": e.layer, "order": e.order}
    if e.gen is not None:
        item["gen"] = e.gen
    if e.head is not None:
        item["head"] = e.head
    return item


def to_json(rec: Recording) -> dict:
    """The recording as a version 1 JSON-ready dict (see the module docstring)."""
    doc = _document(rec, JSON_VERSION)
    doc["events"] = [{**_event_place(e), **encode_array(e.value)} for e in rec.events]
    return doc


def _json_text(doc) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps(rec: Recording) -> str:
    """Compact, deterministic version 1 JSON text (no bare NaN/Infinity)."""
    return _json_text(to_json(rec))


def _align(size: int) -> int:
    return -size % ALIGN


def binary_parts(rec: Recording, dtype: str = "float32") -> list[bytes]:
    """The bytes of a version 2 file, in pieces to write one after the other (a
    SmolLM-sized run holds ~100 MB: joining would copy it once more). ``dtype``: how float
    arrays are stored, "float32" (exact) or "float16" (half the size; ValueError for a
    finite value beyond float16's range)."""
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(FLOAT_DTYPES)}, got {_short(dtype)}")
    doc = _document(rec, VERSION)
    items, arrays, position = [], [], 0
    for i, e in enumerate(rec.events):
        name, stored = _stored(e.value, dtype, f"events[{i}] ({e.step})")
        position += _align(position)
        items.append({**_event_place(e), "dtype": name, "shape": list(stored.shape),
                      "offset": position, "length": stored.nbytes})
        arrays.append((position, stored))
        position += stored.nbytes
    doc["events"] = items
    index = _json_text(doc).encode("utf-8")
    parts = [_HEADER.pack(MAGIC, VERSION, len(index)), index,
             bytes(_align(_HEADER.size + len(index)))]
    written = 0
    for offset, stored in arrays:
        parts.append(bytes(offset - written))
        parts.append(stored.tobytes())
        written = offset + stored.nbytes
    return parts


def dump_binary(rec: Recording, dtype: str = "float32") -> bytes:
    """The recording as one version 2 file's bytes (see the module docstring)."""
    return b"".join(binary_parts(rec, dtype))


def _tokens(doc: dict, key: str, where: str, vocab: int) -> list[int]:
    part = doc.get(key)
    tokens = part.get("tokens") if isinstance(part, dict) else None
    if (not isinstance(tokens, list)
            or not all(_is_count(t) and t < vocab for t in tokens)):
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


def expected_shape(step: str, cfg: Config, n: int) -> tuple[int, ...]:
    """The shape a snapshot of ``step`` has in a pass over ``n`` tokens of model ``cfg``."""
    sizes = {"token": n, "query": n, "key": n, "feature": cfg.d_model, "dim": cfg.head_dim,
             "hidden": cfg.d_ff, "vocab": cfg.vocab_size, "head": cfg.n_heads,
             "kv_head": cfg.n_kv_heads}
    return tuple(sizes[axis] for axis in AXES[step])


def _event_place_checked(item, at: str, kind: str, cfg: Config, passes: list[int],
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
        if value is not None and not _is_count(value):
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
    if kind == "loss" and gen is not None:
        raise ValueError(f"{at}: a loss recording has one pass, so events have no 'gen'")
    shape = expected_shape(step, cfg, passes[gen or 0])
    if head is not None:
        if step not in HEAD_STEPS or head >= shape[0]:
            raise ValueError(f"{at}: 'head' is only for head steps, 0 to the number of "
                             f"heads - 1")
        shape = shape[1:]
    if item.get("shape") != list(shape):
        raise ValueError(f"{at}: {step} has shape {_short(item.get('shape'))}, but this "
                         f"model and run give it shape {list(shape)}")
    return step, ints, shape


def _event(item, at: str, kind: str, cfg: Config, passes: list[int], per_pass: int) -> Event:
    """One checked version 1 event, its base64 array decoded."""
    step, ints, _ = _event_place_checked(item, at, kind, cfg, passes, per_pass)
    dtype = "int32" if step == "sample" else "float32"
    if item.get("dtype") != dtype:
        raise ValueError(f"{at}: 'dtype' of {step} must be {dtype}")
    return Event(step, ints["layer"], decode_array(item, at), ints["order"], ints["gen"],
                 ints["head"])


def _checked_document(doc, where: str, version: int) -> tuple[Recording, list[int], list]:
    """The checks both versions share, on the parsed JSON document (v1) or index (v2):
    ``(recording without events, tokens read by each pass, the raw event list)``."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{where} is not a glassllm recording (it has no \"format\": "
                         f"\"{FORMAT}\" field); {_HINT}")
    given = doc.get("version")
    if not _is_count(given) or given < 1:
        raise ValueError(f"{where}: 'version' must be a positive integer; {_HINT}")
    if given > VERSION:
        raise ValueError(f"{where} is a version {given} recording but this glassllm reads "
                         f"versions up to {VERSION}; upgrade glassllm or record the run again")
    if given != version:
        raise ValueError(f"{where}: 'version' is {given}, but version {given} recordings are "
                         + ("binary files (*.glrec), not JSON" if given == VERSION else
                            "JSON, not binary files")
                         + "; the file was damaged or edited — record it again")
    kind = doc.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{where}: 'kind' must be one of {', '.join(KINDS)}, got {_short(kind)}")
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
        passes = [len(prompt) + gen for gen in range(len(rec.generated))]
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
        passes = [len(prompt)]
    if passes[-1] > cfg.max_len:
        raise ValueError(f"{where}: its last pass reads {passes[-1]} tokens, more than "
                         f"config.max_len ({cfg.max_len})")
    raw_events = doc.get("events")
    if not isinstance(raw_events, list):
        raise ValueError(f"{where}: 'events' must be a list of snapshots")
    expected = rec.events_per_pass() * len(passes)
    if len(raw_events) != expected:
        raise ValueError(f"{where}: has {len(raw_events)} events but a {kind} recording of "
                         f"this model needs {expected} (18*L + 5 per pass); the file is "
                         f"truncated or was edited — record it again")
    return rec, passes, raw_events


def from_json(doc, where: str = "recording") -> Recording:
    """Check a parsed version 1 JSON document and turn it back into a ``Recording``.

    Everything is checked against the model's Config before any array is decoded: each
    event's step, layer, head and generation step, and its shape against the shape that
    step has in that pass. Raises ``ValueError`` naming ``where`` and the field (or the
    event, ``events[i]``), with a hint on how to get a valid file. The replay page's reader
    (docs_build/assets/replay-format.js) accepts exactly the same files.
    """
    rec, passes, raw_events = _checked_document(doc, where, JSON_VERSION)
    cfg, per_pass = Config(**rec.config), rec.events_per_pass()
    rec.events = [_event(item, f"{where}: events[{i}]", rec.kind, cfg, passes, per_pass)
                  for i, item in enumerate(raw_events)]
    return rec


def from_binary(data: bytes, where: str = "recording") -> Recording:
    """Check a version 2 file's bytes and turn them into a ``Recording`` (float16 values
    come back as float32, exactly). The header and the whole index are checked — the
    index as ``from_json`` checks a document, and each event's byte range against the
    file — before any array is read."""
    data = memoryview(data).cast("B")
    if len(data) < _HEADER.size or bytes(data[:len(MAGIC)]) != MAGIC:
        raise ValueError(f"{where} is not a glassllm recording: it starts like a binary one "
                         f"but its {_HEADER.size}-byte header is damaged or cut off; {_HINT}")
    _, version, index_length = _HEADER.unpack_from(data)
    if version > VERSION:
        raise ValueError(f"{where} is a version {version} recording but this glassllm reads "
                         f"versions up to {VERSION}; upgrade glassllm or record the run again")
    if version != VERSION:
        raise ValueError(f"{where}: its header says version {version}, but binary recordings "
                         f"are version {VERSION}; the file was damaged — record it again")
    data_start = _HEADER.size + index_length + _align(_HEADER.size + index_length)
    if data_start > len(data):
        raise ValueError(f"{where}: the header announces a {index_length}-byte index, but the "
                         f"file holds {len(data)} bytes; it is truncated — record it again")
    try:
        text = bytes(data[_HEADER.size:_HEADER.size + index_length]).decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: its index is not UTF-8 text ({err}); the file was "
                         f"damaged — record it again") from None
    doc = _parse_json(text, where)
    rec, passes, raw_events = _checked_document(doc, where, VERSION)
    cfg, per_pass = Config(**rec.config), rec.events_per_pass()
    size = len(data) - data_start
    places, end = [], 0
    for i, item in enumerate(raw_events):
        at = f"{where}: events[{i}]"
        step, ints, shape = _event_place_checked(item, at, rec.kind, cfg, passes, per_pass)
        name = item.get("dtype")
        allowed = ("int32",) if step == "sample" else FLOAT_DTYPES
        if not isinstance(name, str) or name not in allowed:
            raise ValueError(f"{at}: 'dtype' of {step} must be {' or '.join(allowed)}")
        offset, length = item.get("offset"), item.get("length")
        if not _is_count(offset) or not _is_count(length):
            raise ValueError(f"{at}: 'offset' and 'length' must be non-negative integers "
                             f"(the event's bytes in the data part of the file)")
        needed = math.prod(shape) * _BINARY_DTYPES[name].itemsize
        if length != needed:
            raise ValueError(f"{at}: 'length' is {length} bytes but shape {list(shape)} of "
                             f"{name} needs {needed}")
        if offset % ALIGN:
            raise ValueError(f"{at}: 'offset' {offset} is not a multiple of {ALIGN}; every "
                             f"array starts on an {ALIGN}-byte boundary")
        if offset < end:
            raise ValueError(f"{at}: its bytes start at {offset}, inside the bytes of the "
                             f"event before (which end at {end}); events' bytes come in "
                             f"event order without overlapping — record the run again")
        if offset + length > size:
            raise ValueError(f"{at}: its bytes ({offset} to {offset + length}) reach past the "
                             f"end of the file's {size} bytes of data; the file is truncated "
                             f"— record it again")
        end = offset + length
        places.append((step, ints, shape, name, offset))
    for step, ints, shape, name, offset in places:
        dtype = _BINARY_DTYPES[name]
        raw = np.frombuffer(data, dtype=dtype, count=math.prod(shape),
                            offset=data_start + offset)
        native = np.dtype(np.int32) if name == "int32" else np.dtype(np.float32)
        rec.events.append(Event(step, ints["layer"], raw.reshape(shape).astype(native),
                                ints["order"], ints["gen"], ints["head"]))
    return rec


def _parse_json(text: str, where: str):
    try:
        return safe_json.loads(text, where, MAX_DEPTH, MAX_NUMBER_CHARS, "a recording")
    except safe_json.NotJSON as err:
        raise ValueError(f"{where} is not a glassllm recording: it is {err}; {_HINT}") from None


def loads(text: str | bytes, where: str = "recording") -> Recording:
    """Parse and check a recording, either version: bytes that start with 0x89 are a
    version 2 (binary) file, anything else version 1 JSON text (bytes read as UTF-8, an
    initial BOM skipped, as browsers read a file)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        if bytes(text[:1]) == MAGIC[:1]:
            return from_binary(text, where)
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ValueError(f"{where} is not a glassllm recording: it is not UTF-8 text "
                             f"({err}); {_HINT}") from None
    return from_json(_parse_json(text, where), where)


def read_recording(path) -> Recording:
    path = Path(path)
    return loads(path.read_bytes(), str(path))


def recording_format(path) -> str:
    """``"binary"`` (version 2) or ``"json"`` (version 1), from the file name's suffix;
    ValueError for any other suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == BINARY_SUFFIX:
        return "binary"
    if suffix == JSON_SUFFIX:
        return "json"
    raise ValueError(f"{_short(str(path))}: name the recording *{BINARY_SUFFIX} (binary, "
                     f"version 2: compact, opens fast in the replay) or *{JSON_SUFFIX} "
                     f"(version 1 JSON, for small runs)")


def write_recording(rec: Recording, path, *, dtype: str = "float32") -> int:
    """Write ``rec`` in the format of ``path``'s suffix: ``.glrec`` version 2 (binary,
    floats as ``dtype``: "float32" exact, or "float16" half the size), ``.json`` version 1
    (float32 only). Everything is checked and encoded before the file is opened, then
    written atomically (temp file in the same folder, then ``os.replace``): an interrupted
    or failed write, Ctrl-C included, leaves neither half a file under ``path`` nor the temp
    file. Returns the size in bytes."""
    path = Path(path)
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(FLOAT_DTYPES)}, got {_short(dtype)}")
    if recording_format(path) == "binary":
        parts = binary_parts(rec, dtype)
    elif dtype != "float32":
        raise ValueError(f"{_short(str(path))}: {dtype} needs the binary format; name the "
                         f"file *{BINARY_SUFFIX}")
    else:
        parts = [dumps(rec).encode("utf-8")]
    tmp = None
    try:
        # a short name of its own: one derived from path's could pass the file system's
        # limit on name length when path itself does not
        fd, tmp = tempfile.mkstemp(prefix=".glassllm-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                out.write(part)
        # mkstemp makes the file private (0600); give it the usual permissions of a new file
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):  # gone if os.replace already ran
                os.unlink(tmp)
        raise
    return sum(len(part) for part in parts)


# Outside the arrays each event costs about 95 bytes of JSON keys in version 1 and about
# 122 bytes of index plus a few of padding in version 2; the header (config, texts, the
# steps table) about 5 KB. Measured on recordings of 1 to 30 blocks.
_EVENT_BYTES = 96
_INDEX_EVENT_BYTES = 124
_HEADER_BYTES = 5_000


def estimate_size(config: Config, kind: str, n_prompt: int, n_tokens: int = 0, *,
                  binary: bool = False, dtype: str = "float32") -> int:
    """About how many bytes ``write_recording`` writes for a run, from the shapes alone,
    before it runs: version 1 JSON, or with ``binary`` version 2 with floats as ``dtype``.

    ``"generation"``: ``n_tokens`` passes over ``n_prompt``, ``n_prompt + 1``, ... tokens;
    ``"loss"``: one pass over ``n_prompt`` input tokens. Within 2 % of the real size (a few
    KB for tiny runs, whose header dominates).
    """
    c = config
    tail = ("probs", "sample") if kind == "generation" else ("loss", "loss.grad")
    steps = ["embed", *LAYER_STEPS * c.n_layers, "final_norm", "logits", *tail]

    def values(n: int) -> int:
        """The values one pass over n tokens records."""
        size = {"token": n, "query": n, "key": n, "feature": c.d_model, "hidden": c.d_ff,
                "head": c.n_heads, "kv_head": c.n_kv_heads, "dim": c.head_dim,
                "vocab": c.vocab_size}
        return sum(int(np.prod([size[axis] for axis in AXES[s]], dtype=object))
                   for s in steps)

    # values(n) = a n^2 + b n + e exactly (no snapshot has more than two token axes), so a
    # run of a billion passes is summed in closed form rather than pass by pass
    e = values(0)
    b = (4 * values(1) - values(2) - 3 * e) // 2
    a = values(1) - b - e
    passes = range(n_prompt, n_prompt + n_tokens) if kind == "generation" else [n_prompt]
    count = len(passes)
    total_n = sum(passes) if count <= 1 else (passes[0] + passes[-1]) * count // 2
    total_n2 = _sum_of_squares(passes[-1]) - _sum_of_squares(passes[0] - 1) if count else 0
    total_values = a * total_n2 + b * total_n + e * count
    events = count * len(steps)
    if binary:
        return (total_values * _BINARY_DTYPES[dtype].itemsize
                + events * _INDEX_EVENT_BYTES + _HEADER_BYTES)
    # base64 turns 3 bytes into 4 characters
    return total_values * 16 // 3 + events * _EVENT_BYTES + _HEADER_BYTES


def _sum_of_squares(n: int) -> int:
    """1 + 4 + ... + n*n (0 for n <= 0)."""
    return n * (n + 1) * (2 * n + 1) // 6 if n > 0 else 0
