"""Circuits: the measurements that show how a model's heads work together, not only what they
attend to.

A previous-token head (``glassllm.probes``) writes "the token before me was t" into each
position's stream. An induction head in a later layer reads it through its **keys**
(K-composition, Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"): at
the current token t its query finds the position whose previous token was t, the position
right after t's earlier occurrence, and its output copies that position's token into the
prediction. Attention patterns only suggest this; an intervention shows it (Olsson et al.
2022). Every measurement below runs glassllm's own forward with the edits of
``glassllm.edits`` at the marked steps, so each has a step page that explains what it touches:

- **ablation** (``ablation_table``): silence one head, or a group of heads, at
  ``attn.context`` and measure every head's previous-token and induction scores, the copy
  ratio and the held-out loss again;
- **composition** (``composition``): the two claims of the circuit as numbers, each with the
  rule below, and the path the previous-token head's output takes into the induction heads
  (their queries, keys or values: path ablation, Wang et al. 2022);
- **activation patching** (``activation_patching``): run a corrupted prompt with one part of
  the clean run put back, and see how much of the clean logit difference it restores;
- **logit lens** (``logit_lens``, nostalgebraist 2020): read the residual stream after each
  block through the final norm and the unembedding, as if the model stopped there;
- **direct logit attribution** (``direct_logit_attribution``): split the logit of one
  prediction into the direct contribution of the embedding, each head and each MLP.

Notation as in ``glassllm.steps`` and the docs' model page: block ``l``, query head ``r``,
position ``i`` (a key position ``j``), the stream ``x⁽ˡ⁾`` entering block ``l`` (``x⁽⁰⁾`` the
embedding, ``x⁽ˡ⁺½⁾`` after block ``l``'s attention, ``x⁽ᴸ⁾`` after the last block), the
attention weights ``A⁽ˡʳ⁾``, the context ``C⁽ˡʳ⁾``, the MLP output ``m⁽ˡ⁾``, ``γ_final`` the
final RMSNorm's gains and ``W_out`` the unembedding. ``W_O⁽ʳ⁾`` is the block of ``d_h``
columns ``r·d_h … (r+1)·d_h − 1`` of ``W_O``: head r's part of the output projection, so
head r adds ``o⁽ˡʳ⁾ = C⁽ˡʳ⁾ W_O⁽ʳ⁾ᵀ`` to the stream and ``o⁽ˡ⁾ = Σ_r o⁽ˡʳ⁾``.

Two rules turn the numbers into the sentences a page prints; they name no model, and a page
that states a claim states the rule beside it:

- a head **qualifies** as a previous-token (induction) head when its score is at least
  ``QUALIFIES`` = 0.5: on average, most of its attention is on its target;
- a measure **collapses** under an edit when it keeps at most ``COLLAPSES`` = 1/4 of its
  clean value: ``kept = edited / clean ≤ 1/4``. A score is its own measure; copying is
  measured by ``1 − ρ``, the part of the first copy's loss that the second copy saves (ρ the
  copy ratio), so copying collapses when ``1 − ρ`` keeps at most a quarter of its clean
  value (ρ close to 1: the second copy is predicted no better than the first).

Every result is a frozen dataclass of ints, floats, strings and lists (``dataclasses.asdict``
gives JSON-ready dicts). Every function is deterministic: the probes are
``glassllm.probes.repeated_random_tokens`` of fixed seeds over ``probe_alphabet(model)``
(printable bytes for a byte model, word tokens for a subword model).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Callable, Sequence

import numpy as np

from ..edits import Ablate, MODES, Patch
from ..model import GlassLM
from ..nn import log_softmax, rms_norm, softmax
from .probes import (_check_int, _check_model, heldout_tokens, probe_alphabet,
                     repeated_random_tokens)
from ..trace import Tracer

# A head qualifies as a previous-token or an induction head at this score (most of its
# attention on its target, on average).
QUALIFIES = 0.5
# A measure collapses when an edit leaves at most this fraction of its clean value.
COLLAPSES = 0.25

# The featured prompt: an ordinary English sentence written twice, cut in the second copy
# just before a word the first copy gives away. At its last token, "itten" (of " k" "itten"),
# the copy target is the first copy's " under": the demo's induction heads attend there and
# the model predicts " under", which English alone does not give away (a kitten may be found
# in many places); tests/glassllm/test_circuits.py checks these properties on the shipped
# model, not its numbers. The corrupted prompt changes that one token of the first copy,
# " under" to " upon" (one token each, so the two prompts have the same length).
FEATURED_SENTENCE = "The girl found a kitten under the bridge near the river."
FEATURED_PROMPT = FEATURED_SENTENCE + " The girl found a kitten"
FEATURED_CORRUPTED = FEATURED_SENTENCE.replace(" under", " upon") + " The girl found a kitten"
# The second featured example: a made-up name met again later in a story. The name is no
# name the demo's training stories can draw (their names are syllables of one consonant and
# one vowel), and neither the name nor the story is one of the held-out texts of the demo's
# report (scripts/heldout/).
FEATURED_NAME = "Brackenwold"
FEATURED_STORY = (f"A traveller named {FEATURED_NAME} came to our village in the spring. "
                  f"Everyone liked {FEATURED_NAME}")

# the paths from an earlier head into a later head (path ablation): the step whose value the
# later layer reads from the edited run
PATHS = {"query": "attn.q", "key": "attn.k", "value": "attn.v"}


# -- results -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Head:
    """Query head ``head`` of block ``layer``; ``name`` reads ``L1H0``."""

    layer: int
    head: int

    @property
    def name(self) -> str:
        return f"L{self.layer}H{self.head}"


@dataclass(frozen=True)
class Measures:
    r"""What the probes measure of one run, edited or not.

    ``previous_token[l][r]`` and ``induction[l][r]`` are every head's scores (as in
    ``glassllm.probes``), averaged over the probes; ``copy_first`` and ``copy_second`` the
    mean next-token losses (nats) on the first and second copy, ``copy_ratio`` their ratio
    ρ = ℒ_second / ℒ_first; ``heldout`` the held-out loss (nats per byte) of the text given,
    or None when none was. With T the length of one copy and n = 2T:

    $$P^{(l,r)} = \frac{1}{n-1}\sum_{i=1}^{n-1} A^{(l,r)}_{i,i-1},\quad
    I^{(l,r)} = \frac{1}{T}\sum_{i=T}^{2T-1} A^{(l,r)}_{i,i-T+1}$$

    Plain: P⁽ˡʳ⁾ = (1/(n−1)) Σ_(i=1…n−1) A⁽ˡʳ⁾_i,i−1; I⁽ˡʳ⁾ = (1/T) Σ_(i=T…2T−1)
    A⁽ˡʳ⁾_i,i−T+1; each averaged over the probes.
    """

    previous_token: list[list[float]]
    induction: list[list[float]]
    copy_first: float
    copy_second: float
    copy_ratio: float
    heldout: float | None

    def score(self, kind: str, head: Head) -> float:
        """The ``"previous_token"`` or ``"induction"`` score of ``head``."""
        if kind not in ("previous_token", "induction"):
            raise ValueError(f"kind must be 'previous_token' or 'induction', got {kind!r}")
        return getattr(self, kind)[head.layer][head.head]


@dataclass(frozen=True)
class CircuitHeads:
    """The heads that qualify (score ≥ ``QUALIFIES``), in layer and head order."""

    previous_token: list[Head]
    induction: list[Head]


@dataclass(frozen=True)
class Ablation:
    """One row of the ablation table: ``heads`` silenced at ``attn.context`` in ``mode``
    (``"zero"`` or ``"mean"``), and what the probes measure then. ``name`` is the head's
    name (``L0H3``) or the group's (``"previous-token heads"``, ``"induction heads"``)."""

    name: str
    heads: list[Head]
    mode: str
    measures: Measures


