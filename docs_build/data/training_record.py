"""The record of how the checkpoint's circuits formed: ``training_record.json`` beside its
weights, written by ``scripts/train_demo.py`` and named by ``report.json``'s
``record.file``.

Every snapshot of training (every ``every`` steps, from step 0: the run's own initial
weights) keeps the training loss, the held-out English loss (nats per byte), the English
written twice loss ratio, every head's previous-token and induction scores on the held-out
English, the phase of the data mix, and the featured heads' attention on the probe (an English
sentence written twice): the final model's best previous-token head of layer 0 and best
induction head of the induction layer. A head *forms* at the first snapshot from which its
score stays at or above the record's threshold to the last (``glassllm.lessons.formed_step``,
one rule for every head); the site computes it again for every head and refuses a record whose
``heads_formed_at`` says otherwise. The model card and ``attn.softmax`` show it as a
time-lapse (``html/timelapse.py``). The parent reads the file itself: it is plain JSON, and no
figure in it needs the engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DocsBuildError

KINDS = ("previous_token", "induction")
FIX_HINT = "write it again with scripts/train_demo.py, or remove record.file from report.json"


@dataclass(frozen=True)
class Snapshot:
    step: int
    phase: int  # the index of the recipe's phase (report.json "phases") the batches came from
    train_loss: float | None  # mean over the steps since the snapshot before; None at step 0
    heldout_loss: float  # on the held-out English, nats per byte
    copy_ratio: float  # English written twice: second copy's loss / first copy's
    scores: dict[str, np.ndarray]  # kind -> (layers, heads) scores of every head


@dataclass(frozen=True)
class FeaturedHead:
    layer: int
    head: int


@dataclass(frozen=True)
class TrainingRecord:
    source: Path  # the training_record.json read
    featured: dict[str, FeaturedHead]  # kind -> the head the time-lapse follows
    layers: dict[str, int]  # kind -> the layer whose every head the rule follows
    formed_at: dict[str, int | None]  # kind -> the step the featured head formed, None if never
    heads_formed_at: dict[str, list[int | None]]  # kind -> per head of its layer
    threshold: float  # the rule's threshold
    rule: str  # how "formed" is decided, in the record's words
    every: int  # steps between snapshots
    phases: list[dict]  # the recipe's phases (report.json), indexed by Snapshot.phase
    probe_tokens: list[int]  # the probe the attention frames are taken on
    snapshots: list[Snapshot]
    attention: dict[str, np.ndarray]  # kind -> (snapshots, n, n): the featured head's weights

    @property
    def steps(self) -> list[int]:
        return [s.step for s in self.snapshots]

    def series(self, kind: str, head: int | None = None) -> list[float]:
        """The score of ``kind`` at every snapshot of the featured head, or of ``head`` of
        the kind's layer."""
        layer = self.layers[kind]
        head = self.featured[kind].head if head is None else head
        return [float(s.scores[kind][layer, head]) for s in self.snapshots]

    def n_heads(self, kind: str) -> int:
        return int(self.snapshots[0].scores[kind].shape[1])

    def index_of(self, step: int | None) -> int | None:
        return None if step is None else self.steps.index(step)


def formed_step(steps: list[int], series: list[float], threshold: float) -> int | None:
    """The first snapshot's step from which ``series`` stays at or above ``threshold`` to the
    end; None if it ends below."""
    if not series or series[-1] < threshold:
        return None
    first = len(series) - 1
    while first > 0 and series[first - 1] >= threshold:
        first -= 1
    return steps[first]


def load_training_record(checkpoint: str | None, report: dict | None) -> TrainingRecord | None:
    """The record ``report`` (a checkpoint's report.json) names, or None without one."""
    name = ((report or {}).get("record") or {}).get("file")
    if checkpoint is None or not isinstance(name, str):
        return None
    path = Path(checkpoint) / name
    phases = report.get("phases")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return _parse(path, data, phases if isinstance(phases, list) else [])
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise DocsBuildError(f"{path}: cannot read the training record ({error}); {FIX_HINT}") \
            from error
    except (KeyError, TypeError, IndexError) as error:
        raise DocsBuildError(f"{path}: not a training record (missing or wrong {error}); "
                             f"{FIX_HINT}") from error


def _parse(path: Path, data: dict, phases: list) -> TrainingRecord:
    featured = {kind: FeaturedHead(int(data["featured"][kind]["layer"]),
                                   int(data["featured"][kind]["head"])) for kind in KINDS}
    layers = {kind: featured[kind].layer for kind in KINDS}
    tokens = [int(t) for t in data["probe"]["tokens"]]
    snapshots = [Snapshot(step=int(s["step"]), phase=int(s["phase"]),
                          train_loss=None if s["train_loss"] is None else float(s["train_loss"]),
                          heldout_loss=float(s["heldout_loss"]), copy_ratio=float(s["copy_ratio"]),
                          scores={kind: np.asarray(s[f"{kind}_scores"], dtype=np.float64)
                                  for kind in KINDS})
                 for s in data["snapshots"]]
    attention = {kind: np.asarray([s["attention"][kind] for s in data["snapshots"]],
                                  dtype=np.float32) for kind in KINDS}
    threshold = float(data["threshold"])
    n = len(tokens)
    steps = [s.step for s in snapshots]
    problems = []
    if not snapshots or steps != sorted(set(steps)) or steps[0] != 0:
        problems.append("its snapshots' steps must be distinct and increasing, from step 0")
    if any(not 0 <= s.phase < len(phases) for s in snapshots):
        problems.append(f"a snapshot's phase is not one of report.json's {len(phases)} phases")
    for kind in KINDS:
        if attention[kind].shape != (len(snapshots), n, n):
            problems.append(f"the {kind} attention must be one {n} × {n} matrix (the probe's "
                            f"length) per snapshot, not {attention[kind].shape}")
        head = featured[kind]
        shapes = {s.scores[kind].shape for s in snapshots}
        if len(shapes) != 1 or len(next(iter(shapes))) != 2 or \
                not (head.layer < next(iter(shapes))[0] and head.head < next(iter(shapes))[1]):
            problems.append(f"every snapshot needs {kind} scores of every head, one shape, with "
                            f"layer {head.layer}, head {head.head}")
    if problems:
        raise DocsBuildError(f"{path}: " + "; ".join(problems) + f"; {FIX_HINT}")
    partial = TrainingRecord(source=path, featured=featured, layers=layers, formed_at={},
                             heads_formed_at={}, threshold=threshold, rule=str(data["rule"]),
                             every=int(data["every"]), phases=phases, probe_tokens=tokens,
                             snapshots=snapshots, attention=attention)
    # the site decides "formed" itself, for every head by the one rule, and holds the record
    # to it: a record whose own steps say otherwise is refused
    heads = {kind: [formed_step(steps, partial.series(kind, h), threshold)
                    for h in range(partial.n_heads(kind))] for kind in KINDS}
    stated = data.get("heads_formed_at") or {}
    for kind in KINDS:
        if kind in stated and list(stated[kind]) != heads[kind]:
            raise DocsBuildError(
                f"{path}: heads_formed_at.{kind} is {stated[kind]}, but its own scores form "
                f"the heads at {heads[kind]} by the rule ({data['rule']}); {FIX_HINT}")
    formed = {kind: heads[kind][featured[kind].head] for kind in KINDS}
    return TrainingRecord(source=path, featured=featured, layers=layers, formed_at=formed,
                          heads_formed_at=heads, threshold=threshold, rule=str(data["rule"]),
                          every=int(data["every"]), phases=phases, probe_tokens=tokens,
                          snapshots=snapshots, attention=attention)
