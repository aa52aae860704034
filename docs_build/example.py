"""The example run whose snapshots the step pages show: one traced generation and one traced loss.

``run_example`` is plain Python (no MkDocs). ``example_key`` hashes the engine's sources and
the settings so ``mkdocs serve`` can keep a run in memory until either changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import model_source
from .catalog import DocsBuildError, StepCatalog

VOCAB_SIZE = 256  # the byte tokenizer's vocabulary; not an option
SETTINGS_HINT = "the example settings under plugins.glassllm.example in mkdocs.yml"

# Where a step runs, as the pages name it (keys of the UI strings "where.<key>").
WHERE_MODEL, WHERE_BLOCK, WHERE_GENERATION, WHERE_TRAINING = "model", "block", "generation", "training"


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

    def model_config(self):
        """The ``glassllm.Config`` of the example model (the byte tokenizer's vocabulary)."""
        if self.checkpoint is not None:
            return self.load_model().config
        engine = importlib.import_module("glassllm")
        return engine.Config(vocab_size=VOCAB_SIZE, d_model=self.d_model,
                             n_layers=self.n_layers, n_heads=self.n_heads,
                             n_kv_heads=self.n_kv_heads, max_len=self.max_len, seed=self.seed)

    def load_model(self):
        """The example model: the checkpoint's weights, or random ones for ``seed``."""
        if self.checkpoint is not None:
            return model_source.load_checkpoint(Path(self.checkpoint))
        return importlib.import_module("glassllm").GlassLM(self.model_config())

    def untrained_model(self):
        """The model before training: random weights for ``seed``, of the example's shape."""
        engine = importlib.import_module("glassllm")
        return engine.GlassLM(dataclasses.replace(self.model_config(), seed=self.seed))

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


@dataclass
class ExampleRun:
    settings: ExampleSettings
    config: object  # glassllm.Config
    prompt_tokens: list[int]
    generation: list  # glassllm.GenerationStep, each with its own Tracer
    loss_tokens: list[int]
    loss_targets: list[int]
    loss: float
    loss_trace: object  # glassllm.Tracer
    seconds: float
    model: object = None  # the glassllm.GlassLM that ran
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


def source_hash(folder: Path) -> str:
    """A hash of a folder's immediate ``.py`` and ``.json`` files: for the engine, every file
    that decides its behaviour and marker lines."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).iterdir()):
        if path.suffix in (".py", ".json") and path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def example_key(package_dir: Path, settings: ExampleSettings) -> str:
    payload = source_hash(package_dir) + repr(sorted(asdict(settings).items()))
    return hashlib.sha256(payload.encode()).hexdigest()


def _where(step_id: str, layers: set, in_generation: bool, in_loss: bool) -> str:
    if in_generation and in_loss:
        return WHERE_BLOCK if layers != {None} else WHERE_MODEL
    return WHERE_GENERATION if in_generation else WHERE_TRAINING


def run_example(settings: ExampleSettings, catalog: StepCatalog) -> ExampleRun:
    """Run the traced generation and the traced loss; every step of ``catalog`` must record.

    Any exception of the engine becomes a ``DocsBuildError`` naming where it was raised.
    """
    settings.check()
    engine = importlib.import_module("glassllm")
    start = time.perf_counter()
    try:
        model = settings.load_model()
    except DocsBuildError:
        raise
    except ValueError as error:
        raise DocsBuildError(f"invalid example model: {error}; change {SETTINGS_HINT}") from error
    config = model.config
    try:
        prompt = engine.encode(settings.prompt)
        generation = list(model.generate(
            prompt, settings.tokens, greedy=settings.greedy, temperature=settings.temperature,
            top_k=settings.top_k, seed=settings.sampling_seed, trace=True))
        text = engine.encode(settings.loss_text)
        loss_tokens, loss_targets = text[:-1], text[1:]
        loss_trace = engine.Tracer()
        loss = model.loss(loss_tokens, loss_targets, trace=loss_trace)
    except Exception as error:  # the engine's own failure: report where, not a bare trace
        frame = traceback.extract_tb(error.__traceback__)[-1]
        raise DocsBuildError(
            f"the example run raised {type(error).__name__}: {error} (at {frame.filename}:"
            f"{frame.lineno}); fix the engine or {SETTINGS_HINT}, then build again") from error
    run = ExampleRun(settings=settings, config=config, prompt_tokens=list(prompt),
                     generation=generation, loss_tokens=list(loss_tokens),
                     loss_targets=list(loss_targets), loss=float(loss), loss_trace=loss_trace,
                     seconds=time.perf_counter() - start, model=model)
    _index_snapshots(run, catalog)
    return run


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
