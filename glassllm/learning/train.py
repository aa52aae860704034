"""Training a GlassLM from text with its own gradients and AdamW, as nanoGPT trains GPT-2:

    tokens  = text_tokens(read_texts(["book.txt"]))        # UTF-8 bytes, one token each
    run     = train(tokens, "out", TrainOptions(steps=500))  # -> a checkpoint folder

    tok     = read_tokenizer("tokenizer.json")             # or a byte-level BPE's subwords
    run     = train(text_tokens(read_texts(["book.txt"]), tok), "out", options, tokenizer=tok)

Each step draws ``batch_size`` rows of ``context + 1`` tokens (random windows of the text,
or a batch source's rows: ``glassllm.batches``), computes the mean cross-entropy of each
row's last ``context`` tokens after the ones before them and its gradient
(``GlassLM.gradients``), clips the gradient's global norm, sets the learning rate of the
warm-up + cosine schedule and takes one AdamW step (``glassllm.optim``). The matrices get
weight decay; the norms' gains do not (nanoGPT's two groups).

Every ``snapshot_every`` steps, and at the end, the output folder is rewritten atomically as
a whole (``glassllm._folder_swap``): ``config.json`` and ``model.safetensors`` (a checkpoint
that ``GlassLM.from_pretrained`` and ``transformers`` load), with a tokenizer its
``tokenizer.json`` (and a ``tokenizer_config.json`` for ``transformers.AutoTokenizer``),
``optimizer.safetensors`` (both moments) and ``trainer.json`` (the options, the step, the
tokenizer's and the data's sha256, the batches' random state and every step's loss), with the
files a caller's ``snapshot_files`` gives (a record of the run kept as far as the weights). A run
killed at any moment resumes from its last snapshot and ends with the same bits as a run
never interrupted: everything a step reads is in the snapshot, and the same seed gives the
same initial weights and batches.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, fields, replace
from numbers import Integral, Real
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ..files._folder_swap import replace_files
from .batches import (BatchSource, TokenizerFile, Windows, check_rows, read_texts,  # noqa: F401
                      read_tokenizer, text_tokens, tokens_sha256)
from ..text.bpe import TOKENIZER_NAME
from ..files.checkpoint import CONFIG_NAME, WEIGHTS_NAME, config_to_hf, read_checkpoint
from ..config import Config
from ..model import GlassLM
from .optim import AdamW, clip_grad_norm, lr_at
from ..files.regular_file import read_bounded
from ..files.safetensors_reader import SafetensorsFile
from ..text.tokenizer import BYTE_VOCAB_SIZE

OPTIMIZER_NAME = "optimizer.safetensors"
STATE_NAME = "trainer.json"
STATE_FORMAT = "glassllm-train"
STATE_VERSION = 1
TOKENIZER_CONFIG_NAME = "tokenizer_config.json"  # tells transformers which class reads it
_RUN_FILES = (WEIGHTS_NAME, CONFIG_NAME, OPTIMIZER_NAME, STATE_NAME, TOKENIZER_NAME,
              TOKENIZER_CONFIG_NAME)
MAX_STATE_BYTES = 200_000_000
INITS = ("gpt2", "glass")


# -- the options ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Phase:
    """A stretch of a run with its own rows and schedule: ``steps`` steps of rows of
    ``context`` tokens (+ 1 target; None: the run's context), a linear warm-up over
    ``warmup`` steps to ``lr``, then constant (``min_lr`` None) or a cosine down to ``min_lr``
    at the phase's last step; ``restart``: AdamW's moments and step count start again at
    the phase's first step, as a fresh ``torch.optim.AdamW`` would."""

    steps: int
    lr: float
    warmup: int = 0
    min_lr: float | None = None
    context: int | None = None
    restart: bool = True

    def __post_init__(self) -> None:
        for name in ("steps", "warmup", "context"):
            value = getattr(self, name)
            if name == "context" and value is None:
                continue
            low = 0 if name == "warmup" else 1
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) \
                    or value < low:
                raise ValueError(f"a phase's {name} must be a whole number >= {low}, got "
                                 f"{value!r}")
        for name in ("lr", "min_lr"):
            value = getattr(self, name)
            if name == "min_lr" and value is None:
                continue
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"a phase's {name} must be a finite number >= 0, got "
                                 f"{value!r}")
        if self.min_lr is not None and self.min_lr > self.lr:
            raise ValueError(f"a phase's min_lr ({self.min_lr}) must not exceed its lr "
                             f"({self.lr})")
        if not isinstance(self.restart, (bool, np.bool_)):
            raise ValueError(f"a phase's restart must be true or false, got {self.restart!r}")

    def lr_at(self, step: int) -> float:
        """The learning rate of the phase's step ``step`` (from 0)."""
        return lr_at(step, lr=self.lr, min_lr=self.lr if self.min_lr is None else self.min_lr,
                     warmup=self.warmup, steps=self.steps)