@dataclass(frozen=True)
class AblationTable:
    """Every head ablated in turn, then each group of qualifying heads, in each mode.

    ``clean`` is the unedited model; ``heads`` the qualifying heads of ``clean``; ``length``
    and ``seeds`` the probes (``glassllm.probes.repeated_random_tokens``); ``heldout_bytes``
    the held-out text's length (0 when none was given).
    """

    clean: Measures
    heads: CircuitHeads
    rows: list[Ablation]
    length: int
    seeds: list[int]
    heldout_bytes: int

    def row(self, name: str, mode: str = "zero") -> Ablation:
        """The row of head or group ``name`` in ``mode``."""
        for row in self.rows:
            if row.name == name and row.mode == mode:
                return row
        names = sorted({row.name for row in self.rows})
        raise ValueError(f"the table has no row {name!r} in mode {mode!r}; its rows are "
                         f"{names} in modes {sorted({row.mode for row in self.rows})}")


@dataclass(frozen=True)
class Collapse:
    """One measure, clean and edited, and whether the edit collapses it.

    ``kept = edited / clean``; ``collapsed`` when ``kept ≤ COLLAPSES``. ``what`` names the
    measure: ``"induction L1H0"`` (that head's induction score) or ``"copying"`` (1 − ρ).
    """

    what: str
    clean: float
    edited: float
    kept: float
    collapsed: bool


@dataclass(frozen=True)
class PathAblation:
    """``source`` heads ablated on one path only: the layers of the induction heads read
    their ``path`` (``"query"``, ``"key"``, ``"value"``: the steps ``attn.q``, ``attn.k``,
    ``attn.v``) from the ablated run and everything else from the clean one; ``"all"`` is
    the plain ablation. ``induction`` holds each induction head's score, ``copying`` 1 − ρ.
    """

    name: str
    source: list[Head]
    path: str
    induction: list[Collapse]
    copying: Collapse


@dataclass(frozen=True)
class Composition:
    """The circuit's claims on one model, measured, with the rules of this module.

    - ``induction_without_previous_token``: every induction head's score with all the
      previous-token heads ablated; ``previous_token_collapses_induction`` when each of them
      collapses;
    - ``copying_without_induction``: copying (1 − ρ) with all the induction heads ablated;
      ``induction_collapses_copying`` when it collapses;
    - ``paths``: for each head of the layers before the first induction head, and for the
      group of previous-token heads, its ablation on each path (``"all"``, ``"query"``,
      ``"key"``, ``"value"``); ``k_composition`` when removing the previous-token heads from
      the keys alone collapses every induction score while removing them from the queries
      alone or from the values alone collapses none.
    """

    heads: CircuitHeads
    mode: str
    induction_without_previous_token: list[Collapse]
    previous_token_collapses_induction: bool
    copying_without_induction: Collapse
    induction_collapses_copying: bool
    paths: list[PathAblation]
    k_composition: bool

    def path(self, name: str, path: str) -> PathAblation:
        """The path ablation of head or group ``name`` on ``path``."""
        for row in self.paths:
            if row.name == name and row.path == path:
                return row
        raise ValueError(f"no path ablation {name!r} on {path!r}; the rows are "
                         f"{sorted({(row.name, row.path) for row in self.paths})}")


@dataclass(frozen=True)
class StreamPatch:
    """The restored fraction after patching one residual stream at each position in turn.

    ``step_id`` and ``layer`` name the stream's step (``embed``, ``attn.residual`` or
    ``mlp.residual`` of a block), ``latex`` and ``plain`` its symbol (``x^{(3/2)}``,
    ``x⁽¹½⁾``); ``restored[i]`` is the fraction restored by patching position i alone."""

    step_id: str
    layer: int | None
    latex: str
    plain: str
    restored: list[float]


@dataclass(frozen=True)
class PatchingExample:
    """Activation patching from a clean run into a corrupted run of the same length.

    ``clean_tokens`` and ``corrupted_tokens`` differ at ``changed``; the metric is the logit
    difference ``D = ℓ_{i,answer} − ℓ_{i,wrong}`` at ``position`` i, ``clean`` and
    ``corrupted`` its values on the two runs. ``heads[l][r]`` is the fraction restored by
    patching head r's context (its whole output, every position) of block l from the clean
    run; ``streams`` the same for each residual stream, one position at a time::

        R = (D_patched − D_corrupted) / (D_clean − D_corrupted)

    R = 0 changes nothing, R = 1 restores the clean difference.
    """

    clean_tokens: list[int]
    corrupted_tokens: list[int]
    changed: list[int]
    position: int
    answer: int
    wrong: int
    clean: float
    corrupted: float
    heads: list[list[float]]
    streams: list[StreamPatch]


