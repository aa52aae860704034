"""The shape of every step's snapshot for a model's config, from each step's axes
(``glassllm.steps.STEP_FACTS``): what the map of the model writes in its boxes."""

from __future__ import annotations

from ..engine.schema import ModelConfig, Step

TOKEN_AXES = ("token", "query", "key")  # axes as long as the sequence


def step_shapes(steps, config: ModelConfig, n: int,
                n_loss: int | None = None) -> dict[str, tuple[int, ...]]:
    """Each step's snapshot shape: ``n`` tokens in the forward pass (one layer's snapshot for
    block steps) and ``n_loss`` positions for a step only the loss run records."""
    n_loss = n if n_loss is None else n_loss
    sizes = {"head": config.n_heads, "kv_head": config.n_kv_heads, "dim": config.head_dim,
             "feature": config.d_model, "hidden": config.d_ff, "vocab": config.vocab_size}

    def shape(step: Step) -> tuple[int, ...]:
        tokens = n if "generation" in step.kinds else n_loss
        return tuple(tokens if axis in TOKEN_AXES else sizes[axis] for axis in step.axes)

    return {step.id: shape(step) for step in steps}
