"""Training a GlassLM from text with its own gradients and AdamW, as nanoGPT trains GPT-2:

    tokens  = text_tokens(read_texts(["book.txt"]))        # UTF-8 bytes, one token each
    run     = train(tokens, "out", TrainOptions(steps=500))  # -> a checkpoint folder

Each step draws ``batch_size`` random windows of ``context + 1`` tokens, computes the mean
cross-entropy of each window's last ``context`` tokens after the ones before them and its
gradient (``GlassLM.gradients``), clips the gradient's global norm, sets the learning rate
of the warm-up + cosine schedule and takes one AdamW step (``glassllm.optim``). The matrices
get weight decay; the norms' gains do not (nanoGPT's two groups).

Every ``snapshot_every`` steps, and at the end, the output folder is rewritten atomically as
a whole (``glassllm._folder_swap``): ``config.json`` and ``model.safetensors`` (a checkpoint
that ``GlassLM.from_pretrained`` and ``transformers`` load), ``optimizer.safetensors`` (both
moments) and ``trainer.json`` (the options, the step, the data's sha256, the window sampler's
random state and every step's loss). A run killed at any moment resumes from its last
snapshot and ends with the same bits as a run never interrupted: everything a step reads is
in the snapshot, and the same seed gives the same initial weights and windows.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, fields, replace
from numbers import Integral, Real
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ._folder_swap import replace_files
from .checkpoint import CONFIG_NAME, WEIGHTS_NAME, config_to_hf, read_checkpoint
from .config import Config
from .model import GlassLM
from .optim import AdamW, clip_grad_norm, lr_at
from .regular_file import read_bounded
from .safetensors_reader import SafetensorsFile
from .tokenizer import BYTE_VOCAB_SIZE

OPTIMIZER_NAME = "optimizer.safetensors"
STATE_NAME = "trainer.json"
STATE_FORMAT = "glassllm-train"
STATE_VERSION = 1
MAX_TEXT_BYTES = 2_000_000_000  # held in memory as one byte per token
MAX_STATE_BYTES = 200_000_000
FILES_HINT = "give UTF-8 text files"


# -- the data -------------------------------------------------------------------------------

def read_texts(paths: Sequence) -> bytes:
    """The UTF-8 bytes of the text files ``paths``, one after the other (a newline put
    between two files where the first does not end with one). ``ValueError`` for a file
    that is missing, not a regular file, empty, binary or not UTF-8."""
    if isinstance(paths, (str, bytes, os.PathLike)) or not paths:
        raise ValueError("give a list of one or more text files")
    parts = []
    for path in paths:
        data = read_bounded(path, MAX_TEXT_BYTES, FILES_HINT)
        if not data.strip():
            raise ValueError(f"{path} is empty{' (only white space)' if data else ''}; "
                             f"{FILES_HINT} holding the text to learn")
        nul = data.find(b"\0")
        if nul >= 0:
            raise ValueError(f"{path} holds a NUL byte at position {nul}: it is a binary "
                             f"file, not text; {FILES_HINT}")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{path} is not UTF-8 text (byte 0x{data[error.start]:02x} at "
                             f"position {error.start}); convert it to UTF-8, e.g. with "
                             f"iconv -t UTF-8") from None
        if parts and not parts[-1].endswith(b"\n"):
            parts.append(b"\n")
        parts.append(data)
    return b"".join(parts)


def text_tokens(data: bytes) -> np.ndarray:
    """Byte tokens: each byte of the UTF-8 text is one token in [0, 256)."""
    return np.frombuffer(data, dtype=np.uint8)


class Windows:
    """Random windows of ``length`` tokens of one token stream, deterministic for a seed;
    the random state is what a snapshot keeps of the data."""

    def __init__(self, tokens: np.ndarray, length: int, batch_size: int, seed: int) -> None:
        if len(tokens) < length:
            raise ValueError(f"the text has {len(tokens):,} tokens, fewer than one window of "
                             f"{length} (the context + 1); give more text or a shorter context")
        self.tokens, self.length, self.batch_size = tokens, length, batch_size
        self.rng = np.random.default_rng([seed, 1])
        self._offsets = np.arange(length)

    def batch(self) -> np.ndarray:
        starts = self.rng.integers(0, len(self.tokens) - self.length + 1, self.batch_size)
        return self.tokens[starts[:, None] + self._offsets].astype(np.int64)  # (b, length)


# -- the options ------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainOptions:
    """A training run: the model's shape and the recipe. ``min_lr`` None: lr / 10;
    ``warmup`` None: a tenth of the steps, at most 100."""

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

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "tie_word_embeddings":
                if not isinstance(value, (bool, np.bool_)):
                    raise ValueError(f"tie_word_embeddings must be true or false, got {value!r}")
                continue
            if value is None and f.name in ("d_ff", "min_lr", "warmup"):
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
        self.config()  # the model's shape is checked by Config

    @property
    def final_lr(self) -> float:
        return self.lr / 10 if self.min_lr is None else float(self.min_lr)

    @property
    def warmup_steps(self) -> int:
        return min(100, self.steps // 10) if self.warmup is None else int(self.warmup)

    def config(self) -> Config:
        return Config(vocab_size=BYTE_VOCAB_SIZE, d_model=self.d_model, n_layers=self.n_layers,
                      n_heads=self.n_heads, n_kv_heads=self.n_kv_heads, max_len=self.context,
                      d_ff=self.d_ff, rope_theta=self.rope_theta, seed=self.seed,
                      tie_word_embeddings=bool(self.tie_word_embeddings))

    def same_run(self, other: "TrainOptions") -> bool:
        """Whether ``other`` trains to the same bits: every option but snapshot_every."""
        return replace(self, snapshot_every=1) == replace(other, snapshot_every=1)

    def lr_at(self, step: int) -> float:
        return lr_at(step, lr=self.lr, min_lr=self.final_lr, warmup=self.warmup_steps,
                     steps=self.steps)


def initial_model(options: TrainOptions) -> GlassLM:
    """A model of the options' shape with GPT-2's initialisation, as ``transformers``' Llama
    has it: every matrix N(0, init_std), every norm's gain 1; deterministic for the seed."""
    model = GlassLM(options.config())
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


