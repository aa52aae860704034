"""Everything the site shows of the engine, from one child process: ``load_example``.

The plugin and the ``generate`` command call ``load_example(settings, package_dir,
allow_stale=...)``. It runs ``python -m docs_build.example_child`` (the only ``docs_build``
module that imports ``glassllm``) in a fresh interpreter, with a timeout, and reads what the
child wrote (JSON, ``.npz``, the replay's recording files) into the objects the renderers
read: the ``StepCatalog``, the ``ExampleRun`` (one traced generation and one traced loss), the
``HeadStudy`` and the replay's recordings. A failed child becomes one ``DocsBuildError``
naming the file and line.

The result is cached by ``example_key``: the hash of the engine's sources, the child module,
the settings (with the checkpoint's hash), the held-out text and card, and the Python and
NumPy versions. In memory (``mkdocs serve`` rebuilds), and on disk under ``cache_dir()``
(another build of the same inputs, e.g. the test suite's many builds): each entry is written
into a private temporary folder and renamed into place whole, so an entry is complete or
absent. ``GLASSLLM_DOCS_CACHE=off`` turns the disk cache off; a path moves it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from . import model_source
from .catalog import INDEX_COMMAND, DocsBuildError, Step, StepCatalog
from .heads import HeadReport, HeadStudy, HeldOut, featured_heads, load_card
from .replay import REPLAY_TOKENS, SITE_DTYPES, SITE_SUFFIX, ReplayRecording

VOCAB_SIZE = 256  # the byte tokenizer's vocabulary; not an option
SETTINGS_HINT = "the example settings under plugins.glassllm.example in mkdocs.yml"

# Where a step runs, as the pages name it (keys of the UI strings "where.<key>").
WHERE_MODEL, WHERE_BLOCK, WHERE_GENERATION, WHERE_TRAINING = "model", "block", "generation", "training"

CHILD_MODULE = "docs_build.example_child"  # run as python -m, the engine's folder first
CHILD_FILE = Path(__file__).resolve().parent / "example_child.py"
DEFAULT_TIMEOUT = 600  # seconds the child may take; the default example takes a few
CACHE_ENV = "GLASSLLM_DOCS_CACHE"  # "off", or the disk cache's folder
CACHE_ENTRIES = 8  # disk entries kept; older ones are removed
_MEMORY: dict[str, "ExampleData"] = {}  # newest only: an old engine's run is never wanted


@dataclass(frozen=True)
class ExampleSettings:
    """The example as the run uses it: sizes resolved (from the checkpoint, if any).

    ``ExampleSettings()`` is the random model; the plugin builds its settings from mkdocs.yml
    with ``settings_from_options`` (whose default is the demo checkpoint).
    """

    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    max_len: int = 64
    seed: int = 0  # model weights
    prompt: str = "The cat sat"
    tokens: int = 4  # tokens to generate
    traced_step: int = 0  # which generation step the forward snapshots come from
    greedy: bool = False
    temperature: float = 1.0
    top_k: int | None = None
    sampling_seed: int = 0
    loss_text: str = "The cat sat."  # the loss predicts each next byte of this text
    model: str = model_source.RANDOM  # as mkdocs.yml gives it: "demo", "random" or a path
    checkpoint: str | None = None  # the checkpoint folder (absolute); None for random weights
    checkpoint_hash: str | None = None  # of the checkpoint's files: part of the cache key

    def check(self) -> None:
        """Reject settings the run cannot use, naming the option to change."""
        if not self.prompt:
            raise DocsBuildError(f"example.prompt is empty; give a few words in {SETTINGS_HINT}")
        if self.tokens < 1:
            raise DocsBuildError(f"example.tokens must be at least 1 (got {self.tokens}): the "
                                 f"probs and sample steps need a generated token")
        if not 0 <= self.traced_step < self.tokens:
            raise DocsBuildError(f"example.traced_step must be in [0, {self.tokens - 1}] "
                                 f"(one of the {self.tokens} generated tokens), got {self.traced_step}")
        if self.sampling_seed < 0:
            raise DocsBuildError(f"example.sampling_seed must be a non-negative integer (got "
                                 f"{self.sampling_seed}); change it in {SETTINGS_HINT}")
        if self.top_k is not None and not 1 <= self.top_k <= VOCAB_SIZE:
            raise DocsBuildError(f"example.top_k must be in [1, {VOCAB_SIZE}] (got {self.top_k}) "
                                 f"or left out; change it in {SETTINGS_HINT}")
        if len(self.loss_text.encode("utf-8")) < 2:
            raise DocsBuildError("example.loss_text needs at least 2 bytes: the loss predicts "
                                 "each byte from the ones before it")
        prompt_len = len(self.prompt.encode("utf-8"))
        if prompt_len + self.tokens > self.max_len:
            raise DocsBuildError(f"example.prompt ({prompt_len} bytes) + example.tokens "
                                 f"({self.tokens}) exceeds example.max_len ({self.max_len})")
        if len(self.loss_text.encode("utf-8")) - 1 > self.max_len:
            raise DocsBuildError(f"example.loss_text is longer than example.max_len + 1 "
                                 f"({self.max_len + 1} bytes); shorten it or raise max_len")


def settings_from_options(options: dict, root: Path,
                          package_dir: Path | None = None) -> ExampleSettings:
    """``ExampleSettings`` from ``plugins.glassllm.example`` of mkdocs.yml (``root`` is its
    folder, ``package_dir`` the engine's, by default ``root/glassllm``): resolves ``model``
    and takes the sizes from the checkpoint, if any, without importing the engine.

    Raises ``DocsBuildError`` for a bad ``model`` or size options set beside a checkpoint.
    """
    options = dict(options)
    model = options.pop("model", model_source.DEMO)
    package_dir = Path(package_dir) if package_dir is not None else Path(root) / "glassllm"
    folder = model_source.checkpoint_folder(model, Path(root), package_dir)
    options.update(model_source.resolve_sizes(model, folder, options))
    options["temperature"] = float(options.get("temperature", 1.0))
    return ExampleSettings(**options, model=model,
                           checkpoint=None if folder is None else str(folder),
                           checkpoint_hash=None if folder is None else model_source.folder_hash(folder))


@dataclass(frozen=True)
class Snapshot:
    """One recorded value as a page shows it: from which run, which layer, which rows."""

    step_id: str
    layer: int | None
    value: np.ndarray
    run: str  # "generation" or "loss"
    row_tokens: tuple[int, ...]  # the token of each sequence position of this run


@dataclass(frozen=True)
class ModelConfig:
    """The example model's ``glassllm.Config``, as the child wrote it."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    max_len: int
    d_ff: int
    rope_theta: float
    norm_eps: float
    seed: int
    tie_word_embeddings: bool

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class Record:
    """One snapshot of a traced run, as ``glassllm.StepRecord`` has it."""

    id: str
    layer: int | None
    value: np.ndarray
    order: int
    head: int | None = None


@dataclass
class Trace:
    """A traced run's records in execution order, read as ``glassllm.Tracer`` reads them."""

    records: list[Record]

    def get(self, step_id: str, layer: int | None = None, head: int | None = None) -> Record:
        """The first record of ``step_id`` in ``layer`` (any, if None); ``head`` slices a full
        head snapshot's first axis or matches a record taken for that head."""
        for rec in self.records:
            if rec.id != step_id or (layer is not None and rec.layer != layer):
                continue
            if head is None or rec.head == head:
                return rec
            if rec.head is None:
                return Record(rec.id, rec.layer, rec.value[head], rec.order, head)
        raise KeyError(f"no record of step {step_id!r}" + ("" if layer is None else f" in layer "
                                                            f"{layer}"))


@dataclass(frozen=True)
class Generated:
    """One generated token, the distribution it was drawn from, and its trace (the traced
    step's only: the pages show one)."""

    token: int
    probs: np.ndarray  # (V,)
    trace: Trace | None


@dataclass(frozen=True)
class BlockParams:
    attn_norm: np.ndarray
    wq: np.ndarray
    wk: np.ndarray
    wv: np.ndarray
    wo: np.ndarray
    mlp_norm: np.ndarray
    w_gate: np.ndarray
    w_up: np.ndarray
    w_down: np.ndarray


@dataclass(frozen=True)
class ModelWeights:
    """The example model's parameters, named as ``glassllm.GlassLM`` names them."""

    embed_tokens: np.ndarray
    layers: list[BlockParams]
    norm: np.ndarray
    lm_head: np.ndarray
    parameter_count: int


@dataclass
class ExampleRun:
    settings: ExampleSettings
    config: ModelConfig
    prompt_tokens: list[int]
    generation: list[Generated]
    loss_tokens: list[int]
    loss_targets: list[int]
    loss: float
    loss_trace: Trace
    seconds: float
    model: ModelWeights | None = None
    # the untrained model (random weights for example.seed): its next-token probabilities on
    # the traced step's tokens, and its embedding matrix
    untrained_next_probs: np.ndarray | None = None
    untrained_embed_tokens: np.ndarray | None = None
    snapshots: dict[str, list[Snapshot]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)

    @property
    def traced(self):
        """The generation step whose trace the forward steps' pages show."""
        return self.generation[self.settings.traced_step]

    @property
    def traced_tokens(self) -> list[int]:
        """The sequence the traced generation step read: the prompt and earlier tokens."""
        return self.prompt_tokens + [s.token for s in self.generation[:self.settings.traced_step]]

    @property
    def generated_tokens(self) -> list[int]:
        return [step.token for step in self.generation]



@dataclass
class ExampleData:
    """What ``load_example`` gives: all the site reads of the engine."""

    catalog: StepCatalog
    run: ExampleRun
    study: HeadStudy
    replay: list[ReplayRecording]  # in the order the replay page offers them
    source: str  # "child", "memory" or "disk": where this build got it
    seconds: float = 0.0  # the child's wall time, when this build ran it
    # assets/replay/steps.json's content, from the child (example_child.viewer_table)
    step_table: dict = field(default_factory=dict)




def source_hash(folder: Path) -> str:
    """A hash of a folder's immediate ``.py`` and ``.json`` files: for the engine, every file
    that decides its behaviour and marker lines."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).iterdir()):
        if path.suffix in (".py", ".json") and path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_dir() -> Path | None:
    """Where finished child outputs are kept: ``$GLASSLLM_DOCS_CACHE``, else the user's cache
    folder (``$XDG_CACHE_HOME`` or ``~/.cache``) ``/glassllm-docs``; None when set to off."""
    setting = os.environ.get(CACHE_ENV, "")
    if setting.lower() in ("off", "0", "no", "false"):
        return None
    if setting:
        return Path(setting)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "glassllm-docs"


def _request(settings: ExampleSettings, package_dir: Path, allow_stale: bool) -> dict:
    folder = None if settings.checkpoint is None else Path(settings.checkpoint)
    heldout = heldout_source(folder, package_dir)
    return {"package_dir": str(package_dir), "child": str(CHILD_FILE),
            "allow_stale": bool(allow_stale), "settings": asdict(settings),
            "heldout": None if heldout is None else str(heldout), "card": load_card(folder),
            "replay_tokens": REPLAY_TOKENS, "replay_suffix": SITE_SUFFIX,
            "replay_dtypes": SITE_DTYPES,
            "hints": {"settings": SETTINGS_HINT, "model": model_source.MODEL_HINT,
                      "index": INDEX_COMMAND}}


def heldout_source(folder: Path | None, package_dir: Path) -> Path | None:
    """The held-out text: the checkpoint's own, else the demo checkpoint's (as the text the
    random model is measured on), else ``None``."""
    candidates = [Path(folder)] if folder is not None else []
    candidates.append(Path(package_dir).joinpath(*model_source.DEMO_FOLDER))
    for candidate in candidates:
        if (candidate / model_source.HELDOUT_FILE).is_file():
            return candidate / model_source.HELDOUT_FILE
    return None


def _key_of(request: dict) -> str:
    """The disk cache key: every input of the child's output, by content (no paths, so two
    copies of one checkout share it)."""
    settings = dict(request["settings"], checkpoint=None)  # its content: checkpoint_hash
    heldout = request["heldout"]
    content = {**request, "package_dir": None, "child": None, "settings": settings,
               "heldout": None if heldout is None else hashlib.sha256(
                   Path(heldout).read_bytes()).hexdigest(),
               "engine": source_hash(Path(request["package_dir"])),
               "child_source": hashlib.sha256(CHILD_FILE.read_bytes()).hexdigest(),
               "python": sys.version, "numpy": np.__version__, "machine": platform.machine()}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def example_key(package_dir: Path, settings: ExampleSettings, allow_stale: bool = False) -> str:
    """The key ``load_example`` caches its result under."""
    return _key_of(_request(settings, Path(package_dir).resolve(), allow_stale))


def load_example(settings: ExampleSettings, package_dir: Path, *, allow_stale: bool = False,
                 timeout: float = DEFAULT_TIMEOUT) -> ExampleData:
    """The catalog, the example run, the head study and the replay's recordings of the engine
    in ``package_dir`` with ``settings``; cached (see the module docstring).

    ``allow_stale`` (``mkdocs serve``): a stale step index is noted in ``catalog.stale_index``
    (the steps carry the markers' own lines) instead of raised. Raises ``DocsBuildError`` for
    bad settings, markers, index or checkpoint, and for an engine that fails (with its file
    and line) or a child that times out or crashes.
    """
    settings.check()
    package_dir = Path(package_dir).resolve()
    request = _request(settings, package_dir, allow_stale)
    key = _key_of(request)
    memory_key = hashlib.sha256(f"{key}{package_dir}{settings!r}".encode()).hexdigest()
    if memory_key in _MEMORY:
        return replace(_MEMORY[memory_key], source="memory")
    root = cache_dir()
    entry = None if root is None else root / key
    data = None
    if entry is not None and (entry / "meta.json").is_file():
        try:
            data = read_output(entry, settings, package_dir, request, "disk")
            os.utime(entry)  # pruning keeps the recently used entries
        except (OSError, ValueError, KeyError, TypeError):  # damaged (or pruned meanwhile)
            shutil.rmtree(entry, ignore_errors=True)
    if data is None:
        data = _run_child(request, settings, package_dir, timeout, root, entry)
    _MEMORY.clear()
    _MEMORY[memory_key] = data
    return data


def clear_memory_cache() -> None:
    """Forget the in-memory result (a cold build in the same process, as the benchmark times)."""
    _MEMORY.clear()


def _run_child(request: dict, settings: ExampleSettings, package_dir: Path, timeout: float,
               root: Path | None, entry: Path | None) -> ExampleData:
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".child-", dir=root))  # private (0700), same disk
    try:
        (work / "request.json").write_text(json.dumps(request), encoding="utf-8")
        start = time.perf_counter()
        _call_child(work, package_dir, timeout)
        data = read_output(work, settings, package_dir, request, "child")
        data.seconds = time.perf_counter() - start
        if entry is not None:
            try:
                work.rename(entry)  # whole or not at all; a parallel build may have won
            except OSError:
                pass
            else:
                _prune(root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return data


def _call_child(work: Path, package_dir: Path, timeout: float) -> None:
    env = dict(os.environ)
    # the engine comes from the cwd (first on sys.path with -m); docs_build from beside it
    # or, for a site without one, from this package's folder
    env["PYTHONPATH"] = os.pathsep.join(
        [str(CHILD_FILE.parent.parent)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    command = [sys.executable, "-m", CHILD_MODULE, str(work)]
    try:
        result = subprocess.run(command, cwd=package_dir.parent, env=env, capture_output=True,
                                text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DocsBuildError(
            f"the example child ({' '.join(['python', '-m', CHILD_MODULE])}) did not finish "
            f"within {timeout:g} s (plugins.glassllm.example_timeout in mkdocs.yml); raise "
            f"that timeout, or make the example smaller in {SETTINGS_HINT}") from None
    report = work / "error.json"
    if report.is_file():
        raise DocsBuildError(_error_message(json.loads(report.read_text(encoding="utf-8"))))
    if result.returncode != 0 or not (work / "meta.json").is_file():
        tail = "\n".join(result.stderr.strip().splitlines()[-8:]) or "(nothing on stderr)"
        how = (f"was killed by signal {-result.returncode}" if result.returncode < 0
               else f"exited with code {result.returncode}")
        raise DocsBuildError(f"the example child (python -m {CHILD_MODULE}) {how} and no error "
                             f"report; its last lines of stderr:\n{tail}")


def _error_message(report: dict) -> str:
    """One build error from the child's ``error.json`` (see docs_build/example_child.py)."""
    if report["type"] == "Refusal":  # the child's message is the whole story
        return report["message"]
    place = report["file"] + (f":{report['line']}" if report["line"] else "") if report["file"] \
        else "an unknown place"
    if report["stage"] == "compiling the engine":
        return (f"{place}: {report['type']}: {report['message']}; fix the engine module, then "
                f"build again")
    return (f"{report['stage']} raised {report['type']}: {report['message']} (at {place}); "
            f"fix the engine or {SETTINGS_HINT}, then build again")


def _prune(root: Path) -> None:
    """Keep the newest ``CACHE_ENTRIES`` entries, and drop what a killed build left a day ago."""
    now = time.time()
    entries, abandoned = [], []
    for path in root.iterdir():
        with contextlib.suppress(OSError):  # another build may remove it meanwhile
            if path.is_dir():
                mtime = path.stat().st_mtime
                if not path.name.startswith("."):
                    entries.append((mtime, path))
                elif now - mtime > 86_400:
                    abandoned.append(path)
    entries.sort(reverse=True)
    for old in [path for _, path in entries[CACHE_ENTRIES:]] + abandoned:
        shutil.rmtree(old, ignore_errors=True)


def read_output(folder: Path, settings: ExampleSettings, package_dir: Path, request: dict,
                source: str) -> ExampleData:
    """The child's output in ``folder`` as the objects the pages read."""
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    with np.load(folder / "arrays.npz", allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}

    def trace(records: list[dict]) -> Trace:
        return Trace([Record(r["id"], r["layer"], arrays[r["array"]], r["order"], r["head"])
                      for r in records])

    steps = tuple(Step(**step) for step in meta["catalog"]["steps"])
    catalog = StepCatalog(steps=steps, package_dir=package_dir,
                          stale_index=meta["catalog"]["stale_index"])
    config = ModelConfig(**{f.name: meta["config"][f.name] for f in fields(ModelConfig)})
    r, w = meta["run"], meta["weights"]
    generation = [Generated(g["token"], arrays[g["probs"]],
                            trace(r["traced_trace"]) if i == settings.traced_step else None)
                  for i, g in enumerate(r["generation"])]
    model = ModelWeights(
        embed_tokens=arrays[w["embed_tokens"]], norm=arrays[w["norm"]], lm_head=arrays[w["lm_head"]],
        layers=[BlockParams(**{name: arrays[key] for name, key in block.items()})
                for block in w["layers"]], parameter_count=w["parameter_count"])
    run = ExampleRun(settings=settings, config=config, prompt_tokens=r["prompt_tokens"],
                     generation=generation, loss_tokens=r["loss_tokens"],
                     loss_targets=r["loss_targets"], loss=r["loss"],
                     loss_trace=trace(r["loss_trace"]), seconds=r["seconds"], model=model,
                     untrained_next_probs=arrays[meta["untrained"]["next_probs"]],
                     untrained_embed_tokens=arrays[meta["untrained"]["embed_tokens"]])
    _index_snapshots(run, catalog)
    st = meta["study"]
    heldout = None if st["heldout"] is None else HeldOut(source=Path(request["heldout"]),
                                                         **st["heldout"])
    report = HeadReport.from_json(st["report"])
    study = HeadStudy(report=report, untrained=HeadReport.from_json(st["untrained"]),
                      length=st["length"], probe_tokens=st["probe_tokens"],
                      probe_trace=trace(st["probe_trace"]),
                      untrained_probe_trace=trace(st["untrained_probe_trace"]),
                      featured=featured_heads(report), heldout=heldout, card=request["card"],
                      untrained_loss=st["untrained_loss"],
                      continuations=[(prompt, tokens) for prompt, tokens in st["continuations"]])
    replay = [(rec["id"], rec["label_key"], rec["file"],
               (folder / "replay" / rec["file"]).read_bytes()) for rec in meta["replay"]]
    return ExampleData(catalog=catalog, run=run, study=study, replay=replay, source=source,
                       step_table=meta["step_table"])


def _where(step_id: str, layers: set, in_generation: bool, in_loss: bool) -> str:
    if in_generation and in_loss:
        return WHERE_BLOCK if layers != {None} else WHERE_MODEL
    return WHERE_GENERATION if in_generation else WHERE_TRAINING


def _index_snapshots(run: ExampleRun, catalog: StepCatalog) -> None:
    gen_records = run.traced.trace.records
    loss_records = run.loss_trace.records
    gen_ids = {r.id for r in gen_records}
    loss_ids = {r.id for r in loss_records}
    missing = [s for s in catalog.ids if s not in gen_ids and s not in loss_ids]
    if missing:
        raise DocsBuildError(
            f"step(s) {', '.join(missing)} recorded nothing in the example run (a traced "
            f"generation step and a traced loss); call glassllm.trace.record(trace, <id>, value) "
            f"next to each step's '# @step' marker")
    for step_id in catalog.ids:
        # a step the generation records is shown from there (the prompt reads better than
        # the loss text); the loss run supplies only loss and loss.grad
        if step_id in gen_ids:
            records, run_name, tokens = gen_records, "generation", run.traced_tokens
        else:
            records, run_name, tokens = loss_records, "loss", run.loss_tokens
        snaps = [Snapshot(step_id=r.id, layer=r.layer, value=np.asarray(r.value), run=run_name,
                          row_tokens=tuple(tokens))
                 for r in records if r.id == step_id]
        snaps.sort(key=lambda s: -1 if s.layer is None else s.layer)
        run.snapshots[step_id] = snaps
        run.where[step_id] = _where(step_id, {s.layer for s in snaps},
                                    step_id in gen_ids, step_id in loss_ids)