@dataclass(frozen=True)
class LensRow:
    """One stream read through the final norm and the unembedding, at every position.

    ``top_tokens[i]`` and ``top_probs[i]`` are the ``k`` most likely next tokens at position
    i and their probabilities; ``target_probs[i]`` and ``target_ranks[i]`` the probability
    and rank of the lens' target at i (None where there is none). Rank 0 is the top token:
    ``rank(v) = |{v′ : ℓ_{i,v′} > ℓ_{i,v}}|``, as on the ``probs`` page."""

    step_id: str
    layer: int | None
    latex: str
    plain: str
    top_tokens: list[list[int]]
    top_probs: list[list[float]]
    target_probs: list[float | None]
    target_ranks: list[int | None]


@dataclass(frozen=True)
class LogitLens:
    """The logit lens of ``tokens``: ``rows`` in the order of the streams in the model.

    ``targets[i]`` is the token each row is scored against at position i: the actual next
    token ``tokens[i+1]``, and at the last position the ``target`` given (else None)."""

    tokens: list[int]
    targets: list[int | None]
    k: int
    rows: list[LensRow]


@dataclass(frozen=True)
class Attribution:
    """Direct logit attribution of one prediction: ``token``'s logit at ``position``, or its
    logit difference against ``against`` when that is given.

    ``logit`` is the model's own value; ``embed``, ``heads[l][r]`` and ``mlps[l]`` the
    direct contributions of the embedding, each head and each MLP, which sum to ``total``;
    ``total`` equals ``logit`` up to float rounding. ``scale`` is the final RMSNorm's factor
    ``1/s_i``, frozen at its value in the run."""

    tokens: list[int]
    position: int
    token: int
    against: int | None
    logit: float
    scale: float
    embed: float
    heads: list[list[float]]
    mlps: list[float]
    total: float


@dataclass(frozen=True)
class HeadJob:
    """What one qualifying head should look at from ``position`` and where it looks.

    ``kind`` is ``"previous_token"`` (target: position − 1) or ``"induction"`` (target: the
    position after the last earlier occurrence of the current token; None when the token did
    not occur before). ``weight`` is the attention on the target, ``looks_at`` the position
    with the most attention and ``looks_weight`` that attention; ``hits`` when the target
    gets the most attention in the row."""

    layer: int
    head: int
    kind: str
    position: int
    target: int | None
    weight: float | None
    looks_at: int
    looks_weight: float
    hits: bool


@dataclass(frozen=True)
class HeadJobs:
    """The qualifying heads' jobs at ``position`` of ``tokens`` (``head_jobs``)."""

    tokens: list[int]
    position: int
    jobs: list[HeadJob]


# -- ablation ----------------------------------------------------------------------------

