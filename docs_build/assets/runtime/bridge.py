"""The Python half of the browser runtime: what the worker (worker.js) calls inside Pyodide.

The worker runs this file once, after installing the glassllm wheel, and then calls
``call(op, args)`` for each request of the page. It is plain glassllm code: the same
``model = GlassLM.from_pretrained(DEMO_CHECKPOINT)``, ``model.forward(model.tokenizer.encode(text),
Tracer())`` a reader would type (the text read by the demo's own tokenizer, its
``tokenizer.json``), its records flattened for the trip to JavaScript:

- ``records``: one entry per record, in the tracer's order, with its ``id``, ``layer``,
  ``head``, ``shape`` and where its values lie (``offset``, ``size``, counted in numbers) in
- ``values``: every record's values, row-major, one after another, as the bytes of one
  float32 array (the engine's dtype; ``sample``'s token ID, an integer below 2**24, too).

``record`` answers with a whole recording file instead (its bytes in ``values``), which the
replay page opens as it opens a reader's file.

``worked`` redoes a step page's worked numbers on the reader's text with the docs build's own
code (``docs_build/data/worked.py`` and ``html/worked.py``, shipped as ``worked.zip``, which
the worker unpacks and names with ``use_worked``): the HTML the build wrote for the example,
written for the reader's run.

An error of the engine (a text too long, an empty one) comes back as its own exception type
and message, never as a traceback (``call``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import glassllm
from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer

BUILD_INFO_NAME = "glassllm-site-build.json"  # docs_build/runtime/wheel.py writes it

_model: GlassLM | None = None
_described: dict | None = None  # what load returns but its timing, once the model is read


def load() -> dict:
    """Load the demo checkpoint; what the page shows of the runtime: the build it runs, the
    label of each token of its vocabulary (its tokenizer's ``labels``: how a chip shows the
    token, a leading space as ␣), and the model's sizes. Read once: a worker restored from a
    first visit's memory (worker.js) already holds the model and this description."""
    global _model, _described
    start = time.perf_counter()
    if _model is None or _described is None:
        _model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
        config = _model.config
        _described = {"build": build_info(),
                      "labels": _model.tokenizer.labels(range(config.vocab_size)),
                      "config": {"vocab_size": config.vocab_size, "d_model": config.d_model,
                                 "n_layers": config.n_layers, "n_heads": config.n_heads,
                                 "n_kv_heads": config.n_kv_heads, "max_len": config.max_len}}
    return {**_described, "timing": {"model_ms": _ms_since(start)}}


def build_info() -> dict:
    """The version and commit of the glassllm installed, as its wheel recorded them; outside
    the site's wheel (a checkout), its version and no commit."""
    # read beside the package, not through importlib.metadata, whose import alone costs the
    # first result about 0.3 s in Pyodide
    site = Path(glassllm.__file__).resolve().parent.parent
    recorded = sorted(site.glob(f"glassllm-*.dist-info/{BUILD_INFO_NAME}"))
    if recorded:
        return json.loads(recorded[0].read_text(encoding="utf-8"))
    return {"version": glassllm.__version__, "commit": None, "modified": False}


def run(text: str) -> dict:
    """One traced forward pass over the tokens of ``text`` (the demo's tokenizer)."""
    tokens = encode(text)
    trace = Tracer()
    start = time.perf_counter()
    _loaded().forward(tokens, trace)
    forward_ms = _ms_since(start)
    packed = Packer()
    records = packed.records(trace.records)
    return {"tokens": tokens, "records": records, "values": packed.bytes(),
            "timing": {"forward_ms": forward_ms, "python_ms": _ms_since(start)}}


def encode_text(text: str) -> dict:
    """``{"tokens": ...}``: the IDs of ``text`` by the demo's tokenizer, without running the
    model (the live panel measures a text in tokens before it runs it)."""
    return {"tokens": encode(text)}


