"""What the build measures about the example model's heads and loss, with ``glassllm.probes``.

Plain functions of an ``ExampleRun``: the head report of the example model and of the
untrained model of the same shape (random weights for ``example.seed``), a traced forward
over one probe sequence (a random byte string written twice) for the attention pages, the
held-out loss of both models, and which head each attention page opens on.
"""

from __future__ import annotations

import importlib
import json
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import model_source
from .catalog import DocsBuildError

PROBE_LENGTH = 24  # bytes of the random string; the probe sequence writes it twice
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
    """Mean loss per byte of the example model and of the untrained one on held-out text."""

    source: Path  # the heldout.txt read
    n_bytes: int
    window: int  # bytes per scored window
    loss: float
    untrained_loss: float


@dataclass
class HeadStudy:
    report: object  # glassllm.probes.HeadReport of the example model
    untrained: object  # the same for the untrained model (random weights for example.seed)
    length: int  # of the probe's random string
    probe_tokens: list[int]  # the random string twice: what the attention pages also show
    probe_trace: object  # glassllm.Tracer of the example model's forward over probe_tokens
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


def heldout_source(folder: Path | None) -> Path | None:
    """The held-out text: the checkpoint's own, else the demo checkpoint's (as the text the
    random model is measured on), else ``None``."""
    candidates = [Path(folder)] if folder is not None else []
    candidates.append(Path(importlib.import_module("glassllm").DEMO_CHECKPOINT))
    for candidate in candidates:
        if (candidate / model_source.HELDOUT_FILE).is_file():
            return candidate / model_source.HELDOUT_FILE
    return None


def study_heads(run) -> HeadStudy:
    """Measure the example model of ``run`` (an ``ExampleRun``) with ``glassllm.probes``.

    An exception of the engine or of the probes becomes a ``DocsBuildError`` naming where.
    """
    try:
        return _study_heads(run)
    except DocsBuildError:
        raise
    except Exception as error:  # the engine's own failure: report where, not a bare trace
        frame = traceback.extract_tb(error.__traceback__)[-1]
        raise DocsBuildError(
            f"measuring the example model with glassllm.probes raised {type(error).__name__}: "
            f"{error} (at {frame.filename}:{frame.lineno}); fix the engine or the example "
            f"settings in mkdocs.yml, then build again") from error


def _study_heads(run) -> HeadStudy:
    engine = importlib.import_module("glassllm")
    probes = importlib.import_module("glassllm.probes")
    settings, model = run.settings, run.model
    untrained = settings.untrained_model()
    length = min(PROBE_LENGTH, model.config.max_len // 2)
    report = probes.head_report(model, length=length)
    untrained_report = probes.head_report(untrained, length=length)
    probe_tokens = report.tokens  # the first probe sequence
    probe_trace, untrained_probe_trace = engine.Tracer(), engine.Tracer()
    model.forward(probe_tokens, trace=probe_trace)
    untrained.forward(probe_tokens, trace=untrained_probe_trace)
    folder = None if settings.checkpoint is None else Path(settings.checkpoint)
    card = load_card(folder)
    source = heldout_source(folder)
    heldout = None
    if source is not None:
        text = source.read_bytes()
        window = _heldout_window(card, model.config.max_len)
        heldout = HeldOut(source=source, n_bytes=len(text), window=window,
                          loss=float(probes.heldout_loss(model, text, window)),
                          untrained_loss=float(probes.heldout_loss(untrained, text, window)))
    return HeadStudy(report=report, untrained=untrained_report, length=length,
                     probe_tokens=list(probe_tokens), probe_trace=probe_trace,
                     untrained_probe_trace=untrained_probe_trace,
                     featured=featured_heads(report), heldout=heldout, card=card,
                     untrained_loss=float(untrained.loss(run.loss_tokens, run.loss_targets)),
                     continuations=continuations(model, card))


def continuations(model, card: dict | None) -> list[tuple[str, list[int]]]:
    """The card's prompts, each continued greedily by ``model`` now, as many bytes as the
    card's own continuation (within ``max_len``): the build's words, not the card's."""
    engine = importlib.import_module("glassllm")
    prompts = ((card or {}).get("final") or {}).get("continuations") or {}
    out = []
    for prompt, text in prompts.items() if isinstance(prompts, dict) else ():
        ids = engine.encode(str(prompt))
        n = min(len(engine.encode(str(text))), model.config.max_len - len(ids))
        if not ids or n < 1:
            continue
        out.append((str(prompt), [step.token for step in model.generate(ids, n, greedy=True)]))
    return out


def _heldout_window(card: dict | None, max_len: int) -> int:
    """The training sequence length (as the card's held-out figure used), within max_len."""
    seq_len = ((card or {}).get("training") or {}).get("seq_len")
    if isinstance(seq_len, int) and not isinstance(seq_len, bool) and 1 <= seq_len <= max_len:
        return seq_len
    return max_len
