"""The child process of the docs build: the one ``docs_build`` module that imports ``glassllm``.

``docs_build.example.load_example`` runs ``python -m docs_build.example_child OUTDIR`` in a fresh
interpreter, with the site's engine first on ``sys.path`` (cwd = the folder holding
``package_dir``), so an edited engine is simply the code that runs: no module is ever reloaded.
The parent writes ``OUTDIR/request.json`` (the resolved example settings, the engine folder,
the held-out text and training card it chose, the replay's token count and file suffix, and
the hints its messages give); this module checks the engine, runs everything the pages need
and writes, into OUTDIR:

- ``meta.json``: the catalog (``STEPS`` with equations, checked against the markers and the
  packaged index), the model's config and parameter count, the tokens, losses and head scores,
  and an index of every array in ``arrays.npz``; written last, so its presence means success;
- ``arrays.npz``: the traces the pages read (the traced generation step, the loss run, the
  probe forward of the trained and the untrained model, one array per record), the example
  model's weights (the worked entries redo products with them), and what the texts say about
  the untrained model (its embeddings and next-token probabilities on the traced tokens);
- ``replay/<id><suffix>``: the replay page's recordings, written by
  ``glassllm.recording.write_recording``; the parent copies their bytes without decoding them.

The step pages read the same values from ``arrays.npz`` instead of the recordings: a recording
keeps every generation step and its format is the replay's to change, while the pages need one
traced step plus the probe traces, which no recording holds; ``.npz`` is read with NumPy alone.

A failure is written as ``error.json`` (``type``, ``message``, ``file``, ``line``, ``stage``)
and the exit code is 1; the parent turns it into one ``DocsBuildError``. This module imports
nothing from ``docs_build``: what it prints and writes depends only on the engine, this file
and the request, which is what the parent's cache key hashes.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

PROBE_LENGTH = 24  # bytes of the probe's random string; the probe sequence writes it twice
# the parameters of a block as glassllm.nn.BlockWeights names them (worked.py reads them)
BLOCK_WEIGHTS = ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down")
SYNTAX_STAGE = "compiling the engine"  # the parent words this stage's errors differently


class Refusal(Exception):
    """A problem with a finished message for the person building the site (no file:line)."""


class EngineError(Exception):
    """An exception of the engine's own code, with the stage of the build it broke."""

    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(stage)
        self.stage, self.error = stage, error


def check_engine_syntax(package_dir: Path) -> None:
    """Compile every engine module, so a syntax error is named by its file and line (also the
    modules the package does not import: the marker scan reads them all)."""
    for path in sorted(package_dir.glob("*.py")):
        try:
            compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:  # ValueError: a NUL byte (Python < 3.12)
            if not isinstance(error, SyntaxError):
                error = SyntaxError(str(error), (str(path), None, None, None))
            raise EngineError(SYNTAX_STAGE, error) from error


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


def collect_steps(package_dir: Path, allow_stale: bool, index_command: str) -> dict:
    """``scan_markers()`` checked against ``load_step_index()`` and ``STEPS``: the catalog."""
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
    stale = None
    if index != markers:
        changes = steps.describe_index_changes(index, markers)
        stale = ("glassllm/step_index.json is stale (" + "; ".join(changes[:5])
                 + ("; …" if len(changes) > 5 else "")
                 + f"): run {index_command} and commit the result")
        if not allow_stale:
            raise Refusal(stale)
    layer_steps, head_steps = set(steps.LAYER_STEPS), set(steps.HEAD_STEPS)
    return {"stale_index": stale, "steps": [
        {"id": step_id, "position": position, "latex": info.latex, "plain": info.plain,
         "file": markers[step_id]["file"], "line": int(markers[step_id]["line"]),
         "is_layer_step": step_id in layer_steps, "has_head_axis": step_id in head_steps}
        for position, (step_id, info) in enumerate(steps.STEPS.items())]}


