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


def lesson_bounds(data: dict) -> dict:
    """What the page API checks glassllm.train and glassllm.lesson's arguments against: the
    recorded lesson's length, snapshot spacing and model shape (the same lesson the worker
    trains: the recording is held to glassllm.lessons by its test)."""
    return {"steps": data["steps"], "snapshot_every": data["snapshot_every"],
            "n_layers": data["config"]["n_layers"], "n_heads": data["config"]["n_heads"]}
