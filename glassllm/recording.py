"""Recordings: a traced run saved as JSON, for the slow-motion replay page to play back.

A recording holds every snapshot of a run in the order the tracer took it. Two kinds exist:

- ``"generation"``: a prompt and ``n`` generated tokens; each generation step is one full
  forward pass over the sequence so far plus ``probs`` and ``sample``, so ``18*L + 5``
  events per token, tagged with the step's index ``gen``.
- ``"loss"``: one traced ``GlassLM.loss`` call: ``18*L + 3`` forward events plus ``loss``
  and ``loss.grad``.

The JSON format (``"format": "glassllm.recording"``, ``"version": 1``) stores each array as
``{"shape": [...], "dtype": "float32", "data": <base64>}`` where ``data`` is the raw
little-endian float32 bytes (int32 for the sampled token). Why binary in JSON: it is exact
(the page shows the tracer's own float32 values, not rounded copies), about 5.3 characters
per value instead of ~12 for decimal text, and it carries ``-inf``, ``+inf`` and ``NaN``
explicitly as their IEEE bit patterns — while Python's ``json`` would write bare
``-Infinity``, which ``JSON.parse`` rejects. Everything outside ``data`` is plain JSON
written with ``allow_nan=False``, so any JSON parser reads the file.

Reading (``loads``, ``read_recording``, ``from_json``) checks the whole file against its
model's Config before decoding an array — each event's step, layer, head, generation step
and shape — and bounds sizes, nesting and number length, so a file cannot make a reader
allocate more than it holds. The replay page's reader (``docs_build/assets/
replay-format.js``) accepts exactly the same files: both are tested on
``tests/fixtures/recordings``.

    rec = record_generation(GlassLM(cfg), encode("Hello"), 6, seed=0)
    write_recording(rec, "run.json")
    again = read_recording("run.json")      # ValueError with a hint if it is not a recording
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .model import Config, GlassLM
from .steps import HEAD_STEPS, LAYER_STEPS, STEPS, scan_markers
from .tokenizer import decode
from .trace import Tracer

FORMAT = "glassllm.recording"
VERSION = 1
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
# JSON's strings, punctuation and numbers: all a nesting scan needs to see
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]|-?[0-9][0-9.eE+-]*')

_DTYPES = {"float32": np.dtype("<f4"), "int32": np.dtype("<i4")}
_HINT = 'record one with: python -m glassllm record "some text" --tokens 8 --out run.json'


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

    def events_per_pass(self) -> int:
        """Events of one generation step (or of the whole loss run): 18*L + 5."""
        return len(LAYER_STEPS) * int(self.config["n_layers"]) + 5


# -- recording a run ------------------------------------------------------------------------

def record_generation(model: GlassLM, prompt: Sequence[int], n_tokens: int, *,
                      greedy: bool = False, temperature: float = 1.0,
                      top_k: int | None = None, seed: int | None = 0,
                      on_step: Callable[[int], None] | None = None) -> Recording:
    """Generate ``n_tokens`` tokens after ``prompt`` with tracing on, keeping every event.

    ``on_step(done)`` is called after each generation step (the command line's progress)."""
    prompt = [int(t) for t in prompt]
    events: list[Event] = []
    generated: list[int] = []
    steps = model.generate(prompt, n_tokens, greedy=greedy, temperature=temperature,
                           top_k=top_k, seed=seed, trace=True)
    for gen, step in enumerate(steps):
        events.extend(Event(r.id, r.layer, r.value, r.order, gen, r.head)
                      for r in step.trace.records)
        generated.append(int(step.token))
        if on_step is not None:
            on_step(gen + 1)
    return Recording(kind="generation", config=asdict(model.config), prompt=prompt,
                     events=events, generated=generated,
                     sampling={"greedy": bool(greedy),
                               "temperature": None if greedy else float(temperature),
                               # Python ints: NumPy's are not JSON (generate has checked them)
                               "top_k": None if top_k is None else int(top_k),
                               "seed": None if seed is None else int(seed)})


def record_loss(model: GlassLM, tokens: Sequence[int],
                targets: Sequence[int] | None = None) -> Recording:
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
                     targets=targets, loss=float(loss))


# -- arrays <-> JSON --------------------------------------------------------------------------