def ablate_heads(heads: Sequence, mode: str = "zero") -> list[Ablate]:
    r"""The edits that silence ``heads`` (``Head`` or ``(layer, head)`` pairs): each head's
    context ``C⁽ˡʳ⁾`` is set to 0 (``"zero"``) or to its mean over the positions of the run
    (``"mean"``), so it adds ``o⁽ˡʳ⁾ = 0`` (or a constant row) to the stream.

    Zero ablation removes the head; mean ablation keeps the average it adds and removes only
    what varies from position to position, the part that carries information about the
    text. The mean is over the positions of the run itself (``glassllm.edits``' mean), not
    over a data set as TransformerLens' examples often take it.

    $$C^{(l,r)}_i \leftarrow 0 \quad\text{or}\quad C^{(l,r)}_i \leftarrow
    \frac{1}{n}\sum_{i'=0}^{n-1} C^{(l,r)}_{i'}$$

    Plain: C⁽ˡʳ⁾_i ← 0, or ← (1/n) Σ_(i′=0…n−1) C⁽ˡʳ⁾_i′.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be 'zero' or 'mean', got {mode!r}")
    return [Ablate("attn.context", layer=one.layer, head=one.head, mode=mode)
            for one in _heads(heads, "heads")]


def measure(model: GlassLM, edit=None, *, length: int = 24, seeds: Sequence[int] = (0, 1, 2, 3),
            heldout: bytes | None = None) -> Measures:
    r"""The probes' measures of ``model`` with ``edit`` applied (None: the clean model).

    Each probe ``repeated_random_tokens(length, seed, probe_alphabet(model))`` runs once,
    traced, with the edit: its ``attn.softmax`` gives every head's scores and its logits the
    copy losses (the first token of each copy left out, as in
    ``glassllm.probes.copy_losses``). ``heldout`` is read with the model's tokenizer in
    windows of ``max_len`` tokens as ``glassllm.probes.heldout_loss`` reads it, each window
    run with the edit: nats per byte, the summed loss of the tokens t_k predicted over the
    bytes |t_k| they stand for. A ``mode="mean"`` edit averages over the positions of each
    run: one probe, one window.

    $$\rho = \frac{\operatorname{mean}_s \mathcal{L}_{\mathrm{second}}}
    {\operatorname{mean}_s \mathcal{L}_{\mathrm{first}}},\quad
    \mathcal{L}_{\mathrm{held\text{-}out}} = \frac{\sum_{k=1}^{N-1}
    -\log p(t_k \mid t_{<k})}{\sum_{k=1}^{N-1} |t_k|}$$

    Plain: ρ = mean_s ℒ_second / mean_s ℒ_first; ℒ_held-out = Σ_(k=1…N−1)
    −log p(t_k | the tokens before it in its window) / Σ_(k=1…N−1) |t_k|, |t_k| the bytes
    of token t_k (1 for a byte model).
    """
    model = _check_model(model)
    return _measure(model, _constant(edit), _probes(model, length, seeds), length,
                    _check_heldout(heldout))


def circuit_heads(measures: Measures, threshold: float = QUALIFIES) -> CircuitHeads:
    r"""The heads whose previous-token or induction score is at least ``threshold``.

    $$\{(l, r) : P^{(l,r)} \ge 0.5\},\quad \{(l, r) : I^{(l,r)} \ge 0.5\}$$

    Plain: previous-token heads {(l, r) : P⁽ˡʳ⁾ ≥ 0.5}, induction heads {(l, r) : I⁽ˡʳ⁾ ≥ 0.5}.
    """
    if not isinstance(measures, Measures):
        raise ValueError(f"measures must be a glassllm.circuits.Measures (from measure()), "
                         f"got {type(measures).__name__}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
            or not 0 < threshold <= 1:
        raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}")

    def qualifying(scores):
        return [Head(l, r) for l, row in enumerate(scores) for r, s in enumerate(row)
                if s >= threshold]
    return CircuitHeads(qualifying(measures.previous_token), qualifying(measures.induction))


def featured_heads(measures: Measures) -> CircuitHeads:
    r"""The head of each kind a page features: the qualifying heads (``circuit_heads``) or,
    when none qualifies, the single best-scoring one (a previous-token head in any layer but
    the last, an induction head in any layer but the first), so a page can show where it
    looks and say that it does not qualify.
    """
    heads = circuit_heads(measures)
    n_layers = len(measures.induction)

    def best(kind: str, layers) -> list[Head]:
        scores = getattr(measures, kind)
        return [max((Head(l, r) for l in layers for r in range(len(scores[l]))),
                    key=lambda h: scores[h.layer][h.head])]
    early, late = range(max(1, n_layers - 1)), range(min(1, n_layers - 1), n_layers)
    return CircuitHeads(heads.previous_token or best("previous_token", early),
                        heads.induction or best("induction", late))


def ablation_table(model: GlassLM, *, heldout: bytes | None = None,
                   modes: Sequence[str] = ("zero", "mean"), length: int = 24,
                   seeds: Sequence[int] = (0, 1, 2, 3)) -> AblationTable:
    r"""Every head ablated in turn, then all previous-token heads and all induction heads
    together, in each mode: the measures of ``measure`` for each (``ablate_heads``).

    Ablating head (l, r) cannot change its own attention, which is computed before its
    output: its own scores, and those of every head in layers up to l, stay the clean ones.
    What moves is what the later layers compute from the stream it no longer writes to.

    $$\text{row}(G, \text{mode}) = \operatorname{measure}\big(\text{model},\
    C^{(l,r)} \leftarrow 0 \text{ or its mean for } (l, r) \in G\big)$$

    Plain: the row of a group G of heads is ``measure`` with C⁽ˡʳ⁾ ← 0 (or its mean) for
    every (l, r) in G.
    """
    model = _check_model(model)
    modes = _modes(modes)
    probes, text = _probes(model, length, seeds), _check_heldout(heldout)
    clean = _measure(model, _constant(None), probes, length, text)
    heads = circuit_heads(clean)
    c = model.config
    groups = [(Head(l, r).name, [Head(l, r)]) for l in range(c.n_layers) for r in range(c.n_heads)]
    groups += [(name, members) for name, members in (("previous-token heads", heads.previous_token),
                                                     ("induction heads", heads.induction))
               if members]
    done: dict[tuple, Measures] = {}  # a group of one head is that head's row: measured once
    rows = []
    for mode in modes:
        for name, members in groups:
            key = (mode, tuple(members))
            if key not in done:
                done[key] = _measure(model, _constant(ablate_heads(members, mode)), probes,
                                     length, text)
            rows.append(Ablation(name, members, mode, done[key]))
    return AblationTable(clean, heads, rows, length, [int(s) for s in seeds],
                         0 if text is None else len(text))


# -- composition -------------------------------------------------------------------------

def collapse(what: str, clean: float, edited: float) -> Collapse:
    r"""Whether ``edited`` keeps at most ``COLLAPSES`` of ``clean`` (a positive measure).

    $$\text{kept} = \frac{\text{edited}}{\text{clean}},\quad
    \text{collapsed} \iff \text{kept} \le \tfrac{1}{4}$$

    Plain: kept = edited / clean; collapsed when kept ≤ 1/4.
    """
    if not clean > 0:
        raise ValueError(f"{what} is {clean:.4g} on the clean model: a measure can collapse "
                         f"only from a positive value (the model does not show it)")
    kept = edited / clean
    return Collapse(what, float(clean), float(edited), float(kept), bool(kept <= COLLAPSES))


def measure_path_ablation(model: GlassLM, heads: Sequence, path: str, layers: Sequence[int], *,
                          mode: str = "zero", length: int = 24,
                          seeds: Sequence[int] = (0, 1, 2, 3)) -> Measures:
    r"""``measure`` with ``heads`` ablated on one path only: the blocks ``layers`` read their
    queries (``path="query"``: ``attn.q``), keys (``"key"``: ``attn.k``) or values
    (``"value"``: ``attn.v``) from a run with the heads ablated, and everything else from
    the clean run.

    For each probe the ablated run comes first, then the clean run with that step of each of
    ``layers`` patched from it (``Patch``). Each of ``layers`` must come after every
    ablated head's layer. The patched value carries the ablation's whole effect on the
    stream that the block reads, through every part in between (the MLPs included).

    $$K^{(g)} = \tilde h\,W_K^{(g)\top},\quad \tilde h =
    \operatorname{RMSNorm}\big(\tilde x^{(l)}\big)\ \text{(the key path)}$$

    Plain: on the key path, block l's keys K⁽ᵍ⁾ = h̃ W_K⁽ᵍ⁾ᵀ come from the stream x̃⁽ˡ⁾ of
    the ablated run; its queries and values from the clean stream x⁽ˡ⁾.
    """
    model = _check_model(model)
    heads = _heads(heads, "heads")
    if path not in PATHS:
        raise ValueError(f"path must be one of {list(PATHS)}, got {path!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be 'zero' or 'mean', got {mode!r}")
    n_layers = model.config.n_layers
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence) or not layers:
        raise ValueError(f"layers must be a non-empty list of blocks, got {layers!r}")
    layers = sorted({_check_int("layers[...]", layer, 0, n_layers - 1) for layer in layers})
    latest = max(h.layer for h in heads)
    if layers[0] <= latest:
        raise ValueError(f"the path goes from the ablated heads into later blocks: layers "
                         f"{layers} must all be after layer {latest} "
                         f"(of {[h.name for h in heads]})")
    _check_in_model(heads, model)
    return _measure(model, _path_ablation(model, heads, mode, PATHS[path], layers),
                    _probes(model, length, seeds), length, None)


def composition(model: GlassLM, *, mode: str = "zero", length: int = 24,
                seeds: Sequence[int] = (0, 1, 2, 3),
                heads: CircuitHeads | None = None) -> Composition:
    r"""The circuit's claims measured on ``model``, with the rules of this module.

    1. Ablating all previous-token heads collapses each induction head's score.
    2. Ablating all induction heads collapses copying (ρ goes to about 1).
    3. K-composition: the previous-token heads act through the induction heads' keys.
       Each head of the layers before the first induction head, and the previous-token
       heads together, are ablated on each path into the induction heads' layers
       (``measure_path_ablation``: their queries, keys or values only) and on all of them.

    $$\text{kept} = \frac{I^{(l,r)}_{\text{edited}}}{I^{(l,r)}},\quad
    \text{copying} = 1 - \rho$$

    Plain: for each induction head, kept = its edited induction score / its clean one;
    copying is measured by 1 − ρ. ``heads`` defaults to the qualifying heads of the clean
    model.
    """
    model = _check_model(model)
    if mode not in MODES:
        raise ValueError(f"mode must be 'zero' or 'mean', got {mode!r}")
    probes = _probes(model, length, seeds)
    clean = _measure(model, _constant(None), probes, length, None)
    heads = circuit_heads(clean) if heads is None else _check_circuit(heads, model)
    if not heads.previous_token or not heads.induction:
        raise ValueError(f"composition needs at least one previous-token head and one "
                         f"induction head (score >= {QUALIFIES}); this model has "
                         f"{[h.name for h in heads.previous_token]} and "
                         f"{[h.name for h in heads.induction]}")
    first = min(h.layer for h in heads.induction)
    if max(h.layer for h in heads.previous_token) >= first:
        raise ValueError(f"every previous-token head must sit in a layer before the first "
                         f"induction head (layer {first}) for one to read the other; got "
                         f"{[h.name for h in heads.previous_token]}")
    clean_copying = 1 - clean.copy_ratio
    layers = sorted({h.layer for h in heads.induction})
    done: dict[tuple, Measures] = {}  # one head's group is that head: measured once

    def ablated(name, source, path) -> PathAblation:
        key = (tuple(source), path)
        if key not in done:
            done[key] = (_measure(model, _constant(ablate_heads(source, mode)), probes,
                                  length, None) if path == "all"
                         else measure_path_ablation(model, source, path, layers, mode=mode,
                                                    length=length, seeds=seeds))
        edited = done[key]
        return PathAblation(name, list(source), path, [
            collapse(f"induction {h.name}", clean.score("induction", h),
                     edited.score("induction", h)) for h in heads.induction],
            collapse("copying", clean_copying, 1 - edited.copy_ratio))

    without_previous = ablated("previous-token heads", heads.previous_token, "all")
    without_induction = ablated("induction heads", heads.induction, "all").copying
    sources = [(Head(l, r).name, [Head(l, r)]) for l in range(first)
               for r in range(model.config.n_heads)]
    sources.append(("previous-token heads", heads.previous_token))
    paths = [ablated(name, source, path) for name, source in sources
             for path in ("all", *PATHS)]
    by_path = {row.path: row for row in paths if row.name == "previous-token heads"}
    k_composition = (all(c.collapsed for c in by_path["key"].induction)
                     and not any(c.collapsed for p in ("query", "value")
                                 for c in by_path[p].induction))
    return Composition(heads, mode, without_previous.induction,
                       all(c.collapsed for c in without_previous.induction),
                       without_induction, without_induction.collapsed, paths, k_composition)


# -- activation patching -----------------------------------------------------------------

def logit_difference(model: GlassLM, tokens, position: int, answer: int, wrong: int,
                     edit=None) -> float:
    r"""How much more the model expects ``answer`` than ``wrong`` at ``position``.

    $$D = \ell_{i,a} - \ell_{i,b}$$

    Plain: D = ℓ_i,a − ℓ_i,b, the logit of the answer a minus the logit of the wrong one b.
    """
    model = _check_model(model)
    ids = _tokens(model, tokens, "tokens")
    position = _position(position, len(ids))
    answer, wrong = _token(model, answer, "answer"), _token(model, wrong, "wrong")
    logits = model.forward(ids, edit=edit)[position]
    return float(logits[answer] - logits[wrong])


def activation_patching(model: GlassLM, clean=FEATURED_PROMPT, corrupted=FEATURED_CORRUPTED, *,
                        position: int = -1, answer: int | None = None,
                        wrong: int | None = None) -> PatchingExample:
    r"""Patch each head's output, and each residual stream at each position, from the clean
    run into the corrupted run, and measure how much of the logit difference comes back.

    ``clean`` and ``corrupted`` (texts or token IDs) have the same length and differ
    somewhere before ``position``; ``answer`` and ``wrong`` default to the top predictions
    of the clean and the corrupted run at ``position``. A head is patched at ``attn.context``
    (its output is ``C⁽ˡʳ⁾ W_O⁽ʳ⁾ᵀ``, so this patches exactly what it adds); a stream at
    ``embed``, ``attn.residual`` and ``mlp.residual``.

    $$R = \frac{D_{\mathrm{patched}} - D_{\mathrm{corrupted}}}
    {D_{\mathrm{clean}} - D_{\mathrm{corrupted}}}$$

    Plain: R = (D_patched − D_corrupted) / (D_clean − D_corrupted).
    """
    model = _check_model(model)
    clean_ids = _tokens(model, clean, "clean")
    corrupted_ids = _tokens(model, corrupted, "corrupted")
    n = len(clean_ids)
    if len(corrupted_ids) != n:
        raise ValueError(f"clean has {n} tokens and corrupted {len(corrupted_ids)}; patching "
                         f"needs two prompts of the same length (change tokens, do not add)")
    position = _position(position, n)
    changed = [i for i in range(n) if clean_ids[i] != corrupted_ids[i]]
    if not changed or changed[0] > position:
        raise ValueError(f"clean and corrupted must differ at a position up to {position}, "
                         f"the one predicted; they differ at {changed or 'no position'}")
    clean_trace = Tracer(steps=("attn.context", "embed", "attn.residual", "mlp.residual"))
    clean_logits = model.forward(clean_ids, clean_trace)[position]
    corrupted_logits = model.forward(corrupted_ids)[position]
    answer = int(np.argmax(clean_logits)) if answer is None else _token(model, answer, "answer")
    wrong = int(np.argmax(corrupted_logits)) if wrong is None else _token(model, wrong, "wrong")
    if answer == wrong:
        raise ValueError(f"answer and wrong are the same token ({answer}); give two tokens, "
                         f"the clean run's answer and the corrupted run's")
    clean_d = float(clean_logits[answer] - clean_logits[wrong])
    corrupted_d = float(corrupted_logits[answer] - corrupted_logits[wrong])
    if abs(clean_d - corrupted_d) < 1e-6:
        raise ValueError(f"the logit difference is {clean_d:.4g} on both runs: the corruption "
                         f"changes nothing at position {position}, so nothing can be restored")

    def restored(edit) -> float:
        logits = model.forward(corrupted_ids, edit=edit)[position]
        return (float(logits[answer] - logits[wrong]) - corrupted_d) / (clean_d - corrupted_d)

    c = model.config
    heads = [[restored(Patch("attn.context", clean_trace.get("attn.context", layer=l, head=r)))
              for r in range(c.n_heads)] for l in range(c.n_layers)]
    streams = [StreamPatch(step_id, layer, latex, plain,
                           [restored(Patch(step_id, clean_trace.get(step_id, layer=layer),
                                           positions=[i])) for i in range(n)])
               for step_id, layer, latex, plain in _streams(c.n_layers, halves=True)]
    return PatchingExample(clean_ids, corrupted_ids, changed, position, answer, wrong, clean_d,
                           corrupted_d, heads, streams)


# -- logit lens --------------------------------------------------------------------------

def logit_lens(model: GlassLM, prompt=FEATURED_PROMPT, *, k: int = 5, halves: bool = False,
               target: int | None = None) -> LogitLens:
    r"""Each residual stream read as if it were the last: through the final RMSNorm and the
    unembedding, at every position.

    The streams are the embedding ``x⁽⁰⁾`` and each block's output ``x⁽ˡ⁺¹⁾``; with
    ``halves=True`` also the stream after each block's attention, ``x⁽ˡ⁺½⁾``. The norm is
    recomputed for each stream, so the last row is exactly the model's logits. ``target``:
    the token to score at the last position (the tokens after it score the others).

    $$\ell^{(s)}_i = \operatorname{RMSNorm}\big(x^{(s)}_i;\,\gamma_{\mathrm{final}}\big)\,
    W_{\mathrm{out}}^\top,\quad p^{(s)}_i = \operatorname{softmax}\big(\ell^{(s)}_i\big)$$

    Plain: ℓ⁽ˢ⁾_i = RMSNorm(x⁽ˢ⁾_i; γ_final) W_outᵀ, p⁽ˢ⁾_i = softmax(ℓ⁽ˢ⁾_i), for each
    stream s.
    """
    model = _check_model(model)
    ids = _tokens(model, prompt, "prompt")
    k = _check_int("k", k, 1, model.config.vocab_size)
    if not isinstance(halves, (bool, np.bool_)):
        raise ValueError(f"halves must be True or False, got {halves!r}")
    target = None if target is None else _token(model, target, "target")
    trace = Tracer(steps=("embed", "attn.residual", "mlp.residual"))
    model.forward(ids, trace)
    targets = [int(t) for t in ids[1:]] + [target]
    scored = np.array([t is not None for t in targets])
    index = np.array([0 if t is None else t for t in targets])
    rows = []
    for step_id, layer, latex, plain in _streams(model.config.n_layers, halves):
        logits = _read_out(model, trace.get(step_id, layer=layer).value)  # (n, V)
        probs = softmax(logits)
        top = np.argsort(-logits, axis=-1, kind="stable")[:, :k]  # (n, k)
        picked = logits[np.arange(len(ids)), index]
        ranks = (logits > picked[:, None]).sum(axis=-1)  # (n,)
        chosen = probs[np.arange(len(ids)), index]
        rows.append(LensRow(
            step_id, layer, latex, plain, top.tolist(),
            np.take_along_axis(probs, top, axis=-1).astype(float).tolist(),
            [float(p) if s else None for p, s in zip(chosen, scored)],
            [int(r) if s else None for r, s in zip(ranks, scored)]))
    return LogitLens([int(t) for t in ids], targets, k, rows)


# -- direct logit attribution ------------------------------------------------------------

def direct_logit_attribution(model: GlassLM, prompt=FEATURED_PROMPT, *, position: int = -1,
                             token: int | None = None, against: int | None = None) -> Attribution:
    r"""Each part of the model's direct contribution to one logit (or logit difference).

    The last stream is a sum, ``x⁽ᴸ⁾_i = x⁽⁰⁾_i + Σ_l (Σ_r o⁽ˡʳ⁾_i + m⁽ˡ⁾_i)``. The final
    RMSNorm divides it by ``s_i = √((1/d) Σ_c (x⁽ᴸ⁾_i,c)² + ε)``; with ``s_i`` frozen at its
    value in this run, the logit is linear in the stream, so it splits into one term per
    part. (RMSNorm does not subtract a mean, so no part needs centering first, as it would
    before a LayerNorm.) Each term is a *direct* effect: what a part writes that reaches the
    logit without passing through a later layer. ``token`` defaults to the model's top
    prediction at ``position``; with ``against`` every term is for
    ``ℓ_token − ℓ_against``.

    $$\ell_{i,v} = \frac{1}{s_i}\Big(x^{(0)}_i + \sum_{l}\big(\textstyle\sum_r
    o^{(l,r)}_i + m^{(l)}_i\big)\Big) \odot \gamma_{\mathrm{final}} \cdot W_{\mathrm{out},v},
    \quad \mathrm{DLA}(y) = \frac{1}{s_i}\,(y_i \odot \gamma_{\mathrm{final}}) \cdot
    W_{\mathrm{out},v}$$

    Plain: DLA(y) = (1/s_i) (y_i ⊙ γ_final) · W_out[v] for y = x⁽⁰⁾, each o⁽ˡʳ⁾ = C⁽ˡʳ⁾
    W_O⁽ʳ⁾ᵀ and each m⁽ˡ⁾; their sum is ℓ_i,v.
    """
    model = _check_model(model)
    ids = _tokens(model, prompt, "prompt")
    position = _position(position, len(ids))
    c = model.config
    trace = Tracer(steps=("embed", "attn.context", "mlp.down", "mlp.residual", "logits"))
    model.forward(ids, trace)
    logits = trace.get("logits").value[position]
    token = int(np.argmax(logits)) if token is None else _token(model, token, "token")
    against = None if against is None else _token(model, against, "against")
    direction = model.lm_head[token].astype(np.float64)  # W_out,v  (d,)
    if against is not None:
        direction = direction - model.lm_head[against]
    last = trace.get("mlp.residual", layer=c.n_layers - 1).value[position].astype(np.float64)
    scale = 1 / np.sqrt(np.mean(last ** 2) + c.norm_eps)  # 1/s_i, frozen
    readout = scale * model.norm.astype(np.float64) * direction  # (d,): y_i -> DLA(y)

    def direct(vector) -> float:
        return float(np.asarray(vector, dtype=np.float64) @ readout)

    dh = c.head_dim
    heads = []
    for layer, block in enumerate(model.layers):
        context = trace.get("attn.context", layer=layer).value[:, position]  # (H, dh)
        heads.append([direct(context[r] @ block.wo[:, r * dh:(r + 1) * dh].T.astype(np.float64))
                      for r in range(c.n_heads)])
    mlps = [direct(trace.get("mlp.down", layer=layer).value[position])
            for layer in range(c.n_layers)]
    embed = direct(trace.get("embed").value[position])
    logit = float(logits[token] - (0 if against is None else logits[against]))
    total = embed + sum(map(sum, heads)) + sum(mlps)
    return Attribution([int(t) for t in ids], position, token, against, logit, float(scale),
                       embed, heads, mlps, float(total))


# -- the featured prompt -----------------------------------------------------------------

def head_jobs(model: GlassLM, prompt=FEATURED_PROMPT, *, position: int = -1,
              heads: CircuitHeads | None = None) -> HeadJobs:
    r"""For each qualifying head, its target from ``position`` and the attention it puts
    there: the sentence a page prints about a head ("looks at … with weight …") comes from
    these numbers, and says so when the head misses (``hits`` False).

    A previous-token head's target is ``i − 1``; an induction head's is ``j + 1`` for the
    last earlier position ``j`` holding the current token ``t_i``. ``heads`` defaults to
    the qualifying heads of ``measure(model)``.

    $$j^\star = \max\{\,j < i : t_j = t_i\,\},\quad \text{weight} =
    A^{(l,r)}_{i,\,j^\star+1}\ \ \text{(induction)},\quad A^{(l,r)}_{i,\,i-1}\ \
    \text{(previous token)}$$

    Plain: j* = max{j < i : t_j = t_i}; an induction head's weight is A⁽ˡʳ⁾_i,j*+1, a
    previous-token head's A⁽ˡʳ⁾_i,i−1.
    """
    model = _check_model(model)
    ids = _tokens(model, prompt, "prompt")
    position = _position(position, len(ids))
    heads = circuit_heads(measure(model)) if heads is None else _check_circuit(heads, model)
    trace = Tracer(steps=("attn.softmax",))
    model.forward(ids, trace)
    earlier = [j for j in range(position) if ids[j] == ids[position]]
    targets = {"previous_token": position - 1 if position >= 1 else None,
               "induction": earlier[-1] + 1 if earlier else None}
    jobs = []
    for kind, members in (("previous_token", heads.previous_token),
                          ("induction", heads.induction)):
        for one in members:
            row = trace.get("attn.softmax", layer=one.layer, head=one.head).value[position]
            target = targets[kind]
            looks_at = int(np.argmax(row))
            weight = None if target is None else float(row[target])
            jobs.append(HeadJob(one.layer, one.head, kind, position, target, weight, looks_at,
                                float(row[looks_at]),
                                target is not None and bool(row[target] >= row[looks_at])))
    return HeadJobs(ids, position, jobs)


# -- helpers -----------------------------------------------------------------------------

def _measure(model: GlassLM, edit_for: Callable, probes: list[list[int]], length: int,
             heldout: bytes | None) -> Measures:
    """``measure`` with the edit of each run given by ``edit_for(tokens)``."""
    previous, induction, losses = [], [], []
    for tokens in probes:
        trace = Tracer(steps=("attn.softmax",))
        logits = model.forward(tokens, trace, edit=edit_for(tokens))  # (2T, V)
        weights = np.stack([trace.get("attn.softmax", layer=l).value
                            for l in range(model.config.n_layers)])  # (L, H, 2T, 2T)
        i = np.arange(1, 2 * length)
        previous.append(weights[:, :, i, i - 1].mean(axis=-1))  # (L, H)
        i = np.arange(length, 2 * length)
        induction.append(weights[:, :, i, i - length + 1].mean(axis=-1))
        nll = _nll(logits[:-1], tokens[1:])  # nll[j]: the loss of predicting tokens[j+1]
        losses.append((nll[:length - 1].mean(), nll[length:2 * length - 1].mean()))
    first, second = np.mean(losses, axis=0, dtype=np.float64)
    return Measures(np.mean(previous, axis=0).astype(float).tolist(),
                    np.mean(induction, axis=0).astype(float).tolist(),
                    float(first), float(second), float(second / first),
                    None if heldout is None else _heldout_loss(model, heldout, edit_for))


def _heldout_loss(model: GlassLM, text: bytes, edit_for: Callable) -> float:
    """``glassllm.probes.heldout_loss`` in windows of ``max_len``, each window edited."""
    data, sizes = heldout_tokens(model, text)
    window = model.config.max_len
    total, count = 0.0, 0
    for start in range(0, len(data) - 1, window):
        chunk = data[start:start + window + 1]  # window inputs, their window next tokens
        nll = _nll(model.forward(chunk[:-1], edit=edit_for(chunk[:-1])), chunk[1:])
        total += float(nll.sum(dtype=np.float64))
        count += sum(sizes[start + 1:start + len(chunk)])
    return total / count


def _nll(logits: np.ndarray, targets: Sequence[int]) -> np.ndarray:
    """−log softmax(ℓ_i)[y_i] for each row: shape (n,), float32."""
    return -log_softmax(logits)[np.arange(len(targets)), np.asarray(targets, dtype=np.int64)]


def _path_ablation(model: GlassLM, source: list[Head], mode: str, step_id: str,
                   layers: list[int]) -> Callable:
    """For each run: the later ``layers``' ``step_id`` values from a run with ``source``
    ablated, as patches for the clean run."""
    ablation = ablate_heads(source, mode)

    def edit_for(tokens):
        trace = Tracer(steps=(step_id,), layers=layers)
        model.forward(tokens, trace, edit=ablation)
        return [Patch(step_id, trace.get(step_id, layer=layer)) for layer in layers]
    return edit_for


def _read_out(model: GlassLM, stream: np.ndarray) -> np.ndarray:
    """Logits of a stream ``(n, d)`` through the final RMSNorm and the unembedding."""
    z = rms_norm(stream, model.norm, model.config.norm_eps)
    return z @ model.lm_head.T  # (n, V)


def _streams(n_layers: int, halves: bool) -> list[tuple[str, int | None, str, str]]:
    """(step ID, layer, LaTeX, plain) of each residual stream, in the model's order."""
    streams = [("embed", None, "x^{(0)}", "x⁽⁰⁾")]
    for layer in range(n_layers):
        if halves:
            whole = _superscript(layer) if layer else ""  # l + 1/2 as a mixed number: ½, 1½
            streams.append(("attn.residual", layer, f"x^{{({2 * layer + 1}/2)}}",
                            f"x⁽{whole}½⁾"))
        streams.append(("mlp.residual", layer, f"x^{{({layer + 1})}}",
                        f"x⁽{_superscript(layer + 1)}⁾"))
    return streams


