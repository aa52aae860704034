"""The example run as the pages read it: the traced generation step and the traced loss run,
each step's snapshots (per layer), and where each step runs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engine.schema import (CacheCheck, Generated, ModelConfig, ModelWeights, Tokenization, Trace,
                             TrainingStep)
from ..engine.settings import ExampleSettings
from ..errors import DocsBuildError
from ..text.tokens import TokenLabels
from .catalog import StepCatalog

# Where a step runs, as the pages name it (keys of the UI strings "where.<key>"):
# glassllm.steps.STEP_FACTS' "where"
WHERE_MODEL, WHERE_BLOCK, WHERE_GENERATION, WHERE_TRAINING = "model", "block", "generation", "training"


@dataclass(frozen=True)
class Snapshot:
    """One recorded value as a page shows it: from which run, which layer, which rows."""

    step_id: str
    layer: int | None
    value: np.ndarray
    run: str  # "generation" or "loss"
    row_tokens: tuple[int, ...]  # the token of each sequence position of this run


@dataclass
class ExampleRun:
    settings: ExampleSettings
    config: ModelConfig
    labels: TokenLabels  # the engine's label of each token
    prompt_tokens: list[int]
    generation: list[Generated]
    loss_tokens: list[int]
    loss_targets: list[int]
    loss: float
    loss_trace: Trace
    seconds: float
    model: ModelWeights
    # the untrained model (random weights for example.seed): its next-token probabilities on
    # the traced step's tokens, and its embedding matrix
    untrained_next_probs: np.ndarray
    untrained_embed_tokens: np.ndarray
    # the replay's generation (with the KV cache) against the full recompute of the same run
    cache_check: CacheCheck | None = None
    # one training step on the traced step's tokens (engine/training_step.py): the Backward
    # sections' gradients and the page "One training step"
    training: TrainingStep | None = None
    # how the prompt was split into subword tokens (the embedding page); None for bytes
    tokenization: Tokenization | None = None
    snapshots: dict[str, list[Snapshot]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)

    @property
    def traced(self) -> Generated:
        """The generation step whose trace the forward steps' pages show."""
        return self.generation[self.settings.traced_step]

    @property
    def traced_tokens(self) -> list[int]:
        """The sequence the traced generation step read: the prompt and earlier tokens."""
        return self.prompt_tokens + [s.token for s in self.generation[:self.settings.traced_step]]

    @property
    def generated_tokens(self) -> list[int]:
        return [step.token for step in self.generation]


def index_snapshots(run: ExampleRun, catalog: StepCatalog) -> None:
    """Fill ``run.snapshots`` and ``run.where`` from the traces: a step the generation records
    is shown from there (the prompt reads better than the loss text); the loss run supplies
    only the steps only training runs (``loss``, ``loss.grad``)."""
    runs = {"generation": (run.traced.trace.records, run.traced_tokens),
            "loss": (run.loss_trace.records, run.loss_tokens)}
    recorded = {name: {r.id for r in records} for name, (records, _) in runs.items()}
    missing = [s for s in catalog.ids if not any(s in ids for ids in recorded.values())]
    if missing:
        raise DocsBuildError(
            f"step(s) {', '.join(missing)} recorded nothing in the example run (a traced "
            f"generation step and a traced loss); call glassllm.trace.record(trace, <id>, value) "
            f"next to each step's '# @step' marker")
    for step in catalog.steps:
        run_name = "generation" if step.id in recorded["generation"] else "loss"
        records, tokens = runs[run_name]
        snaps = [Snapshot(step_id=r.id, layer=r.layer, value=np.asarray(r.value), run=run_name,
                          row_tokens=tuple(tokens))
                 for r in records if r.id == step.id]
        snaps.sort(key=lambda s: -1 if s.layer is None else s.layer)
        run.snapshots[step.id] = snaps
        run.where[step.id] = step.where
