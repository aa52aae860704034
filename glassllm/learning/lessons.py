"""Lessons: a tiny model trained from scratch while the probes watch its heads form.

``induction(seed=0)`` trains a two-block GlassLM, with glassllm's own backward pass
(``GlassLM.gradients``) and AdamW (``glassllm.optim``), on sequences that only induction can
predict, and every ``snapshot_every`` steps measures what Olsson et al. (2022) measured as
induction heads formed: the loss where a token cannot be known yet (its first occurrence),
the loss where it can be copied from earlier in the sequence, the best layer-0 head's
previous-token score and the best layer-1 head's induction score, with those two heads'
attention on a probe. The story it tells, in a few hundred steps: a plateau, then a
previous-token head and an induction head forming together in a sudden phase change, the
second copy's loss collapsing.

**The training data.** Each sequence is a random prefix (0–8 tokens), then a span of 3–10
distinct random tokens repeated until the sequence ends. After the span's first occurrence
every next token can be read off the sequence, but only by finding the current token's
previous occurrence and copying the token after it: the span's length, and so the distance
to look back, changes from sequence to sequence, and the prefix moves where the repeats
start. A head that attends at one fixed distance is right for one span length only.

**The probe.** Sixteen sequences, never trained on, of another shape: a random prefix, a span
of 3–10 distinct tokens written exactly twice, then random tokens (none from the span). Its
scores, as in ``glassllm.probes`` but each at the probe's own offsets:

- previous-token score of a layer-0 head: its mean attention from position i to i−1;
- induction score of a layer-1 head: its mean attention from each second-copy position to the
  position right after the same token in the first copy (what to copy next);
- the first copy's and the second copy's mean next-token loss, each copy's first token left
  out (nothing before it tells what it is).

**The check**, with the rules of ``glassllm.circuits``: a head has *formed* at the first
snapshot from which its score stays at or above ``QUALIFIES`` (0.5), the same rule for both
kinds; the previous-token head must form no later than the induction head; and at the end,
silencing the previous-token heads (``Ablate("attn.context", layer=0, head=h)``) must
collapse copying (``1 − ρ``, ρ = second copy's loss / first copy's loss, keeps at most
``COLLAPSES`` = 1/4).
The other layer-0 heads, silenced together, are the control; silencing the induction heads
breaks the copy too.

Everything is deterministic for a seed: the weights are ``GlassLM(Config(..., seed=seed))``'s,
the batches come from ``numpy.random.default_rng(seed)``, the probe is the same for every
seed. The learning rate warms up and then stays constant, so a run of fewer steps is exactly
the beginning of a longer one (the site's recording and the reader's browser agree on every
step they share).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from numbers import Integral
from typing import Sequence

import numpy as np

from ..interpret.circuits import COLLAPSES, QUALIFIES, Collapse, collapse
from ..config import Config
from ..edits import Ablate
from ..model import GlassLM
from ..nn import log_softmax
from .optim import AdamW
from ..trace import Tracer

# The model: two blocks, as small as learns the task quickly on one thread.
CONFIG = dict(vocab_size=32, d_model=32, n_layers=2, n_heads=4, n_kv_heads=4, max_len=32,
              d_ff=64)
STEPS = 800          # training steps of the full lesson
SNAPSHOT_EVERY = 10  # steps between two snapshots
BATCH = 32           # sequences per step
LR = 1e-2            # AdamW's learning rate after the warm-up ...
WARMUP = 50          # ... reached linearly over these first steps
BETAS, EPS, WEIGHT_DECAY = (0.9, 0.999), 1e-8, 0.0
SPAN = (3, 10)       # shortest and longest repeated span
PREFIX = 8           # longest random prefix
PROBES = 16          # probe sequences
PROBE_SEED = 20221209  # the probe's own random numbers, apart from every training seed
SHOWN_PROBE = 6      # the probe whose attention the snapshots keep (a span of 9 at 5 and 14)


# -- the data ------------------------------------------------------------------------------

def repeating_sequence(rng: np.random.Generator, n: int, vocab: int) -> np.ndarray:
    """One training sequence of ``n`` tokens: a random prefix, then a span of distinct tokens
    repeated until the end. The prefix avoids the span's tokens, so every occurrence of a
    span token before the end has the same successor."""
    length = int(rng.integers(SPAN[0], SPAN[1] + 1))
    prefix = int(rng.integers(0, PREFIX + 1))
    shuffled = rng.permutation(vocab)
    span, others = shuffled[:length], shuffled[length:]
    repeats = -(-(n - prefix) // length)  # ceil
    return np.concatenate([rng.choice(others, size=prefix), np.tile(span, repeats)])[:n]


def training_batch(rng: np.random.Generator, batch: int, n: int, vocab: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``batch`` sequences of ``n + 1`` tokens as inputs ``(b, n)`` and targets ``(b, n)``,
    the targets shifted by one."""
    rows = np.stack([repeating_sequence(rng, n + 1, vocab) for _ in range(batch)])  # (b, n+1)
    return rows[:, :-1], rows[:, 1:]


