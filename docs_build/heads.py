"""What the build measures about the example model's heads and loss, with ``glassllm.probes``.

The child (``docs_build/example_child.py``) measures; this module holds what it measured as
the pages read it: the head report of the example model and of the untrained model of the
same shape (random weights for ``example.seed``), a traced forward over one probe sequence (a
random byte string written twice) for the attention pages, the held-out loss of both models,
and which head each attention page opens on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import model_source
from .catalog import DocsBuildError

PREVIOUS_TOKEN, INDUCTION = "previous_token", "induction"
# the attention pages that open on each layer's featured head and show it on the probe
FEATURED_STEPS = ("attn.scores", "attn.mask", "attn.softmax", "attn.context")


@dataclass(frozen=True)
class HeadReport:
    """``glassllm.probes.HeadReport`` as the child wrote it: (L, H) scores, copy losses, and
    the engine's own choice of the best heads (its defaults: previous-token in layer 0,
    induction in the last layer)."""

    previous_token: np.ndarray
    induction: np.ndarray
    copy_first: float
    copy_second: float
    tokens: list[int]
    length: int
    best: dict[str, tuple[int, int, float]]  # PREVIOUS_TOKEN / INDUCTION -> (layer, head, score)

    @classmethod
    def from_json(cls, doc: dict) -> "HeadReport":
        return cls(previous_token=np.asarray(doc["previous_token"], dtype=np.float32),
                   induction=np.asarray(doc["induction"], dtype=np.float32),
                   copy_first=doc["copy_first"], copy_second=doc["copy_second"],
                   tokens=doc["tokens"], length=doc["length"],
                   best={PREVIOUS_TOKEN: tuple(doc["best_previous_token"]),
                         INDUCTION: tuple(doc["best_induction"])})

    @property
    def copy_ratio(self) -> float:
        """Loss on the second copy over loss on the first: well below 1 when the model copies."""
        return self.copy_second / self.copy_first

    def best_previous_token(self) -> tuple[int, int, float]:
        return self.best[PREVIOUS_TOKEN]

    def best_induction(self) -> tuple[int, int, float]:
        return self.best[INDUCTION]


@dataclass(frozen=True)
class FeaturedHead:
    """The head an attention page opens on in one layer, and why."""

    layer: int
    head: int
    kind: str  # PREVIOUS_TOKEN or INDUCTION: the score that made it interesting
    score: float


@dataclass(frozen=True)
class HeldOut:
    """Mean loss per byte of the example model and of the untrained one on held-out text."""

    source: Path  # the heldout.txt read
    n_bytes: int
    window: int  # bytes per scored window
    loss: float
    untrained_loss: float


@dataclass
class HeadStudy:
    report: HeadReport  # of the example model
    untrained: HeadReport  # the same for the untrained model (random weights for example.seed)
    length: int  # of the probe's random string
    probe_tokens: list[int]  # the random string twice: what the attention pages also show
    probe_trace: object  # example.Trace of the example model's forward over probe_tokens
    untrained_probe_trace: object  # the same for the untrained model
    featured: dict[int, FeaturedHead]  # layer -> the head its attention pages open on
    heldout: HeldOut | None
    card: dict | None  # the checkpoint's training.json, if it has one
    untrained_loss: float  # the untrained model's loss on example.loss_text
    continuations: list[tuple[str, list[int]]]  # (card's prompt, the build's greedy tokens)

    @property
    def best_previous_token(self) -> FeaturedHead:
        layer, head, score = self.report.best_previous_token()
        return FeaturedHead(int(layer), int(head), PREVIOUS_TOKEN, float(score))

    @property
    def best_induction(self) -> FeaturedHead:
        layer, head, score = self.report.best_induction()
        return FeaturedHead(int(layer), int(head), INDUCTION, float(score))


def featured_heads(report) -> dict[int, FeaturedHead]:
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


def load_card(folder: Path | None) -> dict | None:
    """The checkpoint's ``training.json`` (a JSON object), or ``None`` if it has none."""
    if folder is None or not (Path(folder) / model_source.CARD_FILE).is_file():
        return None
    path = Path(folder) / model_source.CARD_FILE
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise DocsBuildError(f"{path} is not valid JSON ({error}); fix it or delete it (the "
                             f"model card page then says there is no training card)") from error
    if not isinstance(card, dict):
        raise DocsBuildError(f"{path} must hold a JSON object (the model card)")
    return card
