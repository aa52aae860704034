"""What a recording holds: its ``Recording`` and ``Event`` dataclasses, and the facts about
each step's events that both formats check, derived from ``glassllm.steps.STEP_FACTS``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ...config import Config
from ...steps import KINDS, STEP_FACTS

if TYPE_CHECKING:
    from ...text.hf_tokenizer import CheckpointTokenizer

# The meaning of each axis of a snapshot, so a viewer can label rows and columns (a "token"
# axis is labelled with the token at that position; "query"/"key" are token axes too).
AXES: dict[str, tuple[str, ...]] = {step: facts.axes for step, facts in STEP_FACTS.items()}

# The kinds of recording: the two kinds of run a trace records (``glassllm.steps.KINDS``),
# and ``"training"``, a loss run followed by its backward pass and one optimiser update.
RECORDING_KINDS: tuple[str, ...] = (*KINDS, "training")

# What each kind of recording can hold: no generation run includes the loss, no loss run
# probs or sample; a training step's forward is a loss run's, and so are its gradients' steps.
KIND_STEPS: dict[str, frozenset[str]] = {
    kind: frozenset(step for step, facts in STEP_FACTS.items() if kind in facts.kinds)
    for kind in KINDS}
KIND_STEPS["training"] = KIND_STEPS["loss"]

# The number of weights of each parameter whose update a training recording keeps: the
# entries of the largest |gradient| (the whole matrices would weigh as much as the model).
UPDATE_ENTRIES = 3


@dataclass(frozen=True)
class Event:
    """One snapshot of the run: step ``step`` (in block ``layer``) taken at position ``order``
    of its tracer, during generation step ``gen`` (``None`` in a loss recording). ``grad``:
    the event holds ∂loss/∂value of the forward event of the same step, layer and head (a
    training recording's backward pass), ``order`` its position in the gradient tracer."""

    step: str
    layer: int | None
    value: np.ndarray
    order: int
    gen: int | None = None
    head: int | None = None
    grad: bool = False


@dataclass
class Recording:
    kind: str                      # "generation", "loss" or "training"
    config: dict                   # the model's Config as a dict (d_ff resolved)
    prompt: list[int]              # generation: the prompt; loss: the input tokens
    events: list[Event]
    generated: list[int] = field(default_factory=list)   # generation: the new tokens
    sampling: dict | None = None   # generation: greedy, temperature, top_k, seed
    targets: list[int] = field(default_factory=list)     # loss: one target per position
    loss: float | None = None      # loss: the value GlassLM.loss returned
    # generation: run with the KV cache, so every step after the first computed one new
    # position against all the cached ones; False: each step recomputed the whole sequence
    cache: bool = False
    # the checkpoint's tokenizer (glassllm.hf_tokenizer); None: byte tokens
    tokenizer: "CheckpointTokenizer | None" = None
    # training: the optimiser's update (capture.update_section: its settings, the loss after
    # it, and per parameter the sampled entries before, gradient, moments, after)
    update: dict | None = None

    def events_per_pass(self) -> int:
        """Events of one generation step (or of the whole loss run): 18*L + 5. A training
        recording holds them twice: the forward, then each one's gradient."""
        return sum(step_counts(self.kind, int(self.config["n_layers"])).values())

    def event_count(self) -> int:
        """Every event the recording holds."""
        per_pass = self.events_per_pass()
        return per_pass * 2 if self.kind == "training" else per_pass * len(self.passes())

    def passes(self) -> list[Pass]:
        """What each pass computed: one per generation step, or the loss run's one."""
        if self.kind == "generation":
            return generation_passes(len(self.prompt), len(self.generated), self.cache)
        return [Pass(len(self.prompt), len(self.prompt))]


@dataclass(frozen=True)
class Pass:
    """What one pass of a run computes: ``tokens`` positions (the rows of its "token" and
    "query" axes, the last positions of the sequence), each attending to the ``keys``
    positions of the sequence so far (its "key" axis)."""

    tokens: int
    keys: int

    @property
    def first(self) -> int:
        """The position in the sequence of the pass's first row."""
        return self.keys - self.tokens


def generation_passes(n_prompt: int, n_generated: int, cache: bool) -> list[Pass]:
    """The passes of a generation: step ``gen`` reads ``n_prompt + gen`` tokens. Without the
    cache each step computes all of them; with it the first step computes the prompt and each
    later step only the newest position, against every cached key (one query row)."""
    return [Pass(1 if cache and gen else n_prompt + gen, n_prompt + gen)
            for gen in range(n_generated)]


def step_counts(kind: str, n_layers: int) -> dict[str, int]:
    """How many times one pass of a ``kind`` run records each step: once, or ``n_layers``
    times for a block's steps."""
    return {step: n_layers if facts.where == "block" else 1
            for step, facts in STEP_FACTS.items() if step in KIND_STEPS[kind]}


def expected_shape(step: str, cfg: Config, n: int, keys: int | None = None) -> tuple[int, ...]:
    """The shape a snapshot of ``step`` has in a pass of model ``cfg`` that computes ``n``
    positions attending to ``keys`` positions (default ``n``: a full pass over ``n`` tokens;
    a cached generation step has ``n = 1``)."""
    keys = n if keys is None else keys
    sizes = {"token": n, "query": n, "key": keys, "feature": cfg.d_model, "dim": cfg.head_dim,
             "hidden": cfg.d_ff, "vocab": cfg.vocab_size, "head": cfg.n_heads,
             "kv_head": cfg.n_kv_heads}
    return tuple(sizes[axis] for axis in AXES[step])
