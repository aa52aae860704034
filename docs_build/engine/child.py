"""The child process of the docs build: the one ``docs_build`` module that imports ``glassllm``.

``engine/runner.py`` runs ``python -m docs_build.engine.child OUTDIR`` in a fresh interpreter,
with the site's engine first on ``sys.path`` (cwd = the folder holding ``package_dir``), so an
edited engine is simply the code that runs: no module is ever reloaded. The build writes
``OUTDIR/request.json`` (a ``schema.Request``); this module checks the engine, runs
everything the pages need and writes an ``schema.Output`` (``meta.json`` and ``arrays.npz``)
and the replay's recordings (``replay/<id><suffix>``, written by
``glassllm.recording.write_recording``) into OUTDIR, or ``error.json`` (a
``schema.ErrorReport``) and exit code 1.

The step pages read their values from ``arrays.npz`` instead of the recordings: a recording
keeps every generation step and its format is the replay's to change, while the pages need one
traced step plus the probe traces, which no recording holds; ``.npz`` is read with NumPy alone.

Of ``docs_build`` this module imports only ``engine/schema.py``, ``engine/limits.py`` and
``engine/training_step.py``: what
it writes depends only on the engine, these files and the request, which is what the build's
cache key hashes (``runner.CHILD_SOURCES``). The
build holds this process's stdin open while it waits; when the build ends (stopped, killed),
stdin closes and this process ends too (``exit_with_the_build``).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import limits, schema, training_step

PROBE_LENGTH = 24  # tokens of the probe's random sequence; the probe writes it twice


class Refusal(Exception):
    """A problem with a finished message for the person building the site (no file:line)."""


class EngineError(Exception):
    """An exception of the engine's own code, with the stage of the build it broke."""

    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(stage)
        self.stage, self.error = stage, error


def announce(stage: str) -> None:
    """Say on stdout that ``stage`` starts, for the build to log as it happens (runner.py)."""
    print(schema.STAGE_PREFIX + stage, flush=True)


def check_engine_syntax(package_dir: Path) -> None:
    """Compile every engine module, its folders' too, so a syntax error is named by its file and
    line (also the modules the package does not import: the site shows them all)."""
    for path in sorted(p for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts):
        try:
            compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:  # ValueError: a NUL byte (Python < 3.12)
            if not isinstance(error, SyntaxError):
                error = SyntaxError(str(error), (str(path), None, None, None))
            raise EngineError(schema.SYNTAX_STAGE, error) from error


def import_engine(package_dir: Path):
    """``import glassllm``, refused unless it is the package in ``package_dir``."""
    try:
        import glassllm
    except ModuleNotFoundError as error:
        if error.name != "glassllm":
            raise EngineError("importing glassllm", error) from error
        raise Refusal(f"cannot import glassllm ({error}); install this checkout with "
                      f"'pip install -e .' from the repository root") from error
    except Exception as error:  # the engine's own code failed while importing
        raise EngineError("importing glassllm", error) from error
    imported = Path(glassllm.__file__).resolve().parent
    if imported != package_dir:
        raise Refusal(f"the glassllm that Python imports is {imported}, not the engine of this "
                      f"site ({package_dir}); run 'pip install -e .' in this checkout or build "
                      f"with 'python -m mkdocs build' from its root")
    return glassllm


def _staleness(name: str, index: dict, markers: dict, index_command: str) -> str | None:
    """How an index disagrees with its markers, with what to do; None when it agrees."""
    from glassllm import steps

    if index == markers:
        return None
    changes = steps.describe_index_changes(index, markers)
    return (f"{name} is stale (" + "; ".join(changes[:5]) + ("; …" if len(changes) > 5 else "")
            + f"): run {index_command} and commit the result")