@dataclass(frozen=True)
class TrainOptions:
    """A training run: the model's shape and the recipe. ``vocab_size`` None: the
    tokenizer's (256 for bytes; ``train`` refuses another); ``min_lr`` None: lr / 10;
    ``warmup`` None: a tenth of the steps, at most 100. ``init``: "gpt2" (every matrix
    N(0, init_std), as ``transformers``' Llama) or "glass" (``GlassLM(config)``'s own
    weights: matrices N(0, 1/fan_in), the embedding N(0, 1)). ``phases``: ``Phase``s (or
    their dicts) whose steps add up to ``steps``, each with its row length and schedule; none:
    one warm-up + cosine over the run (lr, min_lr, warmup), every row ``context`` long."""

    vocab_size: int | None = None
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    d_ff: int | None = None
    context: int = 64
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    steps: int = 200
    batch_size: int = 8
    lr: float = 3e-3
    min_lr: float | None = None
    warmup: int | None = None
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    init_std: float = 0.02
    seed: int = 0
    snapshot_every: int = 100
    init: str = "gpt2"
    phases: tuple = ()

    def __post_init__(self) -> None:
        if self.init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}, got {self.init!r}")
        if isinstance(self.phases, (str, bytes, Mapping)):
            raise ValueError(f"phases must be a list of phases, got {self.phases!r}")
        try:
            phases = tuple(p if isinstance(p, Phase) else Phase(**p) for p in self.phases)
        except TypeError as error:
            raise ValueError(f"a phase is a dict of {', '.join(f.name for f in fields(Phase))}"
                             f": {error}") from None
        object.__setattr__(self, "phases", phases)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("init", "phases"):
                continue
            if f.name == "tie_word_embeddings":
                if not isinstance(value, (bool, np.bool_)):
                    raise ValueError(f"tie_word_embeddings must be true or false, got {value!r}")
                continue
            if value is None and f.name in ("vocab_size", "d_ff", "min_lr", "warmup"):
                continue
            if f.type.startswith("int"):
                ok = isinstance(value, Integral) and not isinstance(value, (bool, np.bool_))
                low = 0 if f.name in ("seed", "warmup") else 1
                if not ok or value < low:
                    raise ValueError(f"{f.name} must be a whole number >= {low}, got {value!r}")
            else:
                ok = isinstance(value, Real) and not isinstance(value, (bool, np.bool_))
                if not ok or not math.isfinite(value) or value < 0:
                    raise ValueError(f"{f.name} must be a finite number >= 0, got {value!r}")
        for name in ("beta1", "beta2"):
            if not getattr(self, name) < 1:
                raise ValueError(f"{name} must be below 1, got {getattr(self, name)!r}")
        if self.min_lr is not None and self.min_lr > self.lr:
            raise ValueError(f"min_lr ({self.min_lr}) must not exceed lr ({self.lr})")
        if phases and sum(p.steps for p in phases) != self.steps:
            raise ValueError(f"the phases' steps add up to {sum(p.steps for p in phases)}, not "
                             f"to the run's steps ({self.steps})")
        for k, p in enumerate(phases):
            if p.context is not None and p.context > self.context:
                raise ValueError(f"phase {k}'s rows of {p.context} tokens are longer than the "
                                 f"context ({self.context})")
        self.config()  # the model's shape is checked by Config

    @property
    def final_lr(self) -> float:
        return self.lr / 10 if self.min_lr is None else float(self.min_lr)

    @property
    def warmup_steps(self) -> int:
        return min(100, self.steps // 10) if self.warmup is None else int(self.warmup)

    def config(self) -> Config:
        return Config(vocab_size=self.vocab_size or BYTE_VOCAB_SIZE, d_model=self.d_model,
                      n_layers=self.n_layers, n_heads=self.n_heads, n_kv_heads=self.n_kv_heads,
                      max_len=self.context, d_ff=self.d_ff, rope_theta=self.rope_theta,
                      seed=self.seed, tie_word_embeddings=bool(self.tie_word_embeddings))

    def same_run(self, other: "TrainOptions") -> bool:
        """Whether ``other`` trains to the same bits: every option but snapshot_every."""
        return replace(self, snapshot_every=1) == replace(other, snapshot_every=1)

    def phase_at(self, step: int) -> tuple[int, int]:
        """(the phase of step ``step`` (from 0), the step within it); (0, step) without
        phases. The last phase goes on after the run's steps."""
        for k, p in enumerate(self.phases):
            if step < p.steps or k == len(self.phases) - 1:
                return k, step
            step -= p.steps
        return 0, step

    def lr_at(self, step: int) -> float:
        if self.phases:
            k, within = self.phase_at(step)
            return self.phases[k].lr_at(within)
        return lr_at(step, lr=self.lr, min_lr=self.final_lr, warmup=self.warmup_steps,
                     steps=self.steps)

    def row_length(self, step: int) -> int:
        """The tokens a row of step ``step`` predicts (its rows hold one more)."""
        context = self.phases[self.phase_at(step)[0]].context if self.phases else None
        return self.context if context is None else context

    def restarts_at(self, step: int) -> bool:
        """Whether AdamW starts again at step ``step``: a restarting phase's first step."""
        if not self.phases or step == 0:
            return False
        k, within = self.phase_at(step)
        return within == 0 and self.phases[k].restart


def with_tokenizer(options: TrainOptions, tokenizer: TokenizerFile | None) -> TrainOptions:
    """``options`` with the vocabulary of ``tokenizer`` (None: bytes), or ``ValueError``
    when ``options.vocab_size`` asks for another one."""
    size = BYTE_VOCAB_SIZE if tokenizer is None else tokenizer.vocab_size
    if options.vocab_size is not None and options.vocab_size != size:
        what = (f"the byte tokens (no tokenizer): {size} IDs" if tokenizer is None
                else f"{tokenizer.path}: {size} tokens")
        raise ValueError(f"vocab_size is {options.vocab_size} but the model's vocabulary is "
                         f"that of {what}; leave vocab_size out, it comes from the tokenizer")
    return replace(options, vocab_size=None if tokenizer is None else size)


def initial_model(options: TrainOptions) -> GlassLM:
    """A model of the options' shape, deterministic for the seed: with ``init="glass"``
    ``GlassLM(options.config())`` itself; with "gpt2" GPT-2's initialisation, as
    ``transformers``' Llama has it: every matrix N(0, init_std), every norm's gain 1."""
    model = GlassLM(options.config())
    if options.init == "glass":
        return model
    rng = np.random.default_rng([options.seed, 0])
    model.load_state_dict({
        name: (rng.standard_normal(value.shape, dtype=np.float32) * np.float32(options.init_std)
               if value.ndim == 2 else np.ones_like(value))
        for name, value in model.state_dict().items()})
    return model


# -- one step ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class StepResult:
    step: int          # the steps done, this one included
    loss: float        # before the update
    grad_norm: float   # before clipping
    lr: float


class Trainer:
    """A model and its AdamW under the options' recipe: ``step(rows)`` trains on one batch."""

    def __init__(self, model: GlassLM, options: TrainOptions) -> None:
        self.model, self.options = model, options
        flat = [name for name, value in model.state_dict().items() if value.ndim < 2]
        self.optimizer = AdamW(model, lr=options.lr, betas=(options.beta1, options.beta2),
                               weight_decay=options.weight_decay, no_decay=flat)
        self.step_count = 0

    def step(self, rows: np.ndarray) -> StepResult:
        """One update from ``rows`` (b, n + 1): predict ``rows[:, 1:]`` from ``rows[:, :-1]``."""
        lr = self.options.lr_at(self.step_count)
        if self.options.restarts_at(self.step_count):
            self.optimizer.restart()
        loss, grads = self.model.gradients(rows[:, :-1], rows[:, 1:])
        if not math.isfinite(loss):
            raise ValueError(f"the loss is {loss} at step {self.step_count + 1}: training "
                             f"diverged; lower the learning rate")
        norm = clip_grad_norm(grads, self.options.grad_clip if self.options.grad_clip > 0
                              else math.inf)
        self.optimizer.lr = lr
        self.optimizer.step(grads)
        self.step_count += 1
        return StepResult(self.step_count, float(loss), norm, lr)


# -- snapshots --------------------------------------------------------------------------------

def _optimizer_tensors(state: dict) -> dict[str, np.ndarray]:
    return {f"{key}/{name}": value for key in ("exp_avg", "exp_avg_sq")
            for name, value in state[key].items()}


def tokenizer_config(context: int) -> str:
    """``tokenizer_config.json``: ``transformers.AutoTokenizer`` then reads ``tokenizer.json``
    as it is (``PreTrainedTokenizerFast``), not as a Llama tokenizer that adds ``<s>``."""
    return json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": context,
                       "clean_up_tokenization_spaces": False}, indent=2) + "\n"