def encode_array(value) -> dict:
    """``{"shape", "dtype", "data"}``: float values as little-endian float32, integer values
    as int32, base64-encoded. Non-finite floats keep their exact IEEE bit patterns."""
    array = np.asarray(value)
    if array.dtype.kind in "iub":
        info = np.iinfo(np.int32)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise ValueError(f"integer snapshot does not fit int32 (range {array.min()}.."
                             f"{array.max()}); recordings store integers as int32")
        name = "int32"
    elif array.dtype.kind == "f":
        name = "float32"
    else:
        raise ValueError(f"cannot record an array of dtype {array.dtype}; "
                         f"recordings hold float or integer snapshots")
    raw = np.ascontiguousarray(array, dtype=_DTYPES[name]).tobytes()
    return {"shape": list(array.shape), "dtype": name,
            "data": base64.b64encode(raw).decode("ascii")}


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


def to_json(rec: Recording) -> dict:
    """The recording as a JSON-ready dict (see the module docstring for the layout)."""
    step_ids = list(dict.fromkeys(e.step for e in rec.events))
    doc = {
        "format": FORMAT, "version": VERSION, "kind": rec.kind,
        "config": rec.config,
        "prompt": {"tokens": rec.prompt, "text": decode(rec.prompt)},
    }
    if rec.kind == "generation":
        doc["generated"] = {"tokens": rec.generated, "text": decode(rec.generated)}
        doc["sampling"] = rec.sampling
    else:
        doc["targets"] = {"tokens": rec.targets, "text": decode(rec.targets)}
        doc["loss"] = rec.loss
    doc["events_per_pass"] = rec.events_per_pass()
    doc["steps"] = _steps_table(step_ids)
    events = []
    for e in rec.events:
        item = {"step": e.step, "layer": e.layer, "order": e.order}
        if e.gen is not None:
            item["gen"] = e.gen
        if e.head is not None:
            item["head"] = e.head
        item.update(encode_array(e.value))
        events.append(item)
    doc["events"] = events
    return doc