@dataclass(frozen=True)
class Probe:
    """A probe sequence: ``tokens`` (n + 1: inputs then one more target), the span of
    ``length`` tokens starting at ``first`` and again at ``second``."""

    tokens: list[int]
    first: int
    second: int
    length: int

    @property
    def inputs(self) -> list[int]:
        return self.tokens[:-1]

    @property
    def targets(self) -> list[int]:
        return self.tokens[1:]

    def copy_positions(self, start: int) -> np.ndarray:
        """The input positions whose target is a copy's token 1 … length−1."""
        return start + np.arange(self.length - 1)

    def induction_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(query, key) positions of the induction score: each second-copy position and the
        position after the same token in the first copy."""
        j = np.arange(self.length)
        return self.second + j, self.first + j + 1


def make_probes(count: int = PROBES, n: int = CONFIG["max_len"],
                vocab: int = CONFIG["vocab_size"]) -> list[Probe]:
    """``count`` probe sequences of ``n + 1`` tokens: span lengths 3 … 10 in turn, each with a
    random prefix, written twice, then random tokens that are not in the span."""
    rng = np.random.default_rng(PROBE_SEED)
    lengths = [SPAN[0] + k % (SPAN[1] - SPAN[0] + 1) for k in range(count)]
    probes = []
    for length in lengths:
        prefix = int(rng.integers(0, PREFIX + 1))
        shuffled = rng.permutation(vocab)
        span, others = shuffled[:length], shuffled[length:]
        tail = n + 1 - prefix - 2 * length
        tokens = np.concatenate([rng.choice(others, size=prefix), span, span,
                                 rng.choice(others, size=tail)])
        probes.append(Probe([int(t) for t in tokens], prefix, prefix + length, length))
    return probes


# -- what a snapshot measures -------------------------------------------------------------

@dataclass(frozen=True)
class ProbeMeasures:
    """Every head's scores and the copy losses on the probe, with one edit or none.

    ``previous_token[l][r]`` and ``induction[l][r]`` per head; ``attention[l][r]`` the
    shown probe's attention weights ``(n, n)``."""

    previous_token: np.ndarray  # (L, H)
    induction: np.ndarray       # (L, H)
    first_copy_loss: float
    second_copy_loss: float
    attention: np.ndarray       # (L, H, n, n)

    @property
    def copying(self) -> float:
        """1 − ρ: the part of the first copy's loss that the second copy saves."""
        return 1.0 - self.second_copy_loss / self.first_copy_loss


def measure_probes(model: GlassLM, probes: Sequence[Probe], edit=None) -> ProbeMeasures:
    """Run every probe once through ``model.forward`` (traced at ``attn.softmax``, with
    ``edit``) and average its scores and losses over the probes."""
    n_layers = model.config.n_layers
    previous, induction, first, second = [], [], [], []
    shown = None
    for k, probe in enumerate(probes):
        trace = Tracer(steps="attn.softmax")
        logits = model.forward(probe.inputs, trace, edit=edit)  # (n, V)
        weights = np.stack([trace.get("attn.softmax", layer=l).value
                            for l in range(n_layers)])  # (L, H, n, n)
        i = np.arange(1, len(probe.inputs))
        previous.append(weights[:, :, i, i - 1].mean(axis=-1))
        query, key = probe.induction_pairs()
        induction.append(weights[:, :, query, key].mean(axis=-1))
        nll = -log_softmax(logits)[np.arange(len(probe.targets)), probe.targets]  # (n,)
        first.append(nll[probe.copy_positions(probe.first)])
        second.append(nll[probe.copy_positions(probe.second)])
        if k == SHOWN_PROBE:
            shown = weights
    return ProbeMeasures(previous_token=np.mean(previous, axis=0),
                         induction=np.mean(induction, axis=0),
                         first_copy_loss=float(np.concatenate(first).mean()),
                         second_copy_loss=float(np.concatenate(second).mean()),
                         attention=shown)