def _grad_staleness(package_dir: Path, index_command: str) -> str | None:
    """The ``# @grad`` markers (one per step, on the line that computes its backward)
    against ``glassllm/grad_index.json``: a ``Refusal`` for a bad or missing marker."""
    from glassllm import backward, steps

    try:
        markers = backward.scan_grad_markers(package_dir)
    except ValueError as error:
        raise Refusal(f"bad '# @grad' marker: {error}") from error
    missing = [step_id for step_id in steps.STEPS if step_id not in markers]
    if missing:
        raise Refusal(f"step(s) {', '.join(missing)} have no '# @grad <id>' marker in "
                      f"{package_dir.name}/*.py; add the comment on the line that computes "
                      f"each one's backward (its rule is in glassllm.backward.GRADS), then run "
                      f"{index_command}")
    try:
        index = backward.load_grad_index()
    except (OSError, ValueError) as error:
        raise Refusal(f"cannot read glassllm/grad_index.json ({error}); "
                      f"run {index_command}") from error
    return _staleness("glassllm/grad_index.json", index, markers, index_command)


def collect_steps(package_dir: Path, allow_stale: bool, index_command: str) -> schema.Catalog:
    """``scan_markers()`` checked against ``load_step_index()`` and ``STEPS``, and the
    backward pass's ``# @grad`` markers against ``load_grad_index()``: the catalog."""
    from glassllm import steps

    try:
        markers = steps.scan_markers(package_dir)
    except ValueError as error:  # unknown ID, repeated ID, marker without ID
        raise Refusal(f"bad '# @step' marker: {error}") from error
    missing = [step_id for step_id in steps.STEPS if step_id not in markers]
    if missing:
        raise Refusal(f"step(s) {', '.join(missing)} have no '# @step <id>' marker in "
                      f"{package_dir.name}/*.py; add the comment on the line of the operation "
                      f"that computes each one, then run {index_command}")
    try:
        index = steps.load_step_index()
    except (OSError, ValueError) as error:
        raise Refusal(f"cannot read glassllm/step_index.json ({error}); "
                      f"run {index_command}") from error
    stale = [message for message in (
        _staleness("glassllm/step_index.json", index, markers, index_command),
        _grad_staleness(package_dir, index_command)) if message]
    stale = "; ".join(stale) or None
    if stale and not allow_stale:
        raise Refusal(stale)
    return schema.Catalog(stale_index=stale, steps=tuple(
        schema.Step(id=row["id"], position=position, latex=row["latex"], plain=row["plain"],
                    file=markers[row["id"]]["file"], line=int(markers[row["id"]]["line"]),
                    axes=tuple(row["axes"]), where=row["where"], head_axis=row["head_axis"],
                    kinds=tuple(row["kinds"]), causal=row["causal"], vocabulary=row["vocabulary"])
        for position, row in enumerate(steps.step_table())))


def trace_of(tracer) -> schema.Trace:
    """A tracer's records in order, as the schema has them."""
    return schema.Trace([schema.Record(r.id, r.layer, np.asarray(r.value), r.order, r.head)
                         for r in tracer.records])


def load_model(engine, settings: dict, hints: dict):
    """The example model: the checkpoint's weights, or random ones for ``settings["seed"]``."""
    if settings["checkpoint"] is not None:
        folder = settings["checkpoint"]
        try:
            return engine.GlassLM.from_pretrained(folder)
        except (ValueError, OSError) as error:
            raise Refusal(f"example.model: cannot load the checkpoint {folder}: {error}; fix the "
                          f"checkpoint or {hints['model']}") from error
    try:
        return engine.GlassLM(random_config(engine, settings))
    except ValueError as error:
        raise Refusal(f"invalid example model: {error}; change {hints['settings']}") from error


def untrained_model(engine, model, settings: dict, report: dict | None):
    """"Before training": the run's own initial weights when the checkpoint's ``report.json``
    records them (``training.init`` "glass" and ``training.seed``: ``GlassLM(Config(<the
    model's config>, seed))``, what ``scripts/train_demo.py`` started from); otherwise
    random weights for ``settings["seed"]`` in the example model's shape. A checkpoint's
    untrained model reads text with the checkpoint's tokenizer."""
    seed = initial_seed(report) if settings["checkpoint"] is not None else None
    initial = engine.GlassLM(replace(model.config, seed=settings["seed"] if seed is None else seed))
    if settings["checkpoint"] is None:
        return initial
    untrained = engine.GlassLM.from_pretrained(settings["checkpoint"])  # its tokenizer
    untrained.load_state_dict(initial.state_dict())
    return untrained


def initial_seed(report: dict | None) -> int | None:
    """The seed of the run's own initial weights as ``report.json`` records them, or None
    (no report, another initialisation, or no seed recorded)."""
    training = (report or {}).get("training") or {}
    seed = training.get("seed")
    if training.get("init") != "glass" or isinstance(seed, bool) or not isinstance(seed, int) \
            or seed < 0:
        return None
    return seed


