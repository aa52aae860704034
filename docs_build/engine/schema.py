"""The contract between the engine's child process and the build: the files of one run and
the types they hold, declared once.

The child (``engine/child.py``) builds an ``Output`` from the engine's objects and writes it
with ``write_output``; the build reads it back with ``read_output``. Both sides import this
module, and it imports nothing else of ``docs_build`` (nor ``glassllm``): the child's view
and the build's view of a record, a config or a head report are one class.

A folder of one run holds:

- ``request.json``: what the build asks for (a ``Request``);
- ``meta.json``: the ``Output`` as JSON, each array replaced by its key in ``arrays.npz``;
  written last, so its presence means success;
- ``arrays.npz``: every array of the ``Output`` (traces, weights, probabilities);
- ``replay/<file>``: the replay's recordings, which the build copies without decoding;
- ``error.json``: instead of ``meta.json`` when the child failed (an ``ErrorReport``).

``read_output`` checks every field against its declared type: a file that does not fit is a
``SchemaError``, never a half-read run.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FORMAT = 2  # this contract's version: part of the cache key, so a change reruns the child
REQUEST, META, ARRAYS, ERROR, REPLAY_DIR = ("request.json", "meta.json", "arrays.npz",
                                            "error.json", "replay")
SYNTAX_STAGE = "compiling the engine"  # an ErrorReport's stage that the build words differently
# A line the child prints on stdout as it starts a stage of its work, followed by the stage's
# name: the build logs it as it comes and times each stage (engine/runner.py); other lines
# on stdout (an engine's own prints) are not this
STAGE_PREFIX = "docs_build.engine.stage: "


class SchemaError(ValueError):
    """A run's files do not hold what this module declares (damaged, edited or foreign)."""


# -- what the build asks ---------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    package_dir: str  # the engine folder the child must import
    child: str  # the child module's file the build meant to run
    allow_stale: bool  # a stale step index is noted, not refused (mkdocs serve)
    settings: dict  # engine/settings.py: ExampleSettings, as a dict
    heldout: str | None  # the held-out text to measure the losses on
    card: dict | None  # the checkpoint's report.json (scripts/train_demo.py)
    replay_tokens: int  # tokens the replay's generation has at least
    replay_suffix: str  # the recordings' file suffix (their format)
    replay_dtypes: dict  # recording id -> the dtype its floats are stored in
    hints: dict  # how the child's messages say what to do ("settings", "model", "index")


# -- what the child answers -------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One step as the site documents it: ``glassllm.steps.step_table()``'s row with its
    marker's place and its position in execution order."""

    id: str
    position: int  # 0-based place in execution order
    latex: str
    plain: str
    file: str  # "glassllm/nn.py"
    line: int  # 1-based line of the `# @step` marker
    axes: tuple[str, ...]  # each axis of one sequence's snapshot ("head", "token", ...)
    where: str  # "model", "block", "generation" or "training"
    head_axis: bool  # the snapshot keeps a leading head axis
    kinds: tuple[str, ...]  # the kinds of run that record it ("generation", "loss")
    causal: bool  # the cells above the diagonal are the causal mask itself
    vocabulary: bool  # one axis runs over the vocabulary

    @property
    def is_layer_step(self) -> bool:
        """Run in every block (``glassllm.steps.LAYER_STEPS``)."""
        return self.where == "block"


@dataclass(frozen=True)
class Catalog:
    steps: tuple[Step, ...]
    # with allow_stale: how the index disagrees with the markers (the lines are the markers')
    stale_index: str | None


@dataclass(frozen=True)
class ModelConfig:
    """The example model's ``glassllm.Config``."""

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
class Runs:
    """The traced generation and the traced loss run of the example."""

    prompt_tokens: list[int]
    generation: list[Generated]
    loss_tokens: list[int]
    loss_targets: list[int]
    loss: float
    loss_trace: Trace
    seconds: float  # the two runs' time in the child


@dataclass(frozen=True)
class BlockParams:
    """One block's parameters, named as ``glassllm.nn.BlockWeights`` names them."""

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


@dataclass(frozen=True)
class HeadReport:
    """``glassllm.probes.HeadReport``: (L, H) scores, copy losses, and the engine's own choice
    of the best heads (layer, head, score)."""

    previous_token: np.ndarray
    induction: np.ndarray
    copy_first: float
    copy_second: float
    tokens: list[int]
    length: int
    previous_token_best: tuple[int, int, float]
    induction_best: tuple[int, int, float]

    @property
    def copy_ratio(self) -> float:
        """Loss on the second copy over loss on the first: well below 1 when the model copies."""
        return self.copy_second / self.copy_first

    def best_previous_token(self) -> tuple[int, int, float]:
        return self.previous_token_best

    def best_induction(self) -> tuple[int, int, float]:
        return self.induction_best