def tokenize(text: str) -> dict:
    """How the demo's tokenizer splits ``text``: ``{"tokens", "words"}``, each word of GPT-2's
    pattern with the BPE merges applied to its bytes, in order, and its token IDs
    (``BPETokenizer.explain``); ``words`` is None for a byte tokenizer (nothing is merged)."""
    tokenizer = _loaded().tokenizer
    explain = getattr(tokenizer, "explain", None)
    words = None if explain is None else [
        {"word": w.word, "ids": list(w.ids),
         "merges": [{"left": m.left, "right": m.right, "joined": m.joined, "rank": m.rank,
                     "count": m.count} for m in w.merges]} for w in explain(text)]
    return {"tokens": encode(text), "words": words}


def generate(text: str, n: int, greedy: bool = False, temperature: float = 1.0,
             top_k: int | None = None, seed: int | None = None, trace: bool = False) -> dict:
    """``n`` generated tokens after the tokens of ``text``: each step's token, the
    distribution it was drawn from and, with ``trace``, that step's records."""
    tokens = encode(text)
    start = time.perf_counter()
    steps = list(_loaded().generate(tokens, n, greedy=greedy, temperature=temperature,
                                    top_k=top_k, seed=seed, trace=trace))
    generate_ms = _ms_since(start)
    packed = Packer()
    out = [{"token": step.token, "probs": packed.add(step.probs),
            "records": None if step.trace is None else packed.records(step.trace.records)}
           for step in steps]
    return {"tokens": tokens, "steps": out, "values": packed.bytes(),
            "timing": {"generate_ms": generate_ms, "python_ms": _ms_since(start)}}


def record(text: str, n: int, greedy: bool = True, temperature: float = 1.0,
           top_k: int | None = None, seed: int | None = 0) -> dict:
    """``glassllm.recording.record_generation`` of ``n`` tokens after ``text``, as the bytes
    of a version 2 recording file (float32, exact): what ``python -m glassllm record`` writes,
    for the replay page to play."""
    from glassllm.recording import binary_parts, record_generation

    # the replay plays a recording's generated tokens: one without any it refuses
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (tokens to generate and record) must be an integer of at least 1, "
                         f"got {n!r}")
    tokens = encode(text)
    start = time.perf_counter()
    tokenizer = _loaded().tokenizer  # a subword model's recording says how each token reads
    recording = record_generation(_loaded(), tokens, n, greedy=greedy, temperature=temperature,
                                  top_k=top_k, seed=seed,
                                  tokenizer=None if tokenizer.kind == "bytes" else tokenizer)
    record_ms = _ms_since(start)
    data = b"".join(binary_parts(recording, "float32"))
    return {"tokens": tokens, "generated": list(recording.generated), "values": data,
            "events": len(recording.events),
            "timing": {"record_ms": record_ms, "python_ms": _ms_since(start)}}


def ablate(heads: list, mode: str = "zero") -> dict:
    """The probes' measures (``glassllm.circuits.measure``: every head's previous-token and
    induction scores, the copy losses) of the clean model and with ``heads`` ablated at
    ``attn.context`` (``glassllm.circuits.ablate_heads``, through ``glassllm.edits``)."""
    from dataclasses import asdict

    from glassllm import circuits

    model = _loaded()
    start = time.perf_counter()
    clean = circuits.measure(model)
    edited = circuits.measure(model, edit=circuits.ablate_heads(heads, mode)) if heads else clean
    return {"heads": [list(map(int, head)) for head in heads], "mode": mode,
            "clean": asdict(clean), "edited": asdict(edited),
            "timing": {"python_ms": _ms_since(start)}}


# The induction lesson (glassllm.lessons), trained in pieces so that the page stays live: the
# worker answers other requests between two pieces, and the page can pause between them
_lesson = None


