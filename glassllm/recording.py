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
written with ``allow_nan=False``, so any JSON parser reads the file. A run of a checkpoint
with its own tokenizer (``record --model DIR``) also gives ``prompt``, ``generated`` and
``targets`` a ``"strings"`` list: how each token reads (byte tokens need none).

    rec = record_generation(GlassLM(cfg), encode("Hello"), 6, seed=0)
    write_recording(rec, "run.json")
    again = read_recording("run.json")      # ValueError with a hint if it is not a recording
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from .model import Config, GlassLM
from .steps import HEAD_STEPS, LAYER_STEPS, STEPS, scan_markers
from .tokenizer import decode
from .trace import Tracer

if TYPE_CHECKING:
    from .hf_tokenizer import CheckpointTokenizer

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
                           top_k=top_k, seed=seed, trace=True)
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


def decode_array(obj, where: str = "array") -> np.ndarray:
    """The numpy array of an ``encode_array`` dict (native byte order, a fresh copy)."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object with shape, dtype and data")
    shape, name, data = obj.get("shape"), obj.get("dtype"), obj.get("data")
    if (not isinstance(shape, list)
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                       for s in shape)):
        raise ValueError(f"{where}: 'shape' must be a list of non-negative integers, "
                         f"got {shape!r}")
    if name not in _DTYPES:
        raise ValueError(f"{where}: 'dtype' must be one of {', '.join(_DTYPES)}, got {name!r}")
    if not isinstance(data, str):
        raise ValueError(f"{where}: 'data' must be a base64 string")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raise ValueError(f"{where}: 'data' is not valid base64") from None
    dtype = _DTYPES[name]
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) != count * dtype.itemsize:
        raise ValueError(f"{where}: 'data' holds {len(raw)} bytes but shape {shape} of "
                         f"{name} needs {count * dtype.itemsize}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


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
    reads (byte tokens need none: each is one byte)."""
    if rec.tokenizer is None:
        return {"tokens": tokens, "text": decode(tokens)}
    return {"tokens": tokens, "text": rec.tokenizer.decode(tokens),
            "strings": rec.tokenizer.strings(tokens)}


def to_json(rec: Recording) -> dict:
    """The recording as a JSON-ready dict (see the module docstring for the layout)."""
    step_ids = list(dict.fromkeys(e.step for e in rec.events))
    doc = {
        "format": FORMAT, "version": VERSION, "kind": rec.kind,
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
            or not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab
                       for t in tokens)):
        raise ValueError(f"{where}: '{key}.tokens' must be a list of token IDs in [0, {vocab})")
    return tokens


def from_json(doc, where: str = "recording") -> Recording:
    """Check a parsed JSON document and turn it back into a ``Recording`` of numpy arrays.

    Raises ``ValueError`` naming ``where`` and the problem, with a hint on how to get a
    valid file.
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{where} is not a glassllm recording (it has no \"format\": "
                         f"\"{FORMAT}\" field); {_HINT}")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"{where}: 'version' must be a positive integer; {_HINT}")
    if version > VERSION:
        raise ValueError(f"{where} is a version {version} recording but this glassllm reads "
                         f"version {VERSION}; upgrade glassllm or record the run again")
    kind = doc.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{where}: 'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    config = doc.get("config")
    try:
        Config(**config)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: 'config' is not a valid glassllm Config ({err})") from None
    vocab = config["vocab_size"]
    prompt = _tokens(doc, "prompt", where, vocab)
    raw_events = doc.get("events")
    if not isinstance(raw_events, list):
        raise ValueError(f"{where}: 'events' must be a list of snapshots")
    events = []
    for i, item in enumerate(raw_events):
        at = f"{where}: events[{i}]"
        if not isinstance(item, dict) or item.get("step") not in STEPS:
            raise ValueError(f"{at} must name a step of glassllm.STEPS in 'step'")
        ints = {}
        for key in ("layer", "order", "gen", "head"):
            value = item.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 0):
                raise ValueError(f"{at}: '{key}' must be a non-negative integer or absent")
            ints[key] = value
        if ints["order"] is None:
            raise ValueError(f"{at}: 'order' is missing")
        events.append(Event(item["step"], ints["layer"], decode_array(item, at),
                            ints["order"], ints["gen"], ints["head"]))
    rec = Recording(kind=kind, config=dict(config), prompt=prompt, events=events)
    per_pass = rec.events_per_pass()
    if kind == "generation":
        rec.generated = _tokens(doc, "generated", where, vocab)
        rec.sampling = doc.get("sampling")
        expected = per_pass * len(rec.generated)
        if any(e.gen is None or e.gen >= len(rec.generated) for e in events):
            raise ValueError(f"{where}: every event of a generation recording needs 'gen', "
                             f"the index of its generation step")
    else:
        rec.targets = _tokens(doc, "targets", where, vocab)
        loss = doc.get("loss")
        rec.loss = float(loss) if isinstance(loss, (int, float)) else None
        expected = per_pass
    if len(events) != expected:
        raise ValueError(f"{where}: has {len(events)} events but a {kind} recording of this "
                         f"model needs {expected} (18*L + 5 per pass); the file is truncated "
                         f"or was edited — record it again")
    return rec


def loads(text: str | bytes, where: str = "recording") -> Recording:
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
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
