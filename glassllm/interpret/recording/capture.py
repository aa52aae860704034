"""Recording a run: a traced generation, loss or training step of a model, every event kept
in order."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from ...text.tokenizer import check_token_order
from ...trace import Tracer
from .events import UPDATE_ENTRIES, Event, Recording

if TYPE_CHECKING:
    from ...text.hf_tokenizer import CheckpointTokenizer
    from ...model import GlassLM


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


def update_section(before: Mapping[str, np.ndarray], grads: Mapping[str, np.ndarray],
                   optimizer, loss_after: float, entries: int = UPDATE_ENTRIES) -> dict:
    """A training recording's ``update``: the AdamW step ``optimizer`` (a
    ``glassllm.optim.AdamW`` that has just stepped, once or more, over its model) took from
    the weights ``before`` with ``grads`` (both ``state_dict()``-named). For every parameter
    the ``entries`` weights of the largest |gradient| (ties: the first in row-major order)
    with their value before, gradient, moments and value after; the norms of its gradient
    and of its change; the decay the optimiser applied to it."""
    if isinstance(entries, bool) or not isinstance(entries, int) or entries < 1:
        raise ValueError(f"entries must be a positive integer, got {entries!r}")
    after = optimizer.model.state_dict()
    state = optimizer.state_dict()
    params = []
    for name, weight in after.items():
        if name not in before or name not in grads:
            raise ValueError(f"{name}: no weight before the update or no gradient for it; give "
                             f"the model's state_dict() before the step and its gradients")
        g = np.asarray(grads[name], dtype=np.float32)
        w0 = np.asarray(before[name], dtype=np.float32)
        w1 = np.asarray(weight, dtype=np.float32)
        m, v = state["exp_avg"][name], state["exp_avg_sq"][name]
        # stable: equal |gradient|s keep row-major order, so the choice is reproducible
        flat = np.argsort(-np.abs(g).ravel(), kind="stable")[:min(entries, g.size)]
        chosen = []
        for position in flat:
            index = np.unravel_index(int(position), g.shape)
            chosen.append({"index": [int(i) for i in index], "before": float(w0[index]),
                           "grad": float(g[index]), "m": float(m[index]), "v": float(v[index]),
                           "after": float(w1[index])})
        change = w1.astype(np.float64) - w0
        params.append({"name": name, "shape": list(g.shape),
                       "weight_decay": 0.0 if name in optimizer.no_decay
                       else float(optimizer.weight_decay),
                       "grad_norm": float(np.linalg.norm(g.astype(np.float64))),
                       "change_norm": float(np.linalg.norm(change)), "entries": chosen})
    return {"optimizer": "AdamW", "lr": float(optimizer.lr), "beta1": float(optimizer.betas[0]),
            "beta2": float(optimizer.betas[1]), "eps": float(optimizer.eps),
            "step": int(state["step"]), "loss_after": float(loss_after), "params": params}


def record_training(model: GlassLM, tokens: Sequence[int], optimizer, *,
                    tokenizer: "CheckpointTokenizer | None" = None,
                    entries: int = UPDATE_ENTRIES) -> Recording:
    """Record one training step of ``model`` on a text predicting itself shifted by one
    (inputs ``tokens[:-1]``, targets ``tokens[1:]``, as ``record_loss``): the forward and
    the loss, every value's gradient (``GlassLM.gradients`` with both tracers), then
    ``optimizer.step`` (a ``glassllm.optim.AdamW`` over ``model``: **the model's weights
    change**), summarised by ``update_section``."""
    check_token_order(tokens, "tokens")
    tokens = [int(t) for t in tokens]
    if len(tokens) < 2:
        raise ValueError("a training recording needs at least 2 tokens of text: each "
                         "position predicts the next one; give a longer text")
    if getattr(optimizer, "model", None) is not model:
        raise ValueError("the optimiser must update this model: give "
                         "glassllm.optim.AdamW(model, ...) of the model recorded")
    inputs, targets = tokens[:-1], tokens[1:]
    trace, grad_trace = Tracer(), Tracer()
    loss, grads = model.gradients(inputs, targets, trace=trace, grad_trace=grad_trace)
    before = model.state_dict()  # copies
    optimizer.step(grads)
    update = update_section(before, grads, optimizer, float(model.loss(inputs, targets)), entries)
    events = [Event(r.id, r.layer, r.value, r.order, None, r.head) for r in trace.records]
    events += [Event(r.id, r.layer, r.value, r.order, None, r.head, grad=True)
               for r in grad_trace.records]
    return Recording(kind="training", config=asdict(model.config), prompt=inputs, events=events,
                     targets=targets, loss=float(loss), tokenizer=tokenizer, update=update)
