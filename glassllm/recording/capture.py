"""Recording a run: a traced generation or loss of a model, every event kept in order."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Callable, Sequence

from ..tokenizer import check_token_order
from ..trace import Tracer
from .events import Event, Recording

if TYPE_CHECKING:
    from ..hf_tokenizer import CheckpointTokenizer
    from ..model import GlassLM


def record_generation(model: GlassLM, prompt: Sequence[int], n_tokens: int, *,
                      greedy: bool = False, temperature: float = 1.0,
                      top_k: int | None = None, seed: int | None = 0,
                      on_step: Callable[[int], None] | None = None,
                      tokenizer: "CheckpointTokenizer | None" = None,
                      cache: bool = True) -> Recording:
    """Generate ``n_tokens`` tokens after ``prompt`` with tracing on, keeping every event.

    With ``cache`` (the default, as ``GlassLM.generate`` runs) the first step records the
    prompt's pass and every later step the one position it computes against the KV cache
    (token axes of length 1, attention ``(H, 1, n)``); ``cache=False`` records the full
    recompute, a forward pass over the whole sequence at every step. ``on_step(done)`` is
    called after each generation step (the command line's progress)."""
    check_token_order(prompt, "prompt")
    prompt = [int(t) for t in prompt]
    events: list[Event] = []
    generated: list[int] = []
    steps = model.generate(prompt, n_tokens, greedy=greedy, temperature=temperature,
                           top_k=top_k, seed=seed, trace=True, cache=cache)
    for gen, step in enumerate(steps):
        events.extend(Event(r.id, r.layer, r.value, r.order, gen, r.head)
                      for r in step.trace.records)
        generated.append(int(step.token))
        if on_step is not None:
            on_step(gen + 1)
    return Recording(kind="generation", config=asdict(model.config), prompt=prompt,
                     events=events, generated=generated, tokenizer=tokenizer,
                     cache=bool(cache),
                     sampling={"greedy": bool(greedy),
                               "temperature": None if greedy else float(temperature),
                               # Python ints: NumPy's are not JSON (generate has checked them)
                               "top_k": None if top_k is None else int(top_k),
                               "seed": None if seed is None else int(seed)})


def record_loss(model: GlassLM, tokens: Sequence[int],
                tokenizer: "CheckpointTokenizer | None" = None) -> Recording:
    """Trace ``model.loss`` of a text predicting itself shifted by one: inputs
    ``tokens[:-1]``, targets ``tokens[1:]``."""
    check_token_order(tokens, "tokens")
    tokens = [int(t) for t in tokens]
    if len(tokens) < 2:
        raise ValueError("a loss recording needs at least 2 tokens of text: each "
                         "position predicts the next one; give a longer text")
    inputs, targets = tokens[:-1], tokens[1:]
    tracer = Tracer()
    loss = model.loss(inputs, targets, trace=tracer)
    events = [Event(r.id, r.layer, r.value, r.order, None, r.head) for r in tracer.records]
    return Recording(kind="loss", config=asdict(model.config), prompt=inputs, events=events,
                     targets=targets, loss=float(loss), tokenizer=tokenizer)