def write_snapshot(out, trainer: Trainer, rng: np.random.Generator, record: dict,
                   tokenizer: TokenizerFile | None = None,
                   files: Mapping[str, bytes] | None = None) -> None:
    """The whole run so far into folder ``out``, atomically: its other files stay. With a
    ``tokenizer``, its ``tokenizer.json`` (the same bytes) goes in with the weights; ``files``
    (name -> bytes, names of files at the folder's top) go in too, in the same swap."""
    files = dict(files or {})
    for name in files:
        if not isinstance(name, str) or Path(name).name != name or name in _RUN_FILES:
            raise ValueError(f"snapshot_files gave the name {name!r}: give names of files at the "
                             f"folder's top other than the run's own ({', '.join(_RUN_FILES)})")
    from safetensors.numpy import save_file
    model, optimizer = trainer.model, trainer.optimizer
    state = optimizer.state_dict()
    scalars = {key: value for key, value in state.items() if key not in ("exp_avg", "exp_avg_sq")}
    text = json.dumps({**record, "format": STATE_FORMAT, "version": STATE_VERSION,
                       "step": trainer.step_count, "optimizer": scalars,
                       "rng": rng.bit_generator.state}, indent=1, allow_nan=False)
    weights = {name: np.ascontiguousarray(v) for name, v in model.state_dict().items()}
    config = json.dumps(config_to_hf(model.config), indent=2, sort_keys=True) + "\n"

    def write(new: Path) -> None:
        save_file(weights, str(new / WEIGHTS_NAME), metadata={"format": "pt"})
        (new / CONFIG_NAME).write_text(config, encoding="utf-8")
        save_file(_optimizer_tensors(state), str(new / OPTIMIZER_NAME))
        (new / STATE_NAME).write_text(text + "\n", encoding="utf-8")
        if tokenizer is not None:
            (new / TOKENIZER_NAME).write_bytes(tokenizer.text)
            (new / TOKENIZER_CONFIG_NAME).write_text(
                tokenizer_config(model.config.max_len), encoding="utf-8")
        for name, data in files.items():
            (new / name).write_bytes(data)

    names = (WEIGHTS_NAME, CONFIG_NAME, OPTIMIZER_NAME, STATE_NAME)
    if tokenizer is not None:
        names += (TOKENIZER_NAME, TOKENIZER_CONFIG_NAME)
    replace_files(Path(out), write, names + tuple(files))


