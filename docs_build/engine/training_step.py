"""One training step of the example model, for the step pages' Backward sections and the page
"One training step": run in the engine's child (``child.py``), which imports ``glassllm`` and
hands it over; this module imports of ``docs_build`` only ``schema`` (``runner
.CHILD_SOURCES`` lists this file: the cache follows it).

The step trains on what the forward pages show: the traced generation step's tokens, each
predicting the next (the last one the token the traced step drew). ``GlassLM.gradients``
runs it with both tracers, so the values and their gradients are of one pass; then
``glassllm.optim.AdamW`` with the recipe ``glassllm.train.TrainOptions`` defaults to (lr,
betas, weight decay on matrices only; no clipping, no schedule: one step at the full rate)
updates every weight once, and one weight's numbers are kept to be redone on the page.
``record_training_step`` records the same step for the replay (``training.glrec``).
"""

from __future__ import annotations

import numpy as np

from . import schema


def gradient_weights(model, grads: dict) -> schema.ModelWeights:
    """``grads`` (``state_dict()`` names) under ``schema.ModelWeights``' attribute names; tied
    embeddings are one matrix, so ``lm_head`` is the embedding's gradient then."""
    names = {attr: name for name, attr in model._BLOCK_NAMES.items()}
    layers = [schema.BlockParams(**{attr: np.asarray(grads[f"model.layers.{i}.{names[attr]}"])
                                    for attr in schema.BLOCK_PARAMS})
              for i in range(model.config.n_layers)]
    embed = np.asarray(grads["model.embed_tokens.weight"])
    return schema.ModelWeights(
        embed_tokens=embed, layers=layers, norm=np.asarray(grads["model.norm.weight"]),
        lm_head=np.asarray(grads.get("lm_head.weight", embed)),
        parameter_count=int(sum(g.size for g in grads.values())))


def records(tracer) -> schema.Trace:
    """A tracer's records in order, as the schema has them."""
    return schema.Trace([schema.Record(r.id, r.layer, np.asarray(r.value), r.order, r.head)
                         for r in tracer.records])


def backward_rules(backward, package_dir) -> tuple[schema.GradRule, ...]:
    """``glassllm.backward.GRADS`` with each rule's ``# @grad`` line (the markers as found)."""
    markers = backward.scan_grad_markers(package_dir)
    return tuple(schema.GradRule(id=step_id, latex=info.latex, plain=info.plain,
                                 file=markers[step_id]["file"], line=int(markers[step_id]["line"]))
                 for step_id, info in backward.GRADS.items())


def chosen_weight(grads: dict, model) -> tuple[str, tuple[int, ...]]:
    """The weight whose update the page works: the entry of the largest |gradient| of the
    first block's query matrix (a weight every reader has met on the attn.q page)."""
    name = f"model.layers.0.{next(n for n, a in model._BLOCK_NAMES.items() if a == 'wq')}"
    g = np.asarray(grads[name])
    return name, tuple(int(i) for i in np.unravel_index(int(np.argmax(np.abs(g))), g.shape))


def recipe_optimizer(engine, model):
    """``glassllm.optim.AdamW`` over ``model`` with the recipe ``glassllm.train
    .TrainOptions`` defaults to, as ``glassllm.train.Trainer`` builds it: lr, betas, weight
    decay on the matrices only."""
    return engine.train.Trainer(model, engine.train.TrainOptions()).optimizer


def record_training_step(engine, model, tokens: list[int], target: int, folder, name: str,
                         dtype: str = "float32"):
    """The replay's recording of the same step (``glassllm.recording.record_training``:
    ``tokens`` each predicting the next, the last predicting ``target``), written to
    ``folder / name`` with floats as ``dtype``; on a model of its own, since the update changes its weights. Returns
    the recording. ``engine``: the ``glassllm`` package with ``recording`` and ``train``
    imported."""
    recording = engine.recording
    rec = recording.record_training(model, list(tokens) + [target], recipe_optimizer(engine, model))
    recording.write_recording(rec, folder / name, dtype=dtype)
    return rec


def training_step(engine, model, tokens: list[int], targets: list[int],
                  package_dir) -> schema.TrainingStep:
    """Gradients of ``model`` on ``tokens`` → ``targets``, then one AdamW step (which changes
    ``model``'s weights: give a model nothing else reads afterwards). ``engine``: the
    ``glassllm`` package with its modules ``backward``, ``optim`` and ``train`` imported (the
    child imports the engine; this module only receives it)."""
    trace, grad_trace = engine.Tracer(), engine.Tracer()
    loss, grads = model.gradients(tokens, targets, trace=trace, grad_trace=grad_trace)
    name, index = chosen_weight(grads, model)
    optimizer = recipe_optimizer(engine, model)
    before = float(model.state_dict()[name][index])
    optimizer.step(grads)
    state = optimizer.state_dict()
    update = schema.AdamWEntry(
        name=name, index=index, lr=float(optimizer.lr), beta1=float(optimizer.betas[0]),
        beta2=float(optimizer.betas[1]), eps=float(optimizer.eps),
        weight_decay=0.0 if name in optimizer.no_decay else float(optimizer.weight_decay),
        step=int(state["step"]), weight=before, grad=float(grads[name][index]),
        exp_avg=float(state["exp_avg"][name][index]),
        exp_avg_sq=float(state["exp_avg_sq"][name][index]),
        updated=float(model.state_dict()[name][index]))
    return schema.TrainingStep(
        tokens=list(map(int, tokens)), targets=list(map(int, targets)), loss=float(loss),
        loss_after=float(model.loss(tokens, targets)), trace=records(trace),
        grad_trace=records(grad_trace), grads=gradient_weights(model, grads),
        rules=backward_rules(engine.backward, package_dir), update=update)