def random_config(engine, settings: dict):
    return engine.Config(vocab_size=engine.BYTE_VOCAB_SIZE, d_model=settings["d_model"],
                         n_layers=settings["n_layers"], n_heads=settings["n_heads"],
                         n_kv_heads=settings["n_kv_heads"], max_len=settings["max_len"],
                         seed=settings["seed"])


def example_tokenizer(model):
    """The example model's own tokenizer (``GlassLM.tokenizer``: its folder's
    ``tokenizer.json``, bytes for ``model: random``); a ``Refusal`` when it has none."""
    try:
        return model.tokenizer
    except ValueError as error:
        raise Refusal(f"example.model: {error}; give the checkpoint its tokenizer.json") from error


def check_lengths(tokenizer, settings: dict, hints: dict) -> None:
    """The prompt and the loss text measured in the model's own tokens (the settings module
    cannot count them: it never imports glassllm): a ``Refusal`` naming the option."""
    where = hints["settings"]
    loss_len = len(tokenizer.encode(settings["loss_text"]))
    if loss_len < 2:
        raise Refusal(f"example.loss_text needs at least 2 tokens (it has {loss_len}): the loss "
                      f"predicts each token from the ones before it; lengthen it in {where}")
    prompt_len = len(tokenizer.encode(settings["prompt"]))
    if prompt_len + settings["tokens"] > settings["max_len"]:
        raise Refusal(f"example.prompt ({prompt_len} tokens) + example.tokens "
                      f"({settings['tokens']}) exceeds the model's max_len "
                      f"({settings['max_len']}); shorten them in {where}")
    if loss_len - 1 > settings["max_len"]:
        raise Refusal(f"example.loss_text has {loss_len} tokens, more than max_len + 1 "
                      f"({settings['max_len'] + 1}); shorten it in {where}")
    top_k, vocab = settings.get("top_k"), tokenizer.vocab_size
    if top_k is not None and not 1 <= top_k <= vocab:
        raise Refusal(f"example.top_k must be in [1, {vocab}] (the model's vocabulary) or left "
                      f"out, got {top_k}; change it in {where}")