def read_state(out) -> dict | None:
    """``trainer.json`` of a run folder, or None when the folder holds no run."""
    path = Path(out) / STATE_NAME
    if not path.exists():
        return None
    data = read_bounded(path, MAX_STATE_BYTES, "a training run's folder holds it")
    try:
        state = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path} is not a training state ({error}); train into another "
                         f"--out folder") from None
    if not (isinstance(state, dict) and state.get("format") == STATE_FORMAT
            and state.get("version") == STATE_VERSION):
        raise ValueError(f"{path} is not a glassllm training state of version {STATE_VERSION}")
    return state


def options_of(state: dict) -> TrainOptions:
    try:
        return TrainOptions(**state["options"])
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"the training state's options are not valid: {error}") from None


def _resume(out: Path, state: dict, trainer: Trainer, rng: np.random.Generator) -> None:
    config, weights = read_checkpoint(out)
    if config != trainer.model.config:
        raise ValueError(f"{out / CONFIG_NAME} is not the model of {out / STATE_NAME}")
    with SafetensorsFile(out / OPTIMIZER_NAME) as file:
        moments = {key: {name: file.read_float32(f"{key}/{name}") for name in weights}
                   for key in ("exp_avg", "exp_avg_sq")}
    trainer.model.load_state_dict(weights)
    trainer.optimizer.load_state_dict({**state["optimizer"], **moments})
    trainer.step_count = int(state["step"])
    rng.bit_generator.state = state["rng"]