def dumps(rec: Recording) -> str:
    """Compact, deterministic JSON text (no bare NaN/Infinity: ``allow_nan=False``)."""
    return json.dumps(to_json(rec), separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


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


def _event(item, at: str, kind: str, cfg: Config, passes: list[int], per_pass: int) -> Event:
    """One checked event: its step, indices and shape agree with the model and the run."""
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
    dtype = "int32" if step == "sample" else "float32"
    if item.get("dtype") != dtype:
        raise ValueError(f"{at}: 'dtype' of {step} must be {dtype}")
    return Event(step, layer, decode_array(item, at), ints["order"], gen, head)


def from_json(doc, where: str = "recording") -> Recording:
    """Check a parsed JSON document and turn it back into a ``Recording`` of numpy arrays.

    Everything is checked against the model's Config before any array is decoded: each
    event's step, layer, head and generation step, and its shape against the shape that
    step has in that pass. Raises ``ValueError`` naming ``where`` and the field (or the
    event, ``events[i]``), with a hint on how to get a valid file. The replay page's reader
    (docs_build/assets/replay-format.js) accepts exactly the same files.
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{where} is not a glassllm recording (it has no \"format\": "
                         f"\"{FORMAT}\" field); {_HINT}")
    version = doc.get("version")
    if not _is_count(version) or version < 1:
        raise ValueError(f"{where}: 'version' must be a positive integer; {_HINT}")
    if version > VERSION:
        raise ValueError(f"{where} is a version {version} recording but this glassllm reads "
                         f"version {VERSION}; upgrade glassllm or record the run again")
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
    per_pass = rec.events_per_pass()
    expected = per_pass * len(passes)
    if len(raw_events) != expected:
        raise ValueError(f"{where}: has {len(raw_events)} events but a {kind} recording of "
                         f"this model needs {expected} (18*L + 5 per pass); the file is "
                         f"truncated or was edited — record it again")
    rec.events = [_event(item, f"{where}: events[{i}]", kind, cfg, passes, per_pass)
                  for i, item in enumerate(raw_events)]
    return rec


def _path_text(path: list) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[:3]).lstrip(".")
    return text + ("…" if len(path) > 3 else "")


def check_text(text: str, where: str = "recording") -> None:
    """Refuse what a JSON parser should never be given: nesting deeper than ``MAX_DEPTH``
    (Python's parser would raise RecursionError) and number literals longer than
    ``MAX_NUMBER_CHARS`` (Python refuses integers of over 4300 digits; browsers read them
    as Infinity). Scans without recursion; names the place, e.g. ``events[3].shape``."""
    stack: list[list] = []  # per open container: [is_object, key or index, expecting a key]
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            if len(stack) == MAX_DEPTH:
                raise ValueError(f"{where}: {_path_text([s[1] for s in stack])} is nested "
                                 f"more than {MAX_DEPTH} levels deep; no recording is")
            stack.append([first == "{", None if first == "{" else 0, first == "{"])
        elif first in "]}":
            if stack:
                stack.pop()
        elif first == ",":
            if stack:
                top = stack[-1]
                if top[0]:
                    top[2] = True
                else:
                    top[1] += 1
        elif first == ":":
            if stack:
                stack[-1][2] = False
        elif first == '"':
            if stack and stack[-1][0] and stack[-1][2]:
                stack[-1][1] = token[1:-1] if "\\" not in token else _json_string(token)
        elif len(token) > MAX_NUMBER_CHARS:
            place = _path_text([s[1] for s in stack]) or "the top level"
            raise ValueError(f"{where}: {place} holds a number of {len(token)} characters; "
                             f"recordings have none longer than {MAX_NUMBER_CHARS}")


def _json_string(token: str) -> str:
    try:
        return json.loads(token)
    except ValueError:
        return token


def _refuse_constant(name: str):
    raise ValueError(f"bare {name} is not JSON")


def loads(text: str | bytes, where: str = "recording") -> Recording:
    """Parse and check a recording's text (bytes are read as UTF-8, an initial BOM
    skipped, as browsers read a file)."""
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{where} is not a glassllm recording: it is not UTF-8 text ({err}); "
                         f"{_HINT}") from None
    check_text(text, where)
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as err:
        raise ValueError(f"{where} is not a glassllm recording: it is not valid JSON ({err}); "
                         f"{_HINT}") from None
    return from_json(doc, where)


def read_recording(path) -> Recording:
    path = Path(path)
    return loads(path.read_bytes(), str(path))


def write_recording(rec: Recording, path) -> int:
    """Write atomically (temp file in the same folder, then ``os.replace``): an interrupted
    or failed write, Ctrl-C included, leaves neither half a file under ``path`` nor the temp
    file. Returns the size in bytes."""
    path = Path(path)
    data = dumps(rec).encode("utf-8")
    tmp = None
    try:
        # a short name of its own: one derived from path's could pass the file system's
        # limit on name length when path itself does not
        fd, tmp = tempfile.mkstemp(prefix=".glassllm-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
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
    return len(data)


# Outside the arrays each event costs about 95 bytes of JSON keys; the header (config,
# texts, the steps table) about 5 KB. Measured on recordings of 1 to 3 blocks.
_EVENT_BYTES = 96
_HEADER_BYTES = 5_000


def estimate_size(config: Config, kind: str, n_prompt: int, n_tokens: int = 0) -> int:
    """About how many bytes ``dumps`` writes for a run, from the shapes alone, before it runs.

    ``"generation"``: ``n_tokens`` passes over ``n_prompt``, ``n_prompt + 1``, ... tokens;
    ``"loss"``: one pass over ``n_prompt`` input tokens. Within 2 % of the real size (a few
    KB for tiny runs, whose header dominates).
    """
    c = config
    tail = ("probs", "sample") if kind == "generation" else ("loss", "loss.grad")
    steps = ["embed", *LAYER_STEPS * c.n_layers, "final_norm", "logits", *tail]

    def values(n: int) -> int:
        """The values one pass over n tokens records (each 4 bytes)."""
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
    # base64 turns 3 bytes into 4 characters
    return total_values * 16 // 3 + count * len(steps) * _EVENT_BYTES + _HEADER_BYTES


def _sum_of_squares(n: int) -> int:
    """1 + 4 + ... + n*n (0 for n <= 0)."""
    return n * (n + 1) * (2 * n + 1) // 6 if n > 0 else 0