@dataclass(frozen=True)
class HeldOutLoss:
    """Mean loss per byte of the example model and of the untrained one on held-out text."""

    n_bytes: int
    window: int  # tokens per scored window
    loss: float
    untrained_loss: float
    n_tokens: int | None = None  # the text read by the model's tokenizer


@dataclass(frozen=True)
class Measures:
    """What ``glassllm.probes`` measured on the example model and on the untrained one."""

    report: HeadReport
    untrained: HeadReport
    length: int  # of the probe's random string
    probe_tokens: list[int]  # the random string twice
    probe_trace: Trace  # the example model's forward over probe_tokens
    untrained_probe_trace: Trace
    heldout: HeldOutLoss | None
    untrained_loss: float  # on example.loss_text


@dataclass(frozen=True)
class Untrained:
    """The untrained model on the traced step's tokens: its next-token probabilities, and its
    embedding matrix."""

    next_probs: np.ndarray
    embed_tokens: np.ndarray


@dataclass(frozen=True)
class CacheCheck:
    """The replay's generation, recorded with the KV cache, beside the full recompute of the
    same run (``generate(..., cache=False)``): the largest difference between their numbers
    (each cached step's one row against the last row of the full pass)."""

    tokens: int  # generated tokens compared
    same_tokens: bool  # both runs chose the same tokens
    probs: float  # largest |difference| of a next-token probability
    logits: float  # ... of a logit
    attention: float  # ... of an attention weight (attn.softmax, every layer and head)


@dataclass(frozen=True)
class ReplayFile:
    id: str  # the recording's id on the replay page
    label_key: str  # its label's key in docs/_texts/<lang>/ui.yml
    file: str  # its name under replay/


@dataclass(frozen=True)
class GradRule:
    """One step's backward rule (``glassllm.backward.GRADS``) and its ``# @grad`` line."""

    id: str
    latex: str
    plain: str
    file: str  # "glassllm/nn.py"
    line: int  # 1-based line of the `# @grad` marker


@dataclass(frozen=True)
class AdamWEntry:
    """One weight's AdamW update in the training step, every intermediate number."""

    name: str  # its state_dict() name
    index: tuple[int, ...]
    lr: float
    beta1: float
    beta2: float
    eps: float
    weight_decay: float  # 0 for a weight the demo's recipe does not decay
    step: int  # t, the optimiser's step count (1: the first step)
    weight: float  # before the step
    grad: float
    exp_avg: float  # m after the step
    exp_avg_sq: float  # v after the step
    updated: float  # the weight after the step, as glassllm.optim.AdamW left it


@dataclass(frozen=True)
class TrainingStep:
    """One training step of the example model on the traced generation step's tokens
    (targets: the next tokens): the forward and gradient traces of ``GlassLM.gradients``,
    every parameter's gradient, the backward rules, and AdamW's update of one weight."""

    tokens: list[int]
    targets: list[int]
    loss: float
    loss_after: float  # the same tokens' loss after AdamW updated every weight once
    trace: Trace  # the forward's values
    grad_trace: Trace  # ∂loss/∂value of each, in the backward's order
    grads: ModelWeights  # ∂loss/∂parameter (lm_head: the output matrix's own part when tied)
    rules: tuple[GradRule, ...]
    update: AdamWEntry


@dataclass(frozen=True)
class MergeStep:
    """One BPE merge applied to a word: the pair and the piece it makes, as chips show each,
    its rank in the tokenizer's merges (0: learned first) and how many times it joined the
    pair."""

    left: str
    right: str
    joined: str
    rank: int
    count: int


@dataclass(frozen=True)
class WordSplit:
    """One word of the example's prompt (GPT-2's pattern): its merges in order, its tokens."""

    word: str
    ids: tuple[int, ...]
    merges: tuple[MergeStep, ...]


@dataclass(frozen=True)
class Tokenization:
    """How the example's prompt was split into the model's subword tokens
    (``glassllm``'s ``BPETokenizer.explain``)."""

    text: str
    words: tuple[WordSplit, ...]


@dataclass(frozen=True)
class Output:
    """Everything the site reads of the engine."""

    catalog: Catalog
    config: ModelConfig
    # every token ID's label as chips show it (the model's tokenizer's ``labels``: a leading
    # space as ␣) and its bytes as hex (token sequences decode through them)
    token_labels: tuple[str, ...]
    token_bytes: tuple[str, ...]
    runs: Runs
    weights: ModelWeights
    measures: Measures
    untrained: Untrained
    replay: list[ReplayFile]  # in the order the replay page offers them
    cache_check: CacheCheck  # the replay's cached generation against the full recompute
    # glassllm.circuits on the example model, each result as dataclasses.asdict (JSON):
    # "ablation", "composition", "patching", "lens", "attribution", "jobs", and "limits"
    # (engine/limits.py: where copying holds and fails); None for a model
    # too small for the featured prompt or with one block
    circuits: dict | None
    training: TrainingStep | None = None  # engine/training_step.py
    tokenization: Tokenization | None = None  # None for the byte tokenizer