def viewer_table() -> dict:
    """``assets/replay/steps.json``'s content: the step table and one label per byte token, which
    the replay's JavaScript reads instead of copying them (``docs_build.replay.steps_json``)."""
    from glassllm.steps import step_table
    from glassllm.tokenizer import BYTE_VOCAB_SIZE, token_label

    return {"steps": step_table(),
            "token_labels": [token_label(token) for token in range(BYTE_VOCAB_SIZE)]}


class Arrays:
    """The arrays of ``arrays.npz`` under keys of their own, with the index meta.json keeps."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, key: str, value) -> str:
        self.arrays[key] = np.asarray(value)
        return key

    def trace(self, name: str, tracer) -> list[dict]:
        """A tracer's records in order: each one's id, layer, head and array key."""
        return [{"id": r.id, "layer": r.layer, "head": r.head, "order": r.order,
                 "array": self.add(f"{name}/{i}", r.value)} for i, r in enumerate(tracer.records)]


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


def random_config(engine, settings: dict):
    return engine.Config(vocab_size=engine.BYTE_VOCAB_SIZE, d_model=settings["d_model"],
                         n_layers=settings["n_layers"], n_heads=settings["n_heads"],
                         n_kv_heads=settings["n_kv_heads"], max_len=settings["max_len"],
                         seed=settings["seed"])


def run_example(engine, model, settings: dict, arrays: Arrays) -> dict:
    """The traced generation (the forward pages show its ``traced_step``) and the traced loss."""
    start = time.perf_counter()
    prompt = engine.encode(settings["prompt"])
    generation = list(model.generate(
        prompt, settings["tokens"], greedy=settings["greedy"],
        temperature=settings["temperature"], top_k=settings["top_k"],
        seed=settings["sampling_seed"], trace=True, cache=False))
    text = engine.encode(settings["loss_text"])
    loss_tokens, loss_targets = text[:-1], text[1:]
    loss_trace = engine.Tracer()
    loss = model.loss(loss_tokens, loss_targets, trace=loss_trace)
    seconds = time.perf_counter() - start
    traced = settings["traced_step"]
    return {"prompt_tokens": list(map(int, prompt)), "seconds": seconds,
            "generation": [{"token": int(step.token), "probs": arrays.add(f"probs/{i}", step.probs)}
                           for i, step in enumerate(generation)],
            "traced_trace": arrays.trace("traced", generation[traced].trace),
            "loss_tokens": list(map(int, loss_tokens)), "loss_targets": list(map(int, loss_targets)),
            "loss": float(loss), "loss_trace": arrays.trace("loss", loss_trace)}


def head_report(report) -> dict:
    return {"previous_token": report.previous_token.tolist(), "induction": report.induction.tolist(),
            "copy_first": float(report.copy_first), "copy_second": float(report.copy_second),
            "tokens": list(map(int, report.tokens)), "length": int(report.length),
            "best_previous_token": list(report.best_previous_token()),
            "best_induction": list(report.best_induction())}


def study_heads(engine, model, untrained, run: dict, request: dict, arrays: Arrays) -> dict:
    """``glassllm.probes`` on the example model and the untrained one: head scores, a traced
    forward over the probe sequence, held-out losses, the card's prompts continued."""
    from glassllm import probes

    length = min(PROBE_LENGTH, model.config.max_len // 2)
    report = probes.head_report(model, length=length)
    untrained_report = probes.head_report(untrained, length=length)
    probe_trace, untrained_probe_trace = engine.Tracer(), engine.Tracer()
    model.forward(report.tokens, trace=probe_trace)
    untrained.forward(report.tokens, trace=untrained_probe_trace)
    card = request["card"]
    heldout = None
    if request["heldout"] is not None:
        text = Path(request["heldout"]).read_bytes()
        window = heldout_window(card, model.config.max_len)
        heldout = {"n_bytes": len(text), "window": window,
                   "loss": float(probes.heldout_loss(model, text, window)),
                   "untrained_loss": float(probes.heldout_loss(untrained, text, window))}
    return {"report": head_report(report), "untrained": head_report(untrained_report),
            "length": length, "probe_tokens": list(map(int, report.tokens)),
            "probe_trace": arrays.trace("probe", probe_trace),
            "untrained_probe_trace": arrays.trace("untrained_probe", untrained_probe_trace),
            "heldout": heldout,
            "untrained_loss": float(untrained.loss(run["loss_tokens"], run["loss_targets"])),
            "continuations": continuations(engine, model, card)}


def heldout_window(card: dict | None, max_len: int) -> int:
    """The training sequence length (as the card's held-out figure used), within max_len."""
    seq_len = ((card or {}).get("training") or {}).get("seq_len")
    if isinstance(seq_len, int) and not isinstance(seq_len, bool) and 1 <= seq_len <= max_len:
        return seq_len
    return max_len


def continuations(engine, model, card: dict | None) -> list:
    """The card's prompts, each continued greedily by ``model`` now, as many bytes as the
    card's own continuation (within ``max_len``): the build's words, not the card's."""
    prompts = ((card or {}).get("final") or {}).get("continuations") or {}
    out = []
    for prompt, text in prompts.items() if isinstance(prompts, dict) else ():
        ids = engine.encode(str(prompt))
        n = min(len(engine.encode(str(text))), model.config.max_len - len(ids))
        if not ids or n < 1:
            continue
        out.append([str(prompt), [int(step.token) for step in model.generate(ids, n, greedy=True)]])
    return out


def weights(model, arrays: Arrays) -> dict:
    """The example model's parameters under the attribute names worked.py reads."""
    blocks = [{name: arrays.add(f"weights/layers/{i}/{name}", getattr(block, name))
               for name in BLOCK_WEIGHTS} for i, block in enumerate(model.layers)]
    return {"embed_tokens": arrays.add("weights/embed_tokens", model.embed_tokens),
            "norm": arrays.add("weights/norm", model.norm),
            "lm_head": arrays.add("weights/lm_head", model.lm_head), "layers": blocks,
            "parameter_count": int(sum(v.size for v in model.state_dict().values()))}


def record_replay(engine, model, untrained, settings: dict, request: dict, out: Path) -> list:
    """The replay page's recordings, in the order it offers them: the example's generation
    (with at least ``replay_tokens`` tokens; the sampler draws in the same order, so the first
    ones are the step pages'), its loss run, and the same generation by the untrained model."""
    from glassllm.recording import record_generation, record_loss, write_recording

    prompt = engine.encode(settings["prompt"])
    room = settings["max_len"] - len(prompt)
    tokens = max(1, min(max(settings["tokens"], request["replay_tokens"]), room))

    def generation(which):
        return record_generation(which, prompt, tokens, greedy=settings["greedy"],
                                 temperature=settings["temperature"], top_k=settings["top_k"],
                                 seed=settings["sampling_seed"])

    recordings = [("generation", "replay.generation", generation(model)),
                  ("loss", "replay.loss", record_loss(model, engine.encode(settings["loss_text"]))),
                  ("before", "replay.before", generation(untrained))]
    folder = out / "replay"
    folder.mkdir()
    listed = []
    for rec_id, label_key, rec in recordings:
        name = rec_id + request["replay_suffix"]
        write_recording(rec, folder / name, dtype=request["replay_dtypes"].get(rec_id, "float32"))
        listed.append({"id": rec_id, "label_key": label_key, "file": name})
    return listed


def build(request: dict, out: Path) -> dict:
    """Everything the site reads from the engine, as ``meta.json``'s content (arrays and
    recordings written into ``out`` on the way)."""
    package_dir = Path(request["package_dir"]).resolve()
    settings, hints = request["settings"], request["hints"]
    if Path(__file__).resolve() != Path(request["child"]):
        # another docs_build sits beside the engine: its child is not the one that was asked
        raise Refusal(f"the docs_build child that Python runs is {Path(__file__).resolve()}, not "
                      f"{request['child']} of the plugin that runs the build; build from one "
                      f"checkout (its root holding both glassllm and docs_build)")
    check_engine_syntax(package_dir)
    engine = import_engine(package_dir)
    try:
        catalog = collect_steps(package_dir, request["allow_stale"], hints["index"])
        table = viewer_table()
    except Refusal:
        raise
    except Exception as error:
        raise EngineError("checking the '# @step' markers", error) from error
    arrays = Arrays()
    try:
        model = load_model(engine, settings, hints)
    except Refusal:
        raise
    except Exception as error:
        raise EngineError("loading the example model", error) from error
    try:
        run = run_example(engine, model, settings, arrays)
    except Exception as error:
        raise EngineError("the example run", error) from error
    try:
        # the untrained model: random weights for example.seed, in the example model's shape
        untrained = engine.GlassLM(replace(model.config, seed=settings["seed"]))
        study = study_heads(engine, model, untrained, run, request, arrays)
        traced_tokens = run["prompt_tokens"] + [
            g["token"] for g in run["generation"][:settings["traced_step"]]]
        untrained_step = next(untrained.generate(traced_tokens, 1, greedy=True))
        untrained_facts = {
            "next_probs": arrays.add("untrained/next_probs", untrained_step.probs),
            "embed_tokens": arrays.add("untrained/embed_tokens", untrained.embed_tokens)}
    except Exception as error:
        raise EngineError("measuring the example model with glassllm.probes", error) from error
    try:
        replay = record_replay(engine, model, untrained, settings, request, out)
    except Exception as error:
        raise EngineError("recording the replay", error) from error
    meta = {"catalog": catalog, "config": asdict(model.config), "run": run, "study": study,
            "weights": weights(model, arrays), "replay": replay, "untrained": untrained_facts,
            "step_table": table}
    np.savez(out / "arrays.npz", **arrays.arrays)
    return meta


def engine_frame(error: BaseException, package_dir: Path) -> tuple[str | None, int | None]:
    """The file (relative to the engine's parent folder) and line of the innermost frame of
    ``error`` in the engine, else of its innermost frame; a SyntaxError's own place."""
    if isinstance(error, SyntaxError) and error.filename:
        return _shown(Path(error.filename), package_dir), error.lineno
    frames = traceback.extract_tb(error.__traceback__)
    inside = [f for f in frames if Path(f.filename).resolve().parent == package_dir]
    frame = (inside or frames or [None])[-1]
    return (None, None) if frame is None else (_shown(Path(frame.filename), package_dir), frame.lineno)


def _shown(path: Path, package_dir: Path) -> str:
    path = path.resolve()
    try:
        return path.relative_to(package_dir.parent).as_posix()
    except ValueError:
        return str(path)


def error_report(error: BaseException, package_dir: Path) -> dict:
    if isinstance(error, Refusal):
        return {"type": "Refusal", "message": str(error), "file": None, "line": None, "stage": None}
    # anything else is a bug of this module, reported the same way
    stage = error.stage if isinstance(error, EngineError) else "docs_build/example_child.py"
    cause = error.error if isinstance(error, EngineError) else error
    file, line = engine_frame(cause, package_dir)
    message = (getattr(cause, "msg", None) if isinstance(cause, SyntaxError) else None) or str(cause)
    return {"type": type(cause).__name__, "message": message, "file": file, "line": line,
            "stage": stage}


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    request = json.loads((out / "request.json").read_text(encoding="utf-8"))
    try:
        meta = build(request, out)
    except Exception as error:
        report = error_report(error, Path(request["package_dir"]).resolve())
        (out / "error.json").write_text(json.dumps(report), encoding="utf-8")
        return 1
    (out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
