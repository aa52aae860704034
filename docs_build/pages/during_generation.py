"""A step page's "during generation" line: the shape of the step's snapshot at every step of
the example's generation with the KV cache (``data.shapes.generation_shapes``), in the page's
language — the prompt's shapes at the first step, one new position at each later one."""

from __future__ import annotations

from ..data.run import ExampleRun
from ..data.shapes import generation_shapes
from ..engine.schema import Step
from ..text.markdown import fmt
from ..text.numbers import shape_text


def during_generation_text(step: Step, run: ExampleRun, ui: dict[str, str]) -> str:
    """The line's text: which shape the step has at each generation step of the example."""
    n_prompt, n_tokens = len(run.prompt_tokens), run.settings.tokens
    shapes = generation_shapes(step, run.config, n_prompt, n_tokens)
    if shapes is None:
        return ui["generation.none"]
    first, later = shapes[0], shapes[1:]
    if not later:  # one generated token: the prompt's pass alone
        return fmt(ui, "generation.first", n=n_prompt, shape=shape_text(first))
    if all(shape == first for shape in later):
        return fmt(ui, "generation.same", shape=shape_text(first), count=n_tokens)
    if all(shape == later[0] for shape in later):
        rest = shape_text(later[0])
    else:  # the key axis: one longer at each step
        rest = fmt(ui, "generation.growing", start=shape_text(later[0]), end=shape_text(later[-1]))
    key = "generation.cached_one" if len(later) == 1 else "generation.cached"
    # generation steps counted from 0, as the snapshot's intro and the replay count them
    return fmt(ui, key, n=n_prompt, first=shape_text(first), second=1, last=n_tokens - 1,
               later=rest)