# -- a whole run ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Progress:
    step: int
    steps: int
    loss: float
    lr: float
    tokens_per_second: float  # of this process's steps
    eta_seconds: float
    snapshot: bool            # a snapshot of this step was just written
    model: GlassLM | None = None  # the model after this step: to measure, not to change


@dataclass(frozen=True)
class TrainResult:
    model: GlassLM
    losses: list[float]
    resumed_from: int   # the step the run resumed at (0: from the start)
    seconds: float      # this process's training time


def check_tokenizer(out, state: dict, tokenizer: TokenizerFile | None) -> None:
    """``ValueError`` unless the run in ``out`` (its ``state``) used ``tokenizer``."""
    theirs = state.get("tokenizer")
    if theirs is None and tokenizer is None:
        return
    if theirs is None:
        raise ValueError(f"{out} holds a run trained on byte tokens (no tokenizer); resume "
                         f"it without a tokenizer, or give another folder")
    if tokenizer is None:
        raise ValueError(f"{out} holds a run trained with a tokenizer ({out}/{TOKENIZER_NAME}, "
                         f"sha256 {theirs['sha256']}); give that tokenizer to resume it, or "
                         f"another folder")
    if theirs["sha256"] != tokenizer.sha256:
        raise ValueError(f"{out} holds a run trained with another tokenizer (sha256 "
                         f"{theirs['sha256']}, {theirs['vocab_size']} tokens) than "
                         f"{tokenizer.path} (sha256 {tokenizer.sha256}, {tokenizer.vocab_size} "
                         f"tokens); give the run's own tokenizer ({out}/{TOKENIZER_NAME}) to "
                         f"resume it, or another folder")