def token_table(tokenizer, vocab_size: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every token ID's label (``tokenizer.labels``: how a chip shows it, ␣ for a space) and
    its bytes as hex (the pages decode token sequences with them, as the tokenizer does)."""
    ids = list(range(vocab_size))
    return (tuple(tokenizer.labels(ids)),
            tuple(data.hex() for data in tokenizer.token_bytes(ids)))


def tokenization(tokenizer, text: str) -> schema.Tokenization | None:
    """How the example's prompt is split into the model's tokens, word by word with the BPE
    merges applied (``BPETokenizer.explain``); None for the byte tokenizer (no merges)."""
    explain = getattr(tokenizer, "explain", None)
    if explain is None:
        return None
    return schema.Tokenization(text=text, words=tuple(
        schema.WordSplit(word=w.word, ids=tuple(int(i) for i in w.ids), merges=tuple(
            schema.MergeStep(left=m.left, right=m.right, joined=m.joined, rank=int(m.rank),
                             count=int(m.count))
            for m in w.merges)) for w in explain(text)))


def run_example(engine, model, settings: dict) -> schema.Runs:
    """The traced generation (the forward pages show its ``traced_step``) and the traced loss,
    the texts read with the model's own tokenizer."""
    start = time.perf_counter()
    tokenizer = example_tokenizer(model)
    prompt = tokenizer.encode(settings["prompt"])
    generation = list(model.generate(
        prompt, settings["tokens"], greedy=settings["greedy"],
        temperature=settings["temperature"], top_k=settings["top_k"],
        seed=settings["sampling_seed"], trace=True, cache=False))
    text = tokenizer.encode(settings["loss_text"])
    loss_tokens, loss_targets = text[:-1], text[1:]
    loss_trace = engine.Tracer()
    loss = model.loss(loss_tokens, loss_targets, trace=loss_trace)
    seconds = time.perf_counter() - start
    traced = settings["traced_step"]
    return schema.Runs(
        prompt_tokens=list(map(int, prompt)), seconds=seconds,
        generation=[schema.Generated(int(step.token), np.asarray(step.probs),
                                     trace_of(step.trace) if i == traced else None)
                    for i, step in enumerate(generation)],
        loss_tokens=list(map(int, loss_tokens)), loss_targets=list(map(int, loss_targets)),
        loss=float(loss), loss_trace=trace_of(loss_trace))


def head_report(report) -> schema.HeadReport:
    layer, head, score = report.best_previous_token()
    best_previous = (int(layer), int(head), float(score))
    layer, head, score = report.best_induction()
    return schema.HeadReport(
        previous_token=np.asarray(report.previous_token, dtype=np.float32),
        induction=np.asarray(report.induction, dtype=np.float32),
        copy_first=float(report.copy_first), copy_second=float(report.copy_second),
        tokens=list(map(int, report.tokens)), length=int(report.length),
        previous_token_best=best_previous, induction_best=(int(layer), int(head), float(score)))


def study_heads(engine, model, untrained, runs: schema.Runs,
                request: schema.Request) -> schema.Measures:
    """``glassllm.probes`` on the example model and the untrained one: head scores, a traced
    forward over the probe sequence, the held-out loss (and the tokens it reads as)."""
    from glassllm import probes

    length = min(PROBE_LENGTH, model.config.max_len // 2)
    # both models on the same probes: the example model's (word tokens of its tokenizer)
    alphabet = probes.probe_alphabet(model)
    report = probes.head_report(model, length=length, alphabet=alphabet)
    untrained_report = probes.head_report(untrained, length=length, alphabet=alphabet)
    probe_trace, untrained_probe_trace = engine.Tracer(), engine.Tracer()
    model.forward(report.tokens, trace=probe_trace)
    untrained.forward(report.tokens, trace=untrained_probe_trace)
    heldout = None
    if request.heldout is not None:
        window = heldout_window(model.config.max_len)
        text = heldout_text(Path(request.heldout))
        heldout = schema.HeldOutLoss(
            n_bytes=len(text), window=window, n_tokens=len(probes.heldout_tokens(model, text)[0]),
            loss=float(probes.heldout_loss(model, text, window)),
            untrained_loss=float(probes.heldout_loss(untrained, text, window)))
    return schema.Measures(
        report=head_report(report), untrained=head_report(untrained_report), length=length,
        probe_tokens=list(map(int, report.tokens)), probe_trace=trace_of(probe_trace),
        untrained_probe_trace=trace_of(untrained_probe_trace), heldout=heldout,
        untrained_loss=float(untrained.loss(runs.loss_tokens, runs.loss_targets)))


def prove_circuit(model, request: schema.Request, length: int) -> dict | None:
    """``glassllm.circuits`` on the example model: the ablation table, the composition, the
    patching example, the logit lens, the direct logit attribution and the heads' jobs on
    the featured prompt, as JSON-ready dicts (the model card's "Proving the circuit")."""
    from dataclasses import asdict

    from glassllm import Tracer, circuits, probes

    prompt = model.encode(circuits.FEATURED_PROMPT)  # the model's own tokenizer
    if model.config.n_layers < 2 or model.config.max_len < len(prompt):
        return None
    heldout = None if request.heldout is None else Path(request.heldout).read_bytes()
    table = circuits.ablation_table(model, heldout=heldout, length=length)
    heads = table.heads
    # the lens is scored against the patching example's answer: the token the sentence's
    # first copy gives away, which the model predicts at the last position

    def measured(function, *args, **kwargs) -> dict:
        # a measurement this model does not allow (e.g. patching where the clean and the
        # corrupted run predict the same byte) is reported with the engine's reason
        try:
            return asdict(function(*args, **kwargs))
        except ValueError as error:
            return {"unavailable": str(error)}

    # the featured prompt's last position: every head's attention row, and the model's top
    # next tokens (the journey page's pictures)
    tracer = Tracer()
    logits = model.forward(prompt, trace=tracer)[-1].astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    rows = [[np.asarray(tracer.get("attn.softmax", layer=layer, head=head).value)[-1].tolist()
             for head in range(model.config.n_heads)] for layer in range(model.config.n_layers)]
    top = [[int(t), float(probs[t])] for t in np.argsort(-probs, kind="stable")[:5]]
    patching = measured(circuits.activation_patching, model)
    return {"prompt": circuits.FEATURED_PROMPT, "corrupted": circuits.FEATURED_CORRUPTED,
            "tokens": list(map(int, prompt)), "rows": rows, "top": top,
            "qualifies": circuits.QUALIFIES, "collapses": circuits.COLLAPSES,
            "probe": probe_kind(model), "vocab": int(model.config.vocab_size),
            "ablation": asdict(table),
            "composition": measured(circuits.composition, model, length=length, heads=heads),
            "patching": patching,
            "lens": measured(circuits.logit_lens, model, target=patching.get("answer")),
            "attribution": measured(circuits.direct_logit_attribution, model),
            "jobs": measured(circuits.head_jobs, model, heads=heads),
            # the best head of each kind, qualifying or not: the journey draws it and says
            # its score against the rule
            "featured_jobs": measured(circuits.head_jobs, model,
                                      heads=circuits.featured_heads(table.clean)),
            # where copying holds and where it fails (the card's and the journey's limits)
            "limits": {**limits.measure_limits(model, probes, heldout, circuits.FEATURED_STORY,
                                               circuits.FEATURED_NAME),
                       "indirect": indirect(model, table, prompt)}}


def probe_kind(model) -> str:
    """What the probes are made of (``glassllm.probes.probe_alphabet``): ``"bytes"`` for a
    byte model, ``"words"`` for a subword model's word tokens, ``"ids"`` without a tokenizer."""
    try:
        tokenizer = model.tokenizer
    except ValueError:
        return "ids"
    return "bytes" if getattr(tokenizer, "kind", None) == "bytes" else "words"


def indirect(model, table, prompt) -> dict | None:
    """Zeroing the strongest induction head on the featured prompt: the logit of the model's
    top prediction there and each MLP's direct part of it (``limits.direct_and_indirect``)."""
    from glassllm import Tracer
    from glassllm.edits import Ablate

    scores = np.asarray(table.clean.induction, dtype=np.float64)  # (L, H)
    layer, head = (int(k) for k in np.unravel_index(np.argmax(scores), scores.shape))
    logits = model.forward(prompt)[-1]
    return limits.direct_and_indirect(model, Tracer, Ablate, list(prompt),
                                      int(np.argmax(logits)), layer, head)


def heldout_window(max_len: int) -> int:
    """Tokens per scored window of the held-out text: the model's context, as
    ``scripts/train_demo.py``'s ``measure()`` reads it for ``report.json``."""
    return max_len


def heldout_text(path: Path) -> bytes:
    """The held-out English as ``measure()`` reads it: its lines that are not empty, joined
    by newlines (so this build's figure is the report's, for the same weights)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line]
    return "\n".join(lines).encode("utf-8")


def weights(model) -> schema.ModelWeights:
    """The example model's parameters under the attribute names the worked numbers read."""
    return schema.ModelWeights(
        embed_tokens=np.asarray(model.embed_tokens), norm=np.asarray(model.norm),
        lm_head=np.asarray(model.lm_head),
        layers=[schema.BlockParams(**{name: np.asarray(getattr(block, name))
                                      for name in schema.BLOCK_PARAMS}) for block in model.layers],
        parameter_count=int(sum(v.size for v in model.state_dict().values())))


def cache_check(cached, full_steps) -> schema.CacheCheck:
    """The recording ``cached`` (a generation with the KV cache) against ``full_steps``, the
    same generation run with ``cache=False`` and traced: each cached step computed one row,
    which must be the full pass's last row."""
    worst = {"probs": 0.0, "logits": 0.0, "attn.softmax": 0.0}
    by_pass = {}
    for event in cached.events:
        by_pass.setdefault(event.gen, []).append(event)
    for gen, step in enumerate(full_steps):
        full = {(r.id, r.layer): np.asarray(r.value) for r in step.trace.records}
        for event in by_pass[gen]:
            if event.step not in worst:
                continue
            mine, theirs = np.asarray(event.value, np.float64), full[event.step, event.layer]
            if event.step != "probs":  # the full pass's last row(s): as many as this pass has
                theirs = theirs[..., -mine.shape[-2]:, :]
            worst[event.step] = max(worst[event.step], float(np.abs(mine - theirs).max()))
    tokens = [int(s.token) for s in full_steps]
    return schema.CacheCheck(tokens=len(tokens), same_tokens=tokens == list(cached.generated),
                             probs=worst["probs"], logits=worst["logits"],
                             attention=worst["attn.softmax"])


def record_replay(engine, model, untrained, settings: dict, request: schema.Request,
                  out: Path) -> tuple[list[schema.ReplayFile], schema.CacheCheck]:
    """The replay page's recordings, in the order it offers them: the example's generation
    (with at least ``replay_tokens`` tokens; the sampler draws in the same order, so the first
    ones are the step pages'), its loss run, and the same generation by the untrained model.
    The generations are recorded with the KV cache, as ``generate`` runs; the example's is
    also run as the full recompute, to say how closely the two agree."""
    from glassllm.recording import record_generation, record_loss, write_recording

    tokenizer = example_tokenizer(model)
    prompt = tokenizer.encode(settings["prompt"])
    room = settings["max_len"] - len(prompt)
    tokens = max(1, min(max(settings["tokens"], request.replay_tokens), room))

    sampling = dict(greedy=settings["greedy"], temperature=settings["temperature"],
                    top_k=settings["top_k"], seed=settings["sampling_seed"])

    # a subword model's recordings also say how each token reads, as `glassllm record` does
    named = None if getattr(tokenizer, "kind", None) == "bytes" else tokenizer

    def generation(which):
        return record_generation(which, prompt, tokens, cache=True, tokenizer=named, **sampling)

    cached = generation(model)
    full = list(model.generate(prompt, tokens, trace=True, cache=False, **sampling))
    recordings = [("generation", "replay.generation", cached),
                  ("loss", "replay.loss", record_loss(model, tokenizer.encode(settings["loss_text"]),
                                                          tokenizer=named)),
                  ("before", "replay.before", generation(untrained))]
    folder = out / schema.REPLAY_DIR
    folder.mkdir()
    listed = []
    for rec_id, label_key, rec in recordings:
        name = rec_id + request.replay_suffix
        write_recording(rec, folder / name, dtype=request.replay_dtypes.get(rec_id, "float32"))
        listed.append(schema.ReplayFile(id=rec_id, label_key=label_key, file=name))
    return listed, cache_check(cached, full)


def build(request: schema.Request, out: Path) -> schema.Output:
    """Everything the site reads from the engine (the recordings written into ``out`` on the
    way)."""
    package_dir = Path(request.package_dir).resolve()
    settings, hints = request.settings, request.hints
    if Path(__file__).resolve() != Path(request.child):
        # another docs_build sits beside the engine: its child is not the one that was asked
        raise Refusal(f"the docs_build child that Python runs is {Path(__file__).resolve()}, not "
                      f"{request.child} of the plugin that runs the build; build from one "
                      f"checkout (its root holding both glassllm and docs_build)")
    announce("importing the engine")
    check_engine_syntax(package_dir)
    engine = import_engine(package_dir)
    try:
        announce("checking the '# @step' markers")
        catalog = collect_steps(package_dir, request.allow_stale, hints["index"])
    except Refusal:
        raise
    except Exception as error:
        raise EngineError("checking the '# @step' markers", error) from error
    try:
        announce("loading the example model")
        model = load_model(engine, settings, hints)
        tokenizer = example_tokenizer(model)
        check_lengths(tokenizer, settings, hints)
        labels, token_bytes = token_table(tokenizer, model.config.vocab_size)
        split = tokenization(tokenizer, settings["prompt"])
        untrained = untrained_model(engine, model, settings, request.card)
    except Refusal:
        raise
    except Exception as error:
        raise EngineError("loading the example model", error) from error
    try:
        announce("the example run (generation, traced forward pass, loss)")
        runs = run_example(engine, model, settings)
    except Exception as error:
        raise EngineError("the example run", error) from error
    try:
        announce("measuring the heads with glassllm.probes")
        measures = study_heads(engine, model, untrained, runs, request)
        traced_tokens = runs.prompt_tokens + [
            g.token for g in runs.generation[:settings["traced_step"]]]
        untrained_step = next(untrained.generate(traced_tokens, 1, greedy=True))
        untrained_facts = schema.Untrained(next_probs=np.asarray(untrained_step.probs),
                                           embed_tokens=np.asarray(untrained.embed_tokens))
    except Exception as error:
        raise EngineError("measuring the example model with glassllm.probes", error) from error
    try:
        announce("proving the circuit with glassllm.circuits")
        proven = prove_circuit(model, request, measures.length)
    except Exception as error:
        raise EngineError("proving the circuit with glassllm.circuits", error) from error
    try:
        announce("recording the replay")
        replay, checked = record_replay(engine, model, untrained, settings, request, out)
    except Exception as error:
        raise EngineError("recording the replay", error) from error
    try:  # on a model of its own: the update changes the weights
        from glassllm import backward, optim, recording, train  # noqa: F401  (engine.<module>)

        traced = runs.generation[settings["traced_step"]].token
        training = training_step.training_step(
            engine, load_model(engine, settings, hints), traced_tokens,
            traced_tokens[1:] + [traced], package_dir)
        # the replay plays the same step: forward, gradients in reverse, the update
        name = "training" + request.replay_suffix
        training_step.record_training_step(engine, load_model(engine, settings, hints),
                                           traced_tokens, traced, out / schema.REPLAY_DIR, name,
                                           request.replay_dtypes.get("training", "float32"))
        replay.append(schema.ReplayFile(id="training", label_key="replay.training", file=name))
    except Exception as error:
        raise EngineError("the training step (GlassLM.gradients, glassllm.optim.AdamW)",
                          error) from error
    config = schema.ModelConfig(**{name: getattr(model.config, name)
                                   for name in schema.MODEL_CONFIG})
    return schema.Output(catalog=catalog, config=config, token_labels=labels,
                         token_bytes=token_bytes, tokenization=split, runs=runs,
                         weights=weights(model), measures=measures, untrained=untrained_facts,
                         replay=replay, cache_check=checked, circuits=proven,
                         training=training)


def engine_frame(error: BaseException, package_dir: Path) -> tuple[str | None, int | None]:
    """The file (relative to the engine's parent folder) and line of the innermost frame of
    ``error`` in the engine, else of its innermost frame; a SyntaxError's own place."""
    if isinstance(error, SyntaxError) and error.filename:
        return _shown(Path(error.filename), package_dir), error.lineno
    frames = traceback.extract_tb(error.__traceback__)
    inside = [f for f in frames if package_dir in Path(f.filename).resolve().parents]
    frame = (inside or frames or [None])[-1]
    return (None, None) if frame is None else (_shown(Path(frame.filename), package_dir), frame.lineno)


def _shown(path: Path, package_dir: Path) -> str:
    path = path.resolve()
    try:
        return path.relative_to(package_dir.parent).as_posix()
    except ValueError:
        return str(path)


def error_report(error: BaseException, package_dir: Path) -> schema.ErrorReport:
    if isinstance(error, Refusal):
        return schema.ErrorReport(type="Refusal", message=str(error))
    # anything else is a bug of this module, reported the same way
    stage = error.stage if isinstance(error, EngineError) else "docs_build/engine/child.py"
    cause = error.error if isinstance(error, EngineError) else error
    file, line = engine_frame(cause, package_dir)
    message = (getattr(cause, "msg", None) if isinstance(cause, SyntaxError) else None) or str(cause)
    return schema.ErrorReport(type=type(cause).__name__, message=message, file=file, line=line,
                              stage=stage)


def exit_with_the_build() -> None:
    """End this process when the build that waits for it ends: the build holds our stdin
    open and never writes to it, so end of file means nobody will read what we write (an
    engine that loops forever must not outlive ``mkdocs serve``)."""
    def watch() -> None:
        while os.read(0, 4096):  # the raw descriptor: no buffer lock held at shutdown
            pass
        os._exit(2)

    threading.Thread(target=watch, name="exit-with-the-build", daemon=True).start()


def main(argv: list[str]) -> int:
    exit_with_the_build()
    out = Path(argv[0])
    request = schema.read_json(schema.Request, out / schema.REQUEST)
    try:
        output = build(request, out)
    except Exception as error:
        schema.write_json(error_report(error, Path(request.package_dir).resolve()),
                          out / schema.ERROR)
        return 1
    announce("writing its answer")
    schema.write_output(output, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
