"""The catalog of observable steps and the `# @step` markers that place them in the source.

`STEPS` lists the 25 step IDs in execution order, each with its equation in LaTeX and in
plain text. All of them use the notation stated once on the docs' model page: every index
counts from 0; ``i`` is a token (query) position and ``j`` a key position; ``c`` a feature;
``r`` a query head and ``g`` a key/value head, written as superscripts, with
``g(r) = ⌊r·H_kv/H⌋``; ``x⁽ˡ⁾`` the residual stream entering block ``l`` (``x⁽⁰⁾`` the
embedding, ``x⁽ˡ⁺½⁾`` the stream after block ``l``'s attention) and ``γ`` the RMSNorm gains.
Inside a block every symbol other than the stream belongs to that block.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType

PACKAGE_DIR = Path(__file__).resolve().parent
STEP_INDEX_NAME = "step_index.json"


@dataclass(frozen=True)
class StepInfo:
    """One equation in two forms: LaTeX for KaTeX and plain Unicode text."""

    latex: str
    plain: str


def _rms(out: str, stream: str, gain: str) -> str:
    """RMSNorm of one row ``i`` of ``stream``: the sum runs over the feature index ``c``."""
    return (rf"{out}_i = \frac{{{stream}_i}}{{\sqrt{{\frac{{1}}{{d}}\sum_{{c=0}}^{{d-1}} "
            rf"\left({stream}_{{i,c}}\right)^{{2}} + \epsilon}}}} \odot \gamma_{{\mathrm{{{gain}}}}}")


def _rms_plain(out: str, stream: str, gain: str) -> str:
    return f"{out}_i = {stream}_i / √((1/d) Σ_(c=0…d−1) ({stream}_i,c)² + ε) ⊙ γ_{gain}"


def _rope(x: str, head: str) -> str:
    # three aligned lines: on one line the equation is wider than a phone
    return (rf"\begin{{aligned}} \tilde{{{x}}}^{{({head})}} &= {x}^{{({head})}} \odot \cos\Theta \\ "
            rf"&\quad + \operatorname{{rotate\_half}}({x}^{{({head})}}) \odot \sin\Theta \\ "
            r"\Theta_{i,c} &= i\,\beta^{-2\,(c \bmod d_h/2)/d_h} \end{aligned}")


def _rope_plain(x: str, head: str) -> str:
    return (f"{x}̃⁽{head}⁾ = {x}⁽{head}⁾ ⊙ cos Θ + rotate_half({x}⁽{head}⁾) ⊙ sin Θ, "
            "Θ_i,c = i · β^(−2 (c mod d_h/2) / d_h)")


# Query head r reads key/value head g(r) (grouped-query attention, repeat_kv in nn.py).
_GROUP = r"g(r) = \left\lfloor r\,H_{kv}/H \right\rfloor"
_GROUP_PLAIN = "g(r) = ⌊r·H_kv/H⌋"
_HALF = "(l+1/2)"  # the stream halfway through block l, after its attention

STEPS: MappingProxyType[str, StepInfo] = MappingProxyType({
    "embed": StepInfo(
        r"x^{(0)}_i = E_{t_i}",
        "x⁽⁰⁾_i = E[t_i]"),
    "attn.norm": StepInfo(
        _rms("h", "x^{(l)}", "attn"),
        _rms_plain("h", "x⁽ˡ⁾", "attn")),
    "attn.q": StepInfo(
        r"Q^{(r)} = h\,W_Q^{(r)\top},\quad r = 0, \dots, H-1",
        "Q⁽ʳ⁾ = h W_Q⁽ʳ⁾ᵀ, r = 0…H−1"),
    "attn.k": StepInfo(
        r"K^{(g)} = h\,W_K^{(g)\top},\quad g = 0, \dots, H_{kv}-1",
        "K⁽ᵍ⁾ = h W_K⁽ᵍ⁾ᵀ, g = 0…H_kv−1"),
    "attn.v": StepInfo(
        r"V^{(g)} = h\,W_V^{(g)\top},\quad g = 0, \dots, H_{kv}-1",
        "V⁽ᵍ⁾ = h W_V⁽ᵍ⁾ᵀ, g = 0…H_kv−1"),
    "attn.q_rope": StepInfo(_rope("Q", "r"), _rope_plain("Q", "ʳ")),
    "attn.k_rope": StepInfo(_rope("K", "g"), _rope_plain("K", "ᵍ")),
    "attn.scores": StepInfo(
        r"S^{(r)} = \frac{\tilde{Q}^{(r)}\,\tilde{K}^{(g(r))\top}}{\sqrt{d_h}},\quad " + _GROUP,
        "S⁽ʳ⁾ = Q̃⁽ʳ⁾ K̃⁽ᵍ⁽ʳ⁾⁾ᵀ / √d_h, " + _GROUP_PLAIN),
    "attn.mask": StepInfo(
        r"M^{(r)}_{i,j} = \begin{cases} S^{(r)}_{i,j} & j \le i \\ -\infty & j > i \end{cases}",
        "M⁽ʳ⁾_i,j = S⁽ʳ⁾_i,j if j ≤ i, else −∞"),
    "attn.softmax": StepInfo(
        r"A^{(r)}_{i,j} = \frac{e^{M^{(r)}_{i,j}}}{\sum_{j'=0}^{n-1} e^{M^{(r)}_{i,j'}}}",
        "A⁽ʳ⁾_i,j = exp(M⁽ʳ⁾_i,j) / Σ_(j′=0…n−1) exp(M⁽ʳ⁾_i,j′)"),
    "attn.context": StepInfo(
        r"C^{(r)} = A^{(r)}\,V^{(g(r))},\quad " + _GROUP,
        "C⁽ʳ⁾ = A⁽ʳ⁾ V⁽ᵍ⁽ʳ⁾⁾, " + _GROUP_PLAIN),
    "attn.out": StepInfo(
        r"o = \left[C^{(0)} \,\|\, \cdots \,\|\, C^{(H-1)}\right] W_O^\top",
        "o = concat(C⁽⁰⁾, …, C⁽ᴴ⁻¹⁾) W_Oᵀ"),
    "attn.residual": StepInfo(
        rf"x^{{{_HALF}}} = x^{{(l)}} + o",
        "x⁽ˡ⁺½⁾ = x⁽ˡ⁾ + o"),
    "mlp.norm": StepInfo(
        _rms("h'", f"x^{{{_HALF}}}", "mlp"),
        _rms_plain("h′", "x⁽ˡ⁺½⁾", "mlp")),
    "mlp.gate": StepInfo(
        r"a = h'\,W_{\mathrm{gate}}^\top",
        "a = h′ W_gateᵀ"),
    "mlp.up": StepInfo(
        r"b = h'\,W_{\mathrm{up}}^\top",
        "b = h′ W_upᵀ"),
    "mlp.act": StepInfo(
        r"u = \operatorname{silu}(a) \odot b = \frac{a}{1 + e^{-a}} \odot b",
        "u = silu(a) ⊙ b = a / (1 + e^(−a)) ⊙ b"),
    "mlp.down": StepInfo(
        r"m = u\,W_{\mathrm{down}}^\top",
        "m = u W_downᵀ"),
    "mlp.residual": StepInfo(
        rf"x^{{(l+1)}} = x^{{{_HALF}}} + m",
        "x⁽ˡ⁺¹⁾ = x⁽ˡ⁺½⁾ + m"),
    "final_norm": StepInfo(
        _rms("z", "x^{(L)}", "final"),
        _rms_plain("z", "x⁽ᴸ⁾", "final")),
    "logits": StepInfo(
        r"\ell = z\,W_{\mathrm{out}}^\top",
        "ℓ = z W_outᵀ"),
    "probs": StepInfo(
        r"\begin{aligned} p &= \operatorname{softmax}\!\left(\operatorname{top}_k(\ell_{n-1}) / T\right) \\ "
        r"\operatorname{top}_k(\ell_{n-1})_v &= \begin{cases} \ell_{n-1,v} & \operatorname{rank}(v) < k \\ "
        r"-\infty & \text{otherwise} \end{cases} \\ "
        r"\operatorname{rank}(v) &= \left|\{v' : \ell_{n-1,v'} > \ell_{n-1,v}\}\right| \end{aligned}",
        "p = softmax(top_k(ℓ_(n−1)) / T), top_k(ℓ_(n−1))_v = ℓ_(n−1),v if rank(v) < k, else −∞, "
        "rank(v) = |{v′ : ℓ_(n−1),v′ > ℓ_(n−1),v}|"),
    "sample": StepInfo(
        r"t_n \sim p \quad\left(\text{greedy: } t_n = \arg\max_v p_v\right)",
        "t_n ~ p   (greedy: t_n = argmax_v p_v)"),
    "loss": StepInfo(
        r"\mathcal{L} = -\frac{1}{n}\sum_{i=0}^{n-1} \log \operatorname{softmax}(\ell_i)_{y_i}",
        "ℒ = −(1/n) Σ_(i=0…n−1) log softmax(ℓ_i)_(y_i)"),
    "loss.grad": StepInfo(
        r"\frac{\partial \mathcal{L}}{\partial \ell_i} = \frac{1}{n}\left(\operatorname{softmax}(\ell_i) - \operatorname{onehot}(y_i)\right)",
        "∂ℒ/∂ℓ_i = (softmax(ℓ_i) − onehot(y_i)) / n"),
})

KINDS: tuple[str, ...] = ("generation", "loss")  # the two kinds of run a trace records
_RUNS_OF = {"model": KINDS, "block": KINDS, "generation": ("generation",),
            "training": ("loss",)}  # no generation run includes the loss


@dataclass(frozen=True)
class StepFacts:
    """What a viewer needs to know about one step's snapshot besides its equation.

    ``axes`` names each axis of the snapshot of one sequence (a ``"token"`` axis is labelled
    with the token at that position; ``"query"`` and ``"key"`` are token axes too);
    ``where`` is ``"model"``, ``"block"`` (run in every block), ``"generation"`` or
    ``"training"``; ``causal`` marks the steps whose cells above the diagonal are the causal
    mask itself (−∞ before the softmax, exactly 0 after it).
    """

    axes: tuple[str, ...]
    where: str
    causal: bool = False

    @property
    def head_axis(self) -> bool:
        """The snapshot keeps a leading head axis: ``(H, n, ...)`` or ``(H_kv, n, ...)``."""
        return self.axes[:1] in (("head",), ("kv_head",))

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of run that record this step."""
        return _RUNS_OF[self.where]

    @property
    def vocabulary(self) -> bool:
        """One axis runs over the vocabulary (a value per possible next token)."""
        return "vocab" in self.axes