def lesson_start(seed: int = 0, steps: int | None = None,
                 snapshot_every: int | None = None) -> dict:
    """Begin ``glassllm.lessons.Lesson(seed, ...)`` (untrained: no snapshot yet); its
    settings and the shown probe."""
    from glassllm import lessons

    global _lesson
    if steps is not None and not (isinstance(steps, int) and not isinstance(steps, bool)
                                  and 1 <= steps <= lessons.STEPS):
        # the page trains at most the full lesson: a longer one is Python's to run
        raise ValueError(f"lesson_start: steps must be an integer in [1, {lessons.STEPS}] "
                         f"(the full lesson), got {steps!r}")
    options = {name: value for name, value in (("steps", steps),
                                               ("snapshot_every", snapshot_every))
               if value is not None}
    _lesson = lessons.Lesson(seed, **options)
    probe = _lesson.probe
    return {"seed": _lesson.seed, "steps": _lesson.steps,
            "snapshot_every": _lesson.snapshot_every,
            "probe": {"tokens": probe.inputs, "first": probe.first, "second": probe.second,
                      "length": probe.length}}


def lesson_advance(max_steps: int) -> dict:
    """Up to ``max_steps`` more updates of the lesson begun: the snapshots they took (as
    ``Snapshot.to_dict``), the step reached, and, after the last, the formed steps and the
    check (``dataclasses.asdict`` of ``LessonCheck``)."""
    from dataclasses import asdict

    lesson = _started()
    if max_steps is None:  # advance(None) would train all the rest in one call
        raise ValueError("lesson_advance: max_steps must be an integer of at least 1, got None")
    start = time.perf_counter()
    taken = lesson.advance(max_steps)  # it checks max_steps (int() would make 1.7 one)
    return {"snapshots": [s.to_dict(decimals=4) for s in taken], "step": lesson.step,
            "done": lesson.done, "formed": lesson.formed,
            "check": asdict(lesson.check) if lesson.done else None,
            "timing": {"python_ms": _ms_since(start)}}


def lesson_ablate(heads: list) -> dict:
    """The probe's numbers of the lesson's model as it is now, clean and with ``heads``
    ([[layer, head], ...]) silenced at ``attn.context``."""
    lesson = _started()
    start = time.perf_counter()

    def numbers(measures) -> dict:
        return {"first_copy_loss": measures.first_copy_loss,
                "second_copy_loss": measures.second_copy_loss, "copying": measures.copying,
                "previous_token": measures.previous_token[0].tolist(),
                "induction": measures.induction[-1].tolist()}

    edited = numbers(lesson.measure(heads))  # it checks heads: pairs of the model's
    pairs = [(int(layer), int(head)) for layer, head in heads]
    return {"heads": [list(pair) for pair in pairs], "clean": numbers(lesson.measure()),
            "edited": edited, "timing": {"python_ms": _ms_since(start)}}


def _started():
    if _lesson is None:
        raise RuntimeError("no lesson has begun (call lesson_start first)")
    return _lesson


# The steps whose worked numbers read only one forward pass: logits and probs work the token
# a generation step chose, sample its draw, loss and loss.grad a training text
NOT_WORKED_ON_A_RUN = ("logits", "probs", "sample", "loss", "loss.grad")
WORKED_UI_FILE = "worked_ui.json"  # docs_build/runtime/site.py writes it into worked.zip
_worked_ui: dict | None = None


def use_worked(folder: str) -> dict:
    """Import the docs build's worked-number modules from ``folder`` (worked.zip unpacked)
    and read their strings."""
    global _worked_ui
    if folder not in sys.path:
        sys.path.insert(0, folder)
    _worked_ui = json.loads((Path(folder) / WORKED_UI_FILE).read_text(encoding="utf-8"))
    return {"languages": sorted(_worked_ui)}


