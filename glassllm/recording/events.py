"""What a recording holds: its ``Recording`` and ``Event`` dataclasses, and the facts about
each step's events that both formats check, derived from ``glassllm.steps.STEP_FACTS``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..config import Config
from ..steps import KINDS, STEP_FACTS

if TYPE_CHECKING:
    from ..hf_tokenizer import CheckpointTokenizer

# The meaning of each axis of a snapshot, so a viewer can label rows and columns (a "token"
# axis is labelled with the token at that position; "query"/"key" are token axes too).
AXES: dict[str, tuple[str, ...]] = {step: facts.axes for step, facts in STEP_FACTS.items()}

# What each kind of recording can hold: no generation run includes the loss, no loss run
# probs or sample.
KIND_STEPS: dict[str, frozenset[str]] = {
    kind: frozenset(step for step, facts in STEP_FACTS.items() if kind in facts.kinds)
    for kind in KINDS}


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
        return sum(step_counts(self.kind, int(self.config["n_layers"])).values())


def step_counts(kind: str, n_layers: int) -> dict[str, int]:
    """How many times one pass of a ``kind`` run records each step: once, or ``n_layers``
    times for a block's steps."""
    return {step: n_layers if facts.where == "block" else 1
            for step, facts in STEP_FACTS.items() if kind in facts.kinds}


def expected_shape(step: str, cfg: Config, n: int) -> tuple[int, ...]:
    """The shape a snapshot of ``step`` has in a pass over ``n`` tokens of model ``cfg``."""
    sizes = {"token": n, "query": n, "key": n, "feature": cfg.d_model, "dim": cfg.head_dim,
             "hidden": cfg.d_ff, "vocab": cfg.vocab_size, "head": cfg.n_heads,
             "kv_head": cfg.n_kv_heads}
    return tuple(sizes[axis] for axis in AXES[step])