_TOKENS, _HEADS, _KV, _SQUARE = ("token", "feature"), ("head", "token", "dim"), \
    ("kv_head", "token", "dim"), ("head", "query", "key")

# Every per-step fact, in execution order; the tables below and every viewer derive from it.
STEP_FACTS: MappingProxyType[str, StepFacts] = MappingProxyType({
    "embed": StepFacts(_TOKENS, "model"),
    "attn.norm": StepFacts(_TOKENS, "block"),
    "attn.q": StepFacts(_HEADS, "block"),
    "attn.k": StepFacts(_KV, "block"),
    "attn.v": StepFacts(_KV, "block"),
    "attn.q_rope": StepFacts(_HEADS, "block"),
    "attn.k_rope": StepFacts(_KV, "block"),
    "attn.scores": StepFacts(_SQUARE, "block"),
    "attn.mask": StepFacts(_SQUARE, "block", causal=True),
    "attn.softmax": StepFacts(_SQUARE, "block", causal=True),
    "attn.context": StepFacts(_HEADS, "block"),
    "attn.out": StepFacts(_TOKENS, "block"),
    "attn.residual": StepFacts(_TOKENS, "block"),
    "mlp.norm": StepFacts(_TOKENS, "block"),
    "mlp.gate": StepFacts(("token", "hidden"), "block"),
    "mlp.up": StepFacts(("token", "hidden"), "block"),
    "mlp.act": StepFacts(("token", "hidden"), "block"),
    "mlp.down": StepFacts(_TOKENS, "block"),
    "mlp.residual": StepFacts(_TOKENS, "block"),
    "final_norm": StepFacts(_TOKENS, "model"),
    "logits": StepFacts(("token", "vocab"), "model"),
    "probs": StepFacts(("vocab",), "generation"),
    "sample": StepFacts((), "generation"),
    "loss": StepFacts((), "training"),
    "loss.grad": StepFacts(("token", "vocab"), "training"),
})