def worked(text: str, step: str, lang: str, layer: int | None = None,
           head: int | None = None) -> dict:
    """The worked numbers of ``step`` on the reader's run over ``text``, as the step page
    writes them (``html``, formulas as arithmatex markers for KaTeX), in language ``lang``;
    ``layer`` and ``head``: the head the page works in (the build's featured induction
    head). ``html`` is None where a forward pass does not give what the step works: a
    generation's choice or draw, a training text, or for the mask a second position."""
    from docs_build.data.worked import worked_example
    from docs_build.engine.child import weights
    from docs_build.html.worked import worked_html

    if _worked_ui is None:
        raise RuntimeError("the worked numbers' code is not loaded (use_worked first)")
    model = _loaded()
    _check_worked(step, lang, layer, head, model.config)
    tokens = encode(text)
    trace = Tracer()
    model.forward(tokens, trace)
    if step in NOT_WORKED_ON_A_RUN or (step == "attn.mask" and len(tokens) < 2):
        return {"html": None}
    # what worked_example reads of the build's example run, from the reader's
    labels = model.tokenizer.labels
    run = SimpleNamespace(config=model.config, labels=lambda token: labels([token])[0],
                          model=weights(model),
                          traced=SimpleNamespace(trace=trace), traced_tokens=list(tokens))
    featured = None if layer is None else SimpleNamespace(
        best_induction=SimpleNamespace(layer=layer, head=head))
    example = worked_example(step, run, featured)
    return {"html": None if example is None else worked_html(example, _worked_ui[lang])}


def _check_worked(step, lang, layer, head, config) -> None:
    """``worked``'s arguments as the page API checks them (arguments.js), so a call that
    reaches the bridge some other way gets the same clear ValueError, not NumPy's IndexError
    or a KeyError of the strings."""
    if not isinstance(step, str) or step not in glassllm.STEPS:
        raise ValueError(f"step {step!r} is no step of glassllm; use one of glassllm.STEPS "
                         f"({', '.join(glassllm.STEPS)})")
    if lang not in _worked_ui:
        raise ValueError(f"lang must be one of {', '.join(map(repr, sorted(_worked_ui)))}, "
                         f"got {lang!r}")
    if (layer is None) != (head is None):
        given, missing = ("layer", "head") if head is None else ("head", "layer")
        raise ValueError(f"{given} was given without {missing}; give both (the head the "
                         f"entry is worked in) or neither")
    for name, value, count in (("layer", layer, config.n_layers), ("head", head, config.n_heads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 0 <= value < count):
            raise ValueError(f"{name} must be an integer in [0, {count - 1}], got {value!r}")


OPS = {"load": load, "run": run, "encode": encode_text, "tokenize": tokenize, "generate": generate, "record": record, "ablate": ablate,
       "use_worked": use_worked, "worked": worked, "lesson_start": lesson_start,
       "lesson_advance": lesson_advance, "lesson_ablate": lesson_ablate}


def call(op: str, args) -> dict:
    """``{"ok": True, "result": ...}``, or ``{"ok": False, "error": {"type", "message"}}``
    with the engine's own exception type and message."""
    try:
        return {"ok": True, "result": OPS[op](**dict(args or {}))}
    except Exception as error:  # the page shows the engine's message, whatever it raised
        return {"ok": False, "error": {"type": type(error).__name__, "message": str(error)}}


class Packer:
    """Arrays laid end to end as one float32 buffer; each ``add`` says where its array lies."""

    def __init__(self) -> None:
        self.chunks: list[np.ndarray] = []
        self.size = 0

    def add(self, value) -> dict:
        array = np.asarray(value, dtype=np.float32)
        place = {"offset": self.size, "size": int(array.size)}
        self.chunks.append(array.reshape(-1))
        self.size += array.size
        return place

    def records(self, records) -> list[dict]:
        return [{"id": record.id, "layer": record.layer, "head": record.head,
                 "shape": list(np.shape(record.value)), **self.add(record.value)}
                for record in records]

    def bytes(self) -> bytes:
        if not self.chunks:
            return b""
        return np.concatenate(self.chunks).astype("<f4", copy=False).tobytes()


def encode(text: str) -> list[int]:
    """``text`` as the demo's token IDs: its own tokenizer's (``tokenizer.json``), never
    bytes for a subword model."""
    return _loaded().tokenizer.encode(text)


def _loaded() -> GlassLM:
    if _model is None:
        raise RuntimeError("the runtime has not loaded the model yet (call load first)")
    return _model


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
