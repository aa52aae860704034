"""What the build measures about the example model's heads and loss, with ``glassllm.probes``.

The engine's child (``engine/child.py``) measures; this module holds what it measured as
the pages read it: the head report of the example model and of the model before training (the
run's own initial weights as the checkpoint's report.json records them, else random weights for
``example.seed``), a
traced forward over one probe sequence (a
random byte string written twice) for the attention pages, the held-out loss of both models,
and which head each attention page opens on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine.schema import HeadReport, Trace
from .training_record import TrainingRecord

PREVIOUS_TOKEN, INDUCTION = "previous_token", "induction"
# the attention pages that open on each layer's featured head and show it on the probe
FEATURED_STEPS = ("attn.scores", "attn.mask", "attn.softmax", "attn.context")


@dataclass(frozen=True)
class FeaturedHead:
    """The head an attention page opens on in one layer, and why."""

    layer: int
    head: int
    kind: str  # PREVIOUS_TOKEN or INDUCTION: the score that made it interesting
    score: float


@dataclass(frozen=True)
class HeldOut:
    """Mean loss per byte (nats) of the example model and of the untrained one on held-out
    text (its lines that are not empty, as the report's ``measure()`` reads them)."""

    source: Path  # the heldout.txt read
    n_bytes: int
    window: int  # tokens per scored window
    loss: float
    untrained_loss: float
    n_tokens: int | None = None  # the text read by the model's tokenizer


@dataclass
class HeadStudy:
    report: HeadReport  # of the example model
    untrained: HeadReport  # the same before training (engine/child.py: untrained_model)
    length: int  # of the probe's random string
    probe_tokens: list[int]  # the random string twice: what the attention pages also show
    probe_trace: Trace  # the example model's forward over probe_tokens
    untrained_probe_trace: Trace  # the same for the untrained model
    featured: dict[int, FeaturedHead]  # layer -> the head its attention pages open on
    heldout: HeldOut | None
    card: dict | None  # the checkpoint's report.json, if it has one
    untrained_loss: float  # the untrained model's loss on example.loss_text
    record: TrainingRecord | None = None  # how the circuits formed (the checkpoint's record)
    circuit: dict | None = None  # glassllm.circuits' results (engine/schema.py: Output.circuits)

    @property
    def best_previous_token(self) -> FeaturedHead:
        layer, head, score = self.report.best_previous_token()
        return FeaturedHead(int(layer), int(head), PREVIOUS_TOKEN, float(score))

    @property
    def best_induction(self) -> FeaturedHead:
        layer, head, score = self.report.best_induction()
        return FeaturedHead(int(layer), int(head), INDUCTION, float(score))


def featured_heads(report: HeadReport) -> dict[int, FeaturedHead]:
    """Per layer, the head its attention pages show first.

    The best induction head in its layer and the best previous-token head in its layer (the
    induction head wins if both are in one layer); every other layer opens on its head with
    the highest of the two scores.
    """
    chosen: dict[int, FeaturedHead] = {}
    for kind, (layer, head, score) in ((PREVIOUS_TOKEN, report.best_previous_token()),
                                       (INDUCTION, report.best_induction())):
        chosen[int(layer)] = FeaturedHead(int(layer), int(head), kind, float(score))
    for layer in range(report.previous_token.shape[0]):
        if layer not in chosen:
            scores = {PREVIOUS_TOKEN: report.previous_token[layer],
                      INDUCTION: report.induction[layer]}
            kind = max(scores, key=lambda k: float(scores[k].max()))
            head = int(np.argmax(scores[kind]))
            chosen[layer] = FeaturedHead(layer, head, kind, float(scores[kind][head]))
    return dict(sorted(chosen.items()))