@dataclass(frozen=True)
class ErrorReport:
    """A failed child: its message and, for the engine's own exceptions, where."""

    type: str  # "Refusal" (a finished message), else the exception's class name
    message: str
    file: str | None = None
    line: int | None = None
    stage: str | None = None


# -- writing and reading ------------------------------------------------------------------------

def write_output(output: Output, folder: Path) -> None:
    """``arrays.npz``, then ``meta.json`` (its presence means the run succeeded)."""
    arrays: dict[str, np.ndarray] = {}
    meta = {"format": FORMAT, "output": _encode(output, "", arrays)}
    np.savez(Path(folder) / ARRAYS, **arrays)
    (Path(folder) / META).write_text(json.dumps(meta), encoding="utf-8")


def read_output(folder: Path) -> Output:
    """The ``Output`` in ``folder``; ``SchemaError`` if its files do not hold one."""
    try:
        meta = json.loads((Path(folder) / META).read_text(encoding="utf-8"))
        with np.load(Path(folder) / ARRAYS, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (OSError, ValueError, RecursionError, EOFError) as error:
        # a zip's own errors (BadZipFile, a bad CRC) are ValueError or OSError subclasses
        raise SchemaError(f"unreadable run files in {folder}: {error!r}") from error
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SchemaError(f"{folder / META} is not format {FORMAT}")
    return _decode(Output, meta.get("output"), arrays, "output")


def write_json(value, path: Path) -> None:
    """A ``Request`` or ``ErrorReport`` (no arrays) as one JSON file."""
    Path(path).write_text(json.dumps(_encode(value, "", {})), encoding="utf-8")


def read_json(cls, path: Path):
    """A ``Request`` or ``ErrorReport`` from ``write_json``'s file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise SchemaError(f"unreadable {path}: {error!r}") from error
    return _decode(cls, data, {}, cls.__name__)


def _encode(value, path: str, arrays: dict):
    """JSON of ``value``: a dataclass as an object, an array as its key in ``arrays``."""
    if dataclasses.is_dataclass(value):
        return {f.name: _encode(getattr(value, f.name), f"{path}/{f.name}", arrays)
                for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        arrays[path] = value
        return path
    if isinstance(value, (list, tuple)):
        return [_encode(item, f"{path}/{i}", arrays) for i, item in enumerate(value)]
    if value is None or isinstance(value, (str, bool, int, float, dict)):
        return value
    raise TypeError(f"{path}: {type(value).__name__} is not part of the schema")


def _decode(hint, data, arrays: dict, where: str):
    """``data`` (JSON) as the type ``hint``, checked all the way down."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _decode(inner, data, arrays, where)
    if dataclasses.is_dataclass(hint):
        names = [f.name for f in dataclasses.fields(hint) if f.init]
        if not isinstance(data, dict) or set(data) != set(names):
            raise SchemaError(f"{where}: expected the fields of {hint.__name__}")
        hints = typing.get_type_hints(hint)
        return hint(**{name: _decode(hints[name], data[name], arrays, f"{where}.{name}")
                       for name in names})
    if origin in (list, tuple):
        if not isinstance(data, list):
            raise SchemaError(f"{where}: expected a list")
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(data):
                raise SchemaError(f"{where}: expected {len(args)} items")
            return tuple(_decode(a, d, arrays, f"{where}[{i}]")
                         for i, (a, d) in enumerate(zip(args, data)))
        items = [_decode(args[0], d, arrays, f"{where}[{i}]") for i, d in enumerate(data)]
        return tuple(items) if origin is tuple else items
    if hint is np.ndarray:
        if not isinstance(data, str) or data not in arrays:
            raise SchemaError(f"{where}: no such array")
        return arrays[data]
    if hint is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if hint in (str, bool, int, float, dict) and isinstance(data, hint) and not (
            hint is int and isinstance(data, bool)):
        return data
    raise SchemaError(f"{where}: expected {getattr(hint, '__name__', hint)}, got "
                      f"{type(data).__name__}")


# the block parameters' names, as the child reads them off the engine's blocks
BLOCK_PARAMS = tuple(f.name for f in dataclasses.fields(BlockParams))
MODEL_CONFIG = tuple(f.name for f in dataclasses.fields(ModelConfig))