def _superscript(number: int) -> str:
    return str(number).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def _constant(edit) -> Callable:
    return lambda tokens: edit


def _probes(model: GlassLM, length, seeds) -> list[list[int]]:
    alphabet = probe_alphabet(model)
    length = _check_int("length", length, 2, len(alphabet))
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds must be a non-empty sequence of non-negative integers, "
                         f"got {seeds!r}")
    seeds = [_check_int("seed", seed, 0) for seed in seeds]
    if 2 * length > model.config.max_len:
        raise ValueError(f"a probe of 2 * length = {2 * length} tokens exceeds the model's "
                         f"max_len ({model.config.max_len}); use length <= "
                         f"{model.config.max_len // 2}")
    return [repeated_random_tokens(length, seed, alphabet) for seed in seeds]


def _check_heldout(text) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, (bytes, bytearray)):
        raise ValueError(f"heldout must be bytes (e.g. (DEMO_CHECKPOINT / 'heldout.txt')"
                         f".read_bytes()), got {type(text).__name__}")
    if len(text) < 2:
        raise ValueError(f"heldout must hold at least 2 bytes to predict one, got {len(text)}")
    return bytes(text)


def _modes(modes) -> list[str]:
    if isinstance(modes, str):
        modes = [modes]
    modes = list(modes)
    if not modes or any(mode not in MODES for mode in modes):
        raise ValueError(f"modes must be a non-empty list of 'zero' and 'mean', got {modes!r}")
    return list(dict.fromkeys(modes))