@dataclass(frozen=True)
class Snapshot:
    """The lesson's model after ``step`` updates.

    ``loss``: the mean cross-entropy on the training batch of this step (the batch the next
    update learns from). The rest is measured on the probe: ``first_copy_loss``,
    ``second_copy_loss``; ``previous_token``, the best layer-0 head's previous-token score
    (that head: ``previous_token_head``) and ``induction``, the best layer-1 head's induction
    score (``induction_head``); every head's scores (``previous_token_scores``, layer 0,
    ``induction_scores``, layer 1); and the two best heads' attention on the shown probe,
    ``(n, n)`` each. Read a field as ``snapshot.loss`` or ``snapshot["loss"]``.
    """

    step: int
    loss: float
    first_copy_loss: float
    second_copy_loss: float
    previous_token: float
    induction: float
    previous_token_head: int
    induction_head: int
    previous_token_scores: list[float]
    induction_scores: list[float]
    previous_token_attention: np.ndarray  # (n, n)
    induction_attention: np.ndarray       # (n, n)

    def __getitem__(self, name: str):
        if name not in self.__dataclass_fields__:
            raise KeyError(f"a snapshot has no field {name!r}; its fields are "
                           f"{', '.join(self.__dataclass_fields__)}")
        return getattr(self, name)

    def to_dict(self, decimals: int | None = None) -> dict:
        """Plain numbers and lists (JSON-ready); ``decimals`` rounds the attention weights."""
        out = asdict(self)
        for name in ("previous_token_attention", "induction_attention"):
            value = getattr(self, name)
            out[name] = (value if decimals is None else np.round(value, decimals)).tolist()
        return out


def snapshot(step: int, loss: float, measures: ProbeMeasures) -> Snapshot:
    prev_scores, ind_scores = measures.previous_token[0], measures.induction[-1]
    prev_head, ind_head = int(np.argmax(prev_scores)), int(np.argmax(ind_scores))
    return Snapshot(step=step, loss=float(loss), first_copy_loss=measures.first_copy_loss,
                    second_copy_loss=measures.second_copy_loss,
                    previous_token=float(prev_scores[prev_head]),
                    induction=float(ind_scores[ind_head]),
                    previous_token_head=prev_head, induction_head=ind_head,
                    previous_token_scores=[float(s) for s in prev_scores],
                    induction_scores=[float(s) for s in ind_scores],
                    previous_token_attention=measures.attention[0, prev_head],
                    induction_attention=measures.attention[-1, ind_head])


def formed_step(steps: Sequence[int], scores: Sequence[float],
                threshold: float = QUALIFIES) -> int | None:
    """The step of the first snapshot from which ``scores`` (one per snapshot, at ``steps``)
    stay at or above ``threshold`` to the last snapshot; None if the last is below it. The
    rule of "formed" for every head, of any kind and any run (``QUALIFIES`` for all of
    glassllm's; the byte demo's script keeps its own thresholds)."""
    if len(steps) != len(scores):
        raise ValueError(f"give one score per step: {len(steps)} steps, {len(scores)} scores")
    step = None
    for at, score in zip(steps, scores):
        if score >= threshold:
            step = at if step is None else step
        else:
            step = None
    return step


def formed_at(history: Sequence[Snapshot], kind: str) -> int | None:
    """The step at which the best ``kind`` score (``"previous_token"`` or ``"induction"``)
    formed, by ``formed_step``'s rule: the same for both kinds of head."""
    return formed_step([s.step for s in history], [getattr(s, kind) for s in history])


# -- the check -----------------------------------------------------------------------------

