"""The recording of the induction lesson that the "Watch it learn" page plays.

``glassllm.lessons.induction(seed=0)`` trains for minutes, too long for every build, so
``scripts/record_lesson.py`` runs it once and writes ``lesson_induction.json`` beside this
module; the build reads that file (no engine run), and a test holds its first snapshots to a
fresh short run of the glassllm the site documents (a shorter run is exactly the start of the
full one). Numbers are kept as the engine computed them; the two heads' attention on the
probe, for drawing only, as bytes (weight × 255, rounded) of each row up to the diagonal,
base64: ``attention_bytes`` / ``attention_from_bytes``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..errors import DocsBuildError

RECORDING = Path(__file__).resolve().parent / "lesson_induction.json"
FIX_HINT = "regenerate it with 'python scripts/record_lesson.py'"
ATTENTION = ("previous_token_attention", "induction_attention")
VERSION = 1


def attention_bytes(weights: np.ndarray) -> str:
    """A causal attention table ``(n, n)`` as base64 of its rows up to the diagonal, each
    weight × 255 rounded to a byte."""
    n = len(weights)
    rows = np.tril_indices(n)
    return base64.b64encode(np.rint(np.clip(weights[rows], 0, 1) * 255).astype(np.uint8)
                            .tobytes()).decode("ascii")


def attention_from_bytes(text: str, n: int) -> np.ndarray:
    """``attention_bytes`` back to an ``(n, n)`` table of weights (to 1/255)."""
    flat = np.frombuffer(base64.b64decode(text), dtype=np.uint8)
    if len(flat) != n * (n + 1) // 2:
        raise ValueError(f"an attention table of {n} positions has {n * (n + 1) // 2} "
                         f"weights up to the diagonal, got {len(flat)}")
    table = np.zeros((n, n), dtype=np.float32)
    table[np.tril_indices(n)] = flat / np.float32(255)
    return table


def recording(lesson, seconds: float | None = None) -> dict:
    """A finished lesson as JSON-ready data: settings, probe, snapshots and check."""
    from glassllm import __version__, lessons
    from glassllm.circuits import COLLAPSES, QUALIFIES

    if not lesson.done:
        raise ValueError("the lesson has not finished: run it to the end (lesson.advance())")
    probe = lesson.probe
    history = []
    for snapshot in lesson.history:
        entry = snapshot.to_dict()
        for name in ATTENTION:
            entry[name] = attention_bytes(getattr(snapshot, name))
        history.append(entry)
    check = asdict(lesson.check)
    return {
        "version": VERSION, "glassllm": __version__, "seed": lesson.seed,
        "steps": lesson.steps, "snapshot_every": lesson.snapshot_every,
        "config": {k: v for k, v in asdict(lesson.config).items()},
        "training": {"batch": lessons.BATCH, "lr": lessons.LR, "warmup": lessons.WARMUP,
                     "span": list(lessons.SPAN), "prefix": lessons.PREFIX},
        "qualifies": QUALIFIES, "collapses": COLLAPSES,
        "probe": {"tokens": probe.inputs, "first": probe.first, "second": probe.second,
                  "length": probe.length, "count": len(lesson.probes)},
        "formed": lesson.formed, "check": check, "history": history,
        "seconds": seconds,
    }


def load_recording(path: Path = RECORDING) -> dict:
    """The recording, checked for what the page reads; a missing or malformed file stops the
    build with what to do."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DocsBuildError(f"{path} is missing: {FIX_HINT}") from None
    except (OSError, ValueError) as error:
        raise DocsBuildError(f"{path} cannot be read ({error}): {FIX_HINT}") from None
    try:
        if data["version"] != VERSION:
            raise ValueError(f"version {data['version']}, this build reads {VERSION}")
        n = len(data["probe"]["tokens"])
        steps = [s["step"] for s in data["history"]]
        if not steps or steps[0] != 0 or steps != sorted(steps):
            raise ValueError("the snapshots must start at step 0 and go forward")
        for snapshot in data["history"]:
            for name in ATTENTION:
                attention_from_bytes(snapshot[name], n)
        for key in ("previous_token", "induction"):
            data["formed"][key]
        data["check"]["ablations"]
    except (KeyError, TypeError, ValueError) as error:
        raise DocsBuildError(f"{path} is not a lesson recording this build can read "
                             f"({type(error).__name__}: {error}): {FIX_HINT}") from None
    return data