def write_snapshot(out, trainer: Trainer, windows: Windows, record: dict) -> None:
    """The whole run so far into folder ``out``, atomically: its other files stay."""
    from safetensors.numpy import save_file
    model, optimizer = trainer.model, trainer.optimizer
    state = optimizer.state_dict()
    scalars = {key: value for key, value in state.items() if key not in ("exp_avg", "exp_avg_sq")}
    text = json.dumps({**record, "format": STATE_FORMAT, "version": STATE_VERSION,
                       "step": trainer.step_count, "optimizer": scalars,
                       "rng": windows.rng.bit_generator.state}, indent=1, allow_nan=False)
    weights = {name: np.ascontiguousarray(v) for name, v in model.state_dict().items()}
    config = json.dumps(config_to_hf(model.config), indent=2, sort_keys=True) + "\n"

    def write(new: Path) -> None:
        save_file(weights, str(new / WEIGHTS_NAME), metadata={"format": "pt"})
        (new / CONFIG_NAME).write_text(config, encoding="utf-8")
        save_file(_optimizer_tensors(state), str(new / OPTIMIZER_NAME))
        (new / STATE_NAME).write_text(text + "\n", encoding="utf-8")

    replace_files(Path(out), write, (WEIGHTS_NAME, CONFIG_NAME, OPTIMIZER_NAME, STATE_NAME))


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


def _resume(out: Path, state: dict, trainer: Trainer, windows: Windows) -> None:
    config, weights = read_checkpoint(out)
    if config != trainer.model.config:
        raise ValueError(f"{out / CONFIG_NAME} is not the model of {out / STATE_NAME}")
    with SafetensorsFile(out / OPTIMIZER_NAME) as file:
        moments = {key: {name: file.read_float32(f"{key}/{name}") for name in weights}
                   for key in ("exp_avg", "exp_avg_sq")}
    trainer.model.load_state_dict(weights)
    trainer.optimizer.load_state_dict({**state["optimizer"], **moments})
    trainer.step_count = int(state["step"])
    windows.rng.bit_generator.state = state["rng"]


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


@dataclass(frozen=True)
class TrainResult:
    model: GlassLM
    losses: list[float]
    resumed_from: int   # the step the run resumed at (0: from the start)
    seconds: float      # this process's training time


def train(tokens: np.ndarray, out, options: TrainOptions, *, sources: Sequence[str] = (),
          on_progress: Callable[[Progress], None] | None = None) -> TrainResult:
    """Train on byte ``tokens`` into folder ``out``, resuming from its snapshot when it holds
    one of this run (same options and data; otherwise ``ValueError``). ``sources``: the
    names of the text files, kept in the state so that a resume can read them again."""
    out = Path(out)
    tokens = np.asarray(tokens, dtype=np.uint8)
    digest = hashlib.sha256(tokens.tobytes()).hexdigest()
    state = read_state(out)
    if state is None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and holds no training run; give a new or empty folder")
    windows = Windows(tokens, options.context + 1, options.batch_size, options.seed)
    trainer = Trainer(initial_model(options), options)
    record = {"options": asdict(options), "data": {"sha256": digest, "tokens": len(tokens),
                                                   "files": [str(s) for s in sources]},
              "losses": [], "finished": False}
    if state is not None:
        if not options_of(state).same_run(options):
            raise ValueError(f"{out} holds a run with other options; give the same options "
                             f"to resume it, or another folder")
        if state.get("data", {}).get("sha256") != digest:
            raise ValueError(f"{out} holds a run trained on other text (sha256 "
                             f"{state.get('data', {}).get('sha256')}); give the same files to "
                             f"resume it, or another folder")
        if state.get("finished"):  # nothing left to do: the folder holds the trained model
            return TrainResult(GlassLM.from_pretrained(out), [float(x) for x in state["losses"]],
                               int(state["step"]), 0.0)
        _resume(out, state, trainer, windows)
        record["losses"] = [float(x) for x in state["losses"]][:trainer.step_count]
        record["data"]["files"] = state["data"].get("files", record["data"]["files"])
    resumed_from = trainer.step_count
    tokens_per_step = options.batch_size * options.context
    start = time.perf_counter()
    if trainer.step_count == 0:  # the initial weights are a snapshot too: step 0
        write_snapshot(out, trainer, windows, record)
    while trainer.step_count < options.steps:
        result = trainer.step(windows.batch())
        record["losses"].append(result.loss)
        done = result.step == options.steps
        snapshot = done or result.step % options.snapshot_every == 0
        if snapshot:
            record["finished"] = done
            write_snapshot(out, trainer, windows, record)
        if on_progress is not None:
            elapsed = time.perf_counter() - start
            rate = (result.step - resumed_from) * tokens_per_step / max(elapsed, 1e-9)
            on_progress(Progress(result.step, options.steps, result.loss, result.lr, rate,
                                 (options.steps - result.step) * tokens_per_step / rate,
                                 snapshot))
    if os.path.exists(out / OPTIMIZER_NAME) and record["finished"]:
        os.unlink(out / OPTIMIZER_NAME)  # a finished run needs no moments
    return TrainResult(trainer.model, record["losses"], resumed_from,
                       time.perf_counter() - start)