@dataclass(frozen=True)
class LessonAblation:
    """The probe's measures with ``heads`` ((layer, head) pairs) silenced at
    ``attn.context``, and whether copying collapses (``glassllm.circuits.collapse``)."""

    name: str
    heads: list[tuple[int, int]]
    first_copy_loss: float
    second_copy_loss: float
    induction: float  # the clean best induction head's score
    copying: Collapse


@dataclass(frozen=True)
class LessonCheck:
    """The lesson's claims, each a rule of ``glassllm.circuits`` applied to its numbers."""

    previous_token_formed: int | None  # step, or None if it never formed
    induction_formed: int | None
    previous_token_first: bool          # formed, and no later than the induction head
    clean: dict                         # the end's probe numbers
    ablations: list[LessonAblation]     # previous-token heads, control, induction heads
    ablation_breaks_copy: bool          # silencing the previous-token heads collapses copying
    control_keeps_copy: bool            # silencing the other layer-0 heads does not


def ablate(heads: Sequence[tuple[int, int]]) -> list[Ablate]:
    """The edits that silence ``heads``: each one's context set to 0 at ``attn.context``."""
    return [Ablate("attn.context", layer=int(l), head=int(h)) for l, h in heads]


def check(model: GlassLM, probes: Sequence[Probe], history: Sequence[Snapshot]) -> LessonCheck:
    """Apply the rules to the trained model: when each head formed, and what silencing the
    previous-token heads, the other layer-0 heads and the induction heads does to copying."""
    clean = measure_probes(model, probes)
    n_heads = model.config.n_heads
    ind_head = int(np.argmax(clean.induction[-1]))
    prev = [(0, h) for h in range(n_heads) if clean.previous_token[0, h] >= QUALIFIES]
    if not prev:  # none qualifies: the best one is still the one to test
        prev = [(0, int(np.argmax(clean.previous_token[0])))]
    others = [(0, h) for h in range(n_heads) if (0, h) not in prev]
    ind = [(1, h) for h in range(n_heads) if clean.induction[-1, h] >= QUALIFIES] or [(1, ind_head)]
    groups = [("previous-token heads", prev), ("other layer-0 heads", others),
              ("induction heads", ind)]
    rows = []
    for name, heads in groups:
        if not heads:
            continue
        edited = measure_probes(model, probes, ablate(heads))
        copying = collapse("copying", clean.copying, edited.copying) if clean.copying > 0 \
            else Collapse("copying", clean.copying, edited.copying, float("nan"), False)
        rows.append(LessonAblation(name, heads, edited.first_copy_loss, edited.second_copy_loss,
                                   float(edited.induction[-1, ind_head]), copying))
    prev_at, ind_at = formed_at(history, "previous_token"), formed_at(history, "induction")
    by_name = {row.name: row for row in rows}
    control = by_name.get("other layer-0 heads")
    return LessonCheck(
        previous_token_formed=prev_at, induction_formed=ind_at,
        previous_token_first=prev_at is not None and (ind_at is None or prev_at <= ind_at),
        clean={"first_copy_loss": clean.first_copy_loss,
               "second_copy_loss": clean.second_copy_loss, "copying": clean.copying,
               "previous_token": [float(s) for s in clean.previous_token[0]],
               "induction": [float(s) for s in clean.induction[-1]]},
        ablations=rows,
        ablation_breaks_copy=by_name["previous-token heads"].copying.collapsed,
        control_keeps_copy=control is None or not control.copying.collapsed)


# -- the lesson ----------------------------------------------------------------------------