# The operations every transformer block runs, in order.
LAYER_STEPS: tuple[str, ...] = tuple(s for s, f in STEP_FACTS.items() if f.where == "block")

# The steps whose snapshot keeps a leading head axis: (H, n, ...) or (H_kv, n, ...).
HEAD_STEPS: tuple[str, ...] = tuple(s for s, f in STEP_FACTS.items() if f.head_axis)


def step_table() -> list[dict]:
    """Every step's equation and facts as JSON-ready dicts, in execution order: the table a
    viewer in another language (the replay's JavaScript) reads instead of copying it."""
    return [{"id": step_id, "latex": STEPS[step_id].latex, "plain": STEPS[step_id].plain,
             "axes": list(facts.axes), "where": facts.where, "head_axis": facts.head_axis,
             "kinds": list(facts.kinds), "causal": facts.causal,
             "vocabulary": facts.vocabulary}
            for step_id, facts in STEP_FACTS.items()]


def scan_markers(package_dir: Path = PACKAGE_DIR) -> dict[str, dict]:
    """Find the ``# @step <id>`` comments in the package's immediate ``.py`` modules.

    Only real comments count: the tokenizer tells them apart from strings, docstrings and
    f-strings that merely contain the same text. Returns ``{id: {"file", "line"}}`` with
    ``file`` relative to the package's parent (``"glassllm/nn.py"``) and lines from 1.
    Raises ``ValueError`` for an ID marked twice (naming both places), an ID not in
    ``STEPS`` or a marker without an ID (naming the place).
    """
    return scan_tagged_comments(package_dir, "step", "on the line of the operation")