def train(tokens: np.ndarray | None, out, options: TrainOptions, *,
          tokenizer: TokenizerFile | str | os.PathLike | None = None,
          batches: BatchSource | None = None, batches_id=None, sources: Sequence[str] = (),
          on_progress: Callable[[Progress], None] | None = None,
          snapshot_files: Callable[[int, GlassLM, Sequence[float]], Mapping[str, bytes]]
          | None = None) -> TrainResult:
    """Train on ``tokens`` into folder ``out``, resuming from its snapshot when it holds one
    of this run (same options, tokenizer, data and batches; otherwise ``ValueError``).

    ``tokenizer``: None for byte tokens, or the ``tokenizer.json`` (a path, a folder holding
    one, or ``read_tokenizer``'s) that gave ``tokens``: the model's vocabulary is its size
    and the checkpoint folder gets a copy. ``batches``: a batch source (``glassllm.batches``),
    ``(step, rng) -> (batch_size, context + 1)`` token IDs drawn with ``rng`` only; default
    random windows of ``tokens``, which may then be None. ``batches_id``: a JSON value naming
    the source's recipe (required with ``batches``): a resume with another is refused.
    ``sources``: the names of the text files, kept in the state so that a resume can read
    them again. ``on_progress(Progress)`` is called after each step (after its snapshot);
    its ``model`` knows the run's tokenizer, to measure text with. ``snapshot_files(step,
    model, losses)``, called before each snapshot (step 0 included) with every step's loss so
    far, gives files (name -> bytes) that go into ``out`` in the same atomic swap as the
    checkpoint: a record of the run that a resume finds exactly as far as the weights."""
    out = Path(out)
    if tokenizer is not None and not isinstance(tokenizer, TokenizerFile):
        tokenizer = read_tokenizer(tokenizer)
    options = with_tokenizer(options, tokenizer)
    vocab = options.config().vocab_size
    if batches is None:
        if tokens is None:
            raise ValueError("give the tokens to learn from, or a batch source (batches=)")
        if batches_id is not None:
            raise ValueError("batches_id names a batch source; give batches= with it")
    elif batches_id is None:
        raise ValueError("give batches_id with batches=: a JSON value naming the recipe (e.g. "
                         "its phases), so that a resume with other batches is refused")
    else:
        batches_id = json.loads(json.dumps(batches_id, allow_nan=False))  # as the state keeps it
    digest, count = None, 0
    if tokens is not None:
        tokens = np.asarray(tokens)
        if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
            raise ValueError(f"tokens must be a 1-D array of token IDs, got {tokens.dtype} "
                             f"of shape {tokens.shape}")
        if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab):
            raise ValueError(f"tokens hold IDs outside [0, {vocab}): the tokens are not of "
                             f"{'the byte tokenizer' if tokenizer is None else tokenizer.path}")
        if tokenizer is None:
            tokens = tokens.astype(np.uint8)
        digest, count = tokens_sha256(tokens), len(tokens)
    state = read_state(out)
    if state is None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and holds no training run; give a new or empty folder")
    if batches is None:
        windows = {n: Windows(tokens, n + 1, options.batch_size) for n in
                   {options.context} | {p.context for p in options.phases if p.context}}
        batches = lambda step, rng: windows[options.row_length(step)](step, rng)  # noqa: E731
    rng = np.random.default_rng([options.seed, 1])  # every batch's random numbers
    trainer = Trainer(initial_model(options), options)
    if tokenizer is not None:  # the model being trained reads text as its checkpoint will
        trainer.model._tokenizer, trainer.model._tokenizer_error = tokenizer.tokenizer, None
    record = {"options": asdict(options),
              "tokenizer": None if tokenizer is None else {
                  "sha256": tokenizer.sha256, "vocab_size": tokenizer.vocab_size,
                  "file": str(tokenizer.path)},
              "data": {"sha256": digest, "tokens": count, "files": [str(s) for s in sources],
                       "batches": batches_id},
              "losses": [], "finished": False}
    if state is not None:
        check_tokenizer(out, state, tokenizer)
        if not options_of(state).same_run(options):
            raise ValueError(f"{out} holds a run with other options; give the same options "
                             f"to resume it, or another folder")
        data = state.get("data", {})
        if data.get("sha256") != digest:
            raise ValueError(f"{out} holds a run trained on other text (sha256 "
                             f"{data.get('sha256')}); give the same files to resume it, or "
                             f"another folder")
        if data.get("batches") != batches_id:
            raise ValueError(f"{out} holds a run trained on other batches "
                             f"({json.dumps(data.get('batches'))[:200]}); give the same batch "
                             f"source to resume it, or another folder")
        if state.get("finished"):  # nothing left to do: the folder holds the trained model
            return TrainResult(GlassLM.from_pretrained(out), [float(x) for x in state["losses"]],
                               int(state["step"]), 0.0)
        _resume(out, state, trainer, rng)
        record["losses"] = [float(x) for x in state["losses"]][:trainer.step_count]
        record["data"]["files"] = data.get("files", record["data"]["files"])
        if tokenizer is not None:
            record["tokenizer"]["file"] = state["tokenizer"].get("file", str(tokenizer.path))
    resumed_from = trainer.step_count
    start, tokens_done = time.perf_counter(), 0
    # tokens of the steps still to run, by step: the ETA counts tokens, not steps, so that a
    # later phase's longer rows are not estimated at an earlier phase's pace
    tokens_after = np.cumsum([options.batch_size * options.row_length(s)
                              for s in range(options.steps)][::-1])[::-1].tolist() + [0]

    def snapshot_now() -> None:
        files = None if snapshot_files is None else snapshot_files(
            trainer.step_count, trainer.model, tuple(record["losses"]))
        write_snapshot(out, trainer, rng, record, tokenizer, files)

    if trainer.step_count == 0:  # the initial weights are a snapshot too: step 0
        snapshot_now()
    while trainer.step_count < options.steps:
        rows = check_rows(batches(trainer.step_count, rng), options.batch_size,
                          options.row_length(trainer.step_count) + 1, vocab, trainer.step_count)
        result = trainer.step(rows)
        tokens_done += rows.shape[0] * (rows.shape[1] - 1)
        record["losses"].append(result.loss)
        done = result.step == options.steps
        snapshot = done or result.step % options.snapshot_every == 0
        if snapshot:
            record["finished"] = done
            snapshot_now()
        if on_progress is not None:
            rate = tokens_done / max(time.perf_counter() - start, 1e-9)
            on_progress(Progress(result.step, options.steps, result.loss, result.lr, rate,
                                 tokens_after[result.step] / rate, snapshot, trainer.model))
    if os.path.exists(out / OPTIMIZER_NAME) and record["finished"]:
        os.unlink(out / OPTIMIZER_NAME)  # a finished run needs no moments
    # the folder's model: the trained weights with the folder's tokenizer
    return TrainResult(GlassLM.from_pretrained(out), record["losses"], resumed_from,
                       time.perf_counter() - start)