def _check_count(name: str, value, low: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < low:
        raise ValueError(f"{name} must be an integer of at least {low}, got {value!r}")
    return int(value)


def _check_heads(heads, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``heads`` as (layer, head) pairs of this model: a pair of integers each, in range
    (True is no layer, 1.5 no head: ``int`` would quietly make them 1)."""
    if isinstance(heads, (str, bytes)) or not isinstance(heads, (Sequence, np.ndarray)):
        raise ValueError(f"heads must be a list of (layer, head) pairs such as [(0, 1)], "
                         f"got {heads!r}")
    pairs = []
    for pair in heads:
        if (isinstance(pair, (str, bytes)) or not isinstance(pair, (Sequence, np.ndarray))
                or len(pair) != 2):
            raise ValueError(f"heads must be a list of (layer, head) pairs such as [(0, 1)], "
                             f"got the item {pair!r}")
        layer, head = pair
        for name, value, count in (("layer", layer, n_layers), ("head", head, n_heads)):
            if (isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral)
                    or not 0 <= value < count):
                raise ValueError(f"heads: {name} must be an integer in [0, {count - 1}] (the "
                                 f"lesson's model has {n_layers} layers of {n_heads} heads), "
                                 f"got {value!r} in {pair!r}")
        pairs.append((int(layer), int(head)))
    return pairs


class Lesson:
    """A lesson under way: ``advance`` trains a few steps at a time (the browser's worker
    calls it in small pieces so the page stays live), ``history`` grows by a snapshot every
    ``snapshot_every`` steps, and ``check`` is set once the last step is done.

    ``learning_rate(step)``: the rate of update ``step`` + 1 (warm-up, then constant).
    """

    def __init__(self, seed: int = 0, *, steps: int = STEPS,
                 snapshot_every: int = SNAPSHOT_EVERY) -> None:
        self.seed = _check_count("seed", seed, 0)
        self.steps = _check_count("steps", steps, 0)
        self.snapshot_every = _check_count("snapshot_every", snapshot_every, 1)
        self.config = Config(**CONFIG, seed=self.seed)
        self.model = GlassLM(self.config)
        self.optimizer = AdamW(self.model, lr=LR, betas=BETAS, eps=EPS,
                               weight_decay=WEIGHT_DECAY)
        self.probes = make_probes()
        self.history: list[Snapshot] = []
        self.check: LessonCheck | None = None
        self.step = 0  # updates done
        self._rng = np.random.default_rng(self.seed)

    @staticmethod
    def learning_rate(step: int) -> float:
        return LR * min(1.0, (step + 1) / WARMUP)

    @property
    def done(self) -> bool:
        return self.check is not None

    @property
    def probe(self) -> Probe:
        """The probe whose attention the snapshots keep."""
        return self.probes[SHOWN_PROBE]

    @property
    def formed(self) -> dict[str, int | None]:
        """The step at which each kind of head formed so far (None: not yet), by the rule of
        ``formed_at``: ``{"previous_token": step, "induction": step}``."""
        return {kind: formed_at(self.history, kind) for kind in ("previous_token", "induction")}

    def advance(self, max_steps: int | None = None) -> list[Snapshot]:
        """Train up to ``max_steps`` more updates (all that remain by default) and return the
        snapshots taken. The snapshot of step s measures the model after s updates: on the
        probe, and its loss on the batch that update s + 1 learns from. After the last
        update comes the last snapshot and the check."""
        if max_steps is not None:
            max_steps = _check_count("max_steps", max_steps, 1)
        taken: list[Snapshot] = []
        updates = 0
        while not self.done and (max_steps is None or updates < max_steps
                                 or self.step == self.steps):
            c = self.config
            inputs, targets = training_batch(self._rng, BATCH, c.max_len, c.vocab_size)
            last = self.step == self.steps
            # computed as every step computes it, so a longer run has the same snapshot here
            loss, grads = self.model.gradients(inputs, targets)
            if last or self.step % self.snapshot_every == 0:
                taken.append(snapshot(self.step, loss, measure_probes(self.model, self.probes)))
                self.history.append(taken[-1])
            if last:
                self.check = check(self.model, self.probes, self.history)
                break
            self.optimizer.lr = self.learning_rate(self.step)
            self.optimizer.step(grads)
            self.step += 1
            updates += 1
        return taken

    def measure(self, heads: Sequence[tuple[int, int]] = ()) -> ProbeMeasures:
        """The probe's measures of the model as it is now, with ``heads`` silenced."""
        heads = _check_heads(heads, self.config.n_layers, self.config.n_heads)
        return measure_probes(self.model, self.probes, ablate(heads) if heads else None)


def induction(seed: int = 0, *, steps: int = STEPS,
              snapshot_every: int = SNAPSHOT_EVERY) -> Lesson:
    """Train the induction lesson for ``seed`` to the end and return it, checked."""
    lesson = Lesson(seed, steps=steps, snapshot_every=snapshot_every)
    lesson.advance()
    return lesson