def _heads(heads, what: str) -> list[Head]:
    if isinstance(heads, (Head, str, bytes)) or not isinstance(heads, Sequence):
        raise ValueError(f"{what} must be a list of Head or (layer, head) pairs, got {heads!r}")
    out = []
    for one in heads:
        if not isinstance(one, Head):
            if (not isinstance(one, (tuple, list)) or len(one) != 2
                    or any(isinstance(x, bool) or not isinstance(x, Integral) or x < 0
                           for x in one)):
                raise ValueError(f"{what} holds {one!r}; give Head(layer, head) or a pair of "
                                 f"non-negative integers (layer, head)")
            one = Head(int(one[0]), int(one[1]))
        out.append(one)
    if not out:
        raise ValueError(f"{what} is empty; give at least one head")
    return out


def _check_circuit(heads, model: GlassLM) -> CircuitHeads:
    if not isinstance(heads, CircuitHeads):
        raise ValueError(f"heads must be a glassllm.circuits.CircuitHeads (from "
                         f"circuit_heads()), got {type(heads).__name__}")
    _check_in_model(heads.previous_token + heads.induction, model)
    return heads


def _check_in_model(heads: list[Head], model: GlassLM) -> None:
    c = model.config
    for one in heads:
        if not (0 <= one.layer < c.n_layers and 0 <= one.head < c.n_heads):
            raise ValueError(f"head {one.name} is outside this model ({c.n_layers} layers of "
                             f"{c.n_heads} heads: L0H0 to L{c.n_layers - 1}H{c.n_heads - 1})")


def _tokens(model: GlassLM, prompt, what: str) -> list[int]:
    """A text (read with the model's tokenizer) or token IDs, checked as the model checks
    them."""
    if isinstance(prompt, str):
        prompt = model.encode(prompt)
    return [int(t) for t in model._check_tokens(prompt, what)]


def _position(position, n: int) -> int:
    if isinstance(position, (bool, np.bool_)) or not isinstance(position, Integral) \
            or not -n <= position < n:
        raise ValueError(f"position must be an integer in [{-n}, {n - 1}] for {n} tokens "
                         f"(-1 is the last), got {position!r}")
    return int(position) % n


def _token(model: GlassLM, token, what: str) -> int:
    vocab = model.config.vocab_size
    if isinstance(token, str):
        ids = model.encode(token)  # a text of one token names it ('e' for the byte model)
        token = ids[0] if len(ids) == 1 else token
    if isinstance(token, (bool, np.bool_)) or not isinstance(token, Integral) \
            or not 0 <= token < vocab:
        raise ValueError(f"{what} must be a token ID in [0, {vocab}) or a text that is one "
                         f"token, got {token!r}")
    return int(token)