def scan_tagged_comments(package_dir: Path, tag: str, place_hint: str) -> dict[str, dict]:
    """``scan_markers`` for comments ``# @<tag> <id>`` (``step``, or ``grad`` for the
    backward pass, ``glassllm.backward``); ``place_hint`` says where a marker belongs."""
    package_dir = Path(package_dir)
    marker = re.compile(rf"#\s*@{tag}\b(?P<rest>.*)$")
    found: dict[str, dict] = {}
    for path in sorted(package_dir.glob("*.py")):
        rel = f"{package_dir.name}/{path.name}"
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type != tokenize.COMMENT:
                continue
            match = marker.match(token.string)
            if match is None:
                continue
            line = token.start[0]
            place = f"{rel}:{line}"
            words = match.group("rest").split()
            if not words:
                raise ValueError(f"{place}: '# @{tag}' marker without a step ID; "
                                 f"write '# @{tag} <id>' with one of the IDs in glassllm.STEPS")
            step_id = words[0]
            if step_id not in STEPS:
                raise ValueError(f"{place}: marker names unknown step ID {step_id!r}; "
                                 f"use one of the IDs in glassllm.STEPS or add it there")
            if step_id in found:
                first = found[step_id]
                twice = "marked twice" if tag == "step" else f"marked twice with '# @{tag}'"
                raise ValueError(f"step ID {step_id!r} is {twice}: at "
                                 f"{first['file']}:{first['line']} and at {place}; "
                                 f"keep one marker, {place_hint}")
            found[step_id] = {"file": rel, "line": line}
    return found


def load_step_index() -> dict[str, dict]:
    """Read the packaged ``step_index.json`` (written by ``scripts/build_step_index.py``)."""
    text = resources.files("glassllm").joinpath(STEP_INDEX_NAME).read_text(encoding="utf-8")
    return json.loads(text)


def describe_index_changes(index: dict[str, dict], markers: dict[str, dict]) -> list[str]:
    """What differs between a step index and the markers, one line per step, in ID order."""
    changes = []
    for step_id in sorted(set(index) | set(markers)):
        old, new = index.get(step_id), markers.get(step_id)
        if old == new:
            continue
        if old is None:
            changes.append(f"{step_id} is marked at {new['file']}:{new['line']} but not indexed")
        elif new is None:
            changes.append(f"{step_id} is indexed at {old['file']}:{old['line']} but not marked")
        else:
            changes.append(f"{step_id} is indexed at {old['file']}:{old['line']} "
                           f"but marked at {new['file']}:{new['line']}")
    return changes


def dump_step_index(index: dict[str, dict]) -> str:
    """The canonical JSON text of a step index: sorted, indented, newline-terminated."""
    return json.dumps(index, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
