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


def generation_shapes(step: Step, config: ModelConfig, n_prompt: int,
                      n_tokens: int) -> list[tuple[int, ...]] | None:
    """The shape of ``step``'s snapshot (one layer's, for a block step) at each of the
    ``n_tokens`` steps of a generation with the KV cache after a prompt of ``n_prompt``
    tokens, as ``glassllm.recording.events.generation_passes`` has them: the first step
    computes the prompt's positions; step ``k`` after it computes one new position (its
    token axes have length 1) against the ``n_prompt + k`` keys so far. ``None`` for a step
    that generation does not run (``loss``, ``loss.grad``)."""
    if "generation" not in step.kinds:
        return None
    sizes = {"head": config.n_heads, "kv_head": config.n_kv_heads, "dim": config.head_dim,
             "feature": config.d_model, "hidden": config.d_ff, "vocab": config.vocab_size}
    shapes = []
    for k in range(n_tokens):
        keys = n_prompt + k
        rows = keys if k == 0 else 1
        shapes.append(tuple(keys if axis == "key" else rows if axis in TOKEN_AXES
                            else sizes[axis] for axis in step.axes))
    return shapes
