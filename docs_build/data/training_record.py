"""The record of how the checkpoint's circuits formed: ``record/snapshots.json`` beside its
weights, written by ``scripts/train_demo.py`` and named by ``training.json``'s
``record.snapshots``.

Every snapshot of training (every ``--eval-every`` steps, from step 0) keeps the losses, every
head's two probe scores, and the featured heads' attention on the probe: the final model's
best previous-token head and best induction head. A head *forms* at the first snapshot from
which its score stays at or above the record's threshold to the end (its ``rule``). The model
card and ``attn.softmax`` show it as a time-lapse (``html/timelapse.py``). The parent reads
the file itself: it is plain JSON, and no figure in it needs the engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DocsBuildError

KINDS = ("previous_token", "induction")
FIX_HINT = "regenerate it with scripts/train_demo.py, or remove record.snapshots from training.json"


@dataclass(frozen=True)
class Snapshot:
    step: int
    phase: str  # which data mix training drew from ("circuits", "english")
    train_loss: float
    heldout_loss: float  # on the held-out English
    copy_ratio: float
    scores: dict[str, np.ndarray]  # kind -> (layers, heads) probe scores of every head


@dataclass(frozen=True)
class FeaturedHead:
    layer: int
    head: int


@dataclass(frozen=True)
class TrainingRecord:
    source: Path  # the snapshots.json read
    featured: dict[str, FeaturedHead]  # kind -> the head the time-lapse follows
    formed_at: dict[str, int | None]  # kind -> the step its head formed (FORMS), None if never
    rule: str  # how "formed" is decided, in the record's words
    probe_tokens: list[int]  # the probe the attention frames are taken on
    snapshots: list[Snapshot]
    attention: dict[str, np.ndarray]  # kind -> (snapshots, n, n): the featured head's weights

    @property
    def steps(self) -> list[int]:
        return [s.step for s in self.snapshots]

    def series(self, kind: str) -> list[float]:
        """The featured head's score of ``kind`` at every snapshot."""
        head = self.featured[kind]
        return [float(s.scores[kind][head.layer, head.head]) for s in self.snapshots]

    def index_of(self, step: int | None) -> int | None:
        return None if step is None else self.steps.index(step)


FORMS = 0.5  # a head has formed once its score stays at or above this: glassllm.circuits.QUALIFIES


def formed_step(steps: list[int], series: list[float], threshold: float = FORMS) -> int | None:
    """The first snapshot's step from which ``series`` stays at or above ``threshold`` to the
    end; None if it ends below."""
    if not series or series[-1] < threshold:
        return None
    first = len(series) - 1
    while first > 0 and series[first - 1] >= threshold:
        first -= 1
    return steps[first]


def load_training_record(checkpoint: str | None, card: dict | None) -> TrainingRecord | None:
    """The record ``card`` (a checkpoint's training.json) names, or None without one."""
    name = ((card or {}).get("record") or {}).get("snapshots")
    if checkpoint is None or not isinstance(name, str):
        return None
    path = Path(checkpoint) / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return _parse(path, data)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise DocsBuildError(f"{path}: cannot read the training record ({error}); {FIX_HINT}") \
            from error
    except (KeyError, TypeError, IndexError) as error:
        raise DocsBuildError(f"{path}: not a training record (missing or wrong {error}); "
                             f"{FIX_HINT}") from error


def _parse(path: Path, data: dict) -> TrainingRecord:
    featured = {kind: FeaturedHead(int(data["featured"][kind]["layer"]),
                                   int(data["featured"][kind]["head"])) for kind in KINDS}
    formed = {kind: (None if data["formed_at"][kind] is None else int(data["formed_at"][kind]))
              for kind in KINDS}
    tokens = [int(t) for t in data["probe"]["tokens"]]
    snapshots = [Snapshot(step=int(s["step"]), phase=str(s["phase"]),
                          train_loss=float(s["train_loss"]), heldout_loss=float(s["heldout_loss"]),
                          copy_ratio=float(s["copy_ratio"]),
                          scores={kind: np.asarray(s[f"{kind}_scores"], dtype=np.float64)
                                  for kind in KINDS})
                 for s in data["snapshots"]]
    attention = {kind: np.asarray([s["attention"][kind] for s in data["snapshots"]],
                                  dtype=np.float32) for kind in KINDS}
    n = len(tokens)
    steps = [s.step for s in snapshots]
    problems = []
    if not snapshots or steps != sorted(set(steps)):
        problems.append("its snapshots' steps must be distinct and increasing")
    for kind in KINDS:
        if attention[kind].shape != (len(snapshots), n, n):
            problems.append(f"the {kind} attention must be one {n} × {n} matrix (the probe's "
                            f"length) per snapshot, not {attention[kind].shape}")
        if formed[kind] is not None and formed[kind] not in steps:
            problems.append(f"formed_at.{kind} ({formed[kind]}) is not a snapshot's step")
        head = featured[kind]
        for s in snapshots:
            layers, heads = s.scores[kind].shape if s.scores[kind].ndim == 2 else (0, 0)
            if not (head.layer < layers and head.head < heads):
                problems.append(f"step {s.step}: no {kind} score for layer {head.layer}, head "
                                f"{head.head}")
                break
    if problems:
        raise DocsBuildError(f"{path}: " + "; ".join(problems) + f"; {FIX_HINT}")
    # the site decides "formed" itself, with one threshold for every head (the record's own
    # formed_at may use one per kind, which would make heads that crossed together look apart)
    formed = {kind: formed_step(steps, [float(s.scores[kind][featured[kind].layer,
                                                              featured[kind].head])
                                        for s in snapshots]) for kind in KINDS}
    return TrainingRecord(source=path, featured=featured, formed_at=formed,
                          rule=str(data["rule"]), probe_tokens=tokens, snapshots=snapshots,
                          attention=attention)
