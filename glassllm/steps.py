"""The catalog of observable steps and the `# @step` markers that place them in the source.

`STEPS` lists the 25 step IDs in execution order, each with its equation in LaTeX and in
plain text. The same notation runs through all of them: ``x`` is the residual stream of one
sequence (``n`` tokens by ``d`` features), ``h`` a normalized copy of it, ``Q, K, V`` the
per-head queries, keys and values of width ``d_h``, ``A`` the attention weights, ``g`` a
learned RMSNorm gain and ``W`` a learned weight matrix.
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


_RMS = r"\frac{{{x}}}{{\sqrt{{\frac{{1}}{{d}}\sum_{{j=1}}^{{d}} {{{x}}}_{{j}}^{{2}} + \epsilon}}}} \odot {g}"

STEPS: MappingProxyType[str, StepInfo] = MappingProxyType({
    "embed": StepInfo(
        r"x_i = E_{t_i}",
        "x_i = E[t_i]"),
    "attn.norm": StepInfo(
        "h = " + _RMS.format(x="x", g="g"),
        "h = x / sqrt(mean(x²) + ε) ⊙ g"),
    "attn.q": StepInfo(
        r"Q = h\,W_Q^\top",
        "Q = h W_Qᵀ"),
    "attn.k": StepInfo(
        r"K = h\,W_K^\top",
        "K = h W_Kᵀ"),
    "attn.v": StepInfo(
        r"V = h\,W_V^\top",
        "V = h W_Vᵀ"),
    "attn.q_rope": StepInfo(
        r"\tilde{Q} = Q \odot \cos\Theta + \operatorname{rotate\_half}(Q) \odot \sin\Theta",
        "Q̃ = Q ⊙ cos Θ + rotate_half(Q) ⊙ sin Θ"),
    "attn.k_rope": StepInfo(
        r"\tilde{K} = K \odot \cos\Theta + \operatorname{rotate\_half}(K) \odot \sin\Theta",
        "K̃ = K ⊙ cos Θ + rotate_half(K) ⊙ sin Θ"),
    "attn.scores": StepInfo(
        r"S = \frac{\tilde{Q}\,\tilde{K}^\top}{\sqrt{d_h}}",
        "S = Q̃ K̃ᵀ / √d_h"),
    "attn.mask": StepInfo(
        r"M_{ij} = \begin{cases} S_{ij} & j \le i \\ -\infty & j > i \end{cases}",
        "M_ij = S_ij if j ≤ i, else −∞"),
    "attn.softmax": StepInfo(
        r"A_{ij} = \frac{e^{M_{ij}}}{\sum_{k} e^{M_{ik}}}",
        "A_ij = exp(M_ij) / Σ_k exp(M_ik)"),
    "attn.context": StepInfo(
        r"C = A\,V",
        "C = A V"),
    "attn.out": StepInfo(
        r"o = \left[C_1 \,\|\, \cdots \,\|\, C_H\right] W_O^\top",
        "o = concat(C_1, …, C_H) W_Oᵀ"),
    "attn.residual": StepInfo(
        r"x' = x + o",
        "x' = x + o"),
    "mlp.norm": StepInfo(
        "h' = " + _RMS.format(x="x'", g="g'"),
        "h' = x' / sqrt(mean(x'²) + ε) ⊙ g'"),
    "mlp.gate": StepInfo(
        r"a = h'\,W_{\mathrm{gate}}^\top",
        "a = h' W_gateᵀ"),
    "mlp.up": StepInfo(
        r"b = h'\,W_{\mathrm{up}}^\top",
        "b = h' W_upᵀ"),
    "mlp.act": StepInfo(
        r"u = \operatorname{silu}(a) \odot b = \frac{a}{1 + e^{-a}} \odot b",
        "u = silu(a) ⊙ b = a / (1 + e^(−a)) ⊙ b"),
    "mlp.down": StepInfo(
        r"m = u\,W_{\mathrm{down}}^\top",
        "m = u W_downᵀ"),
    "mlp.residual": StepInfo(
        r"x'' = x' + m",
        "x'' = x' + m"),
    "final_norm": StepInfo(
        "z = " + _RMS.format(x="x", g="g_f"),
        "z = x / sqrt(mean(x²) + ε) ⊙ g_f"),
    "logits": StepInfo(
        r"\ell = z\,W_{\mathrm{out}}^\top",
        "ℓ = z W_outᵀ"),
    "probs": StepInfo(
        r"p = \operatorname{softmax}\!\left(\ell_n / T\right),\quad p_v = \frac{e^{\ell_{n,v}/T}}{\sum_{u} e^{\ell_{n,u}/T}}",
        "p = softmax(ℓ_n / T), p_v = exp(ℓ_n,v / T) / Σ_u exp(ℓ_n,u / T)"),
    "sample": StepInfo(
        r"t_{n+1} \sim p \quad\left(\text{greedy: } t_{n+1} = \arg\max_v p_v\right)",
        "t_(n+1) ~ p   (greedy: t_(n+1) = argmax_v p_v)"),
    "loss": StepInfo(
        r"\mathcal{L} = -\frac{1}{n}\sum_{i=1}^{n} \log \operatorname{softmax}(\ell_i)_{y_i}",
        "L = −(1/n) Σ_i log softmax(ℓ_i)[y_i]"),
    "loss.grad": StepInfo(
        r"\frac{\partial \mathcal{L}}{\partial \ell_i} = \frac{1}{n}\left(\operatorname{softmax}(\ell_i) - \operatorname{onehot}(y_i)\right)",
        "∂L/∂ℓ_i = (softmax(ℓ_i) − onehot(y_i)) / n"),
})

# The operations every transformer block runs, in order.
LAYER_STEPS: tuple[str, ...] = (
    "attn.norm", "attn.q", "attn.k", "attn.v", "attn.q_rope", "attn.k_rope",
    "attn.scores", "attn.mask", "attn.softmax", "attn.context", "attn.out",
    "attn.residual", "mlp.norm", "mlp.gate", "mlp.up", "mlp.act", "mlp.down",
    "mlp.residual",
)

# The steps whose snapshot keeps a leading head axis: (H, n, ...) or (H_kv, n, ...).
HEAD_STEPS: tuple[str, ...] = (
    "attn.q", "attn.k", "attn.v", "attn.q_rope", "attn.k_rope",
    "attn.scores", "attn.mask", "attn.softmax", "attn.context",
)

_MARKER = re.compile(r"#\s*@step\b(?P<rest>.*)$")


def scan_markers(package_dir: Path = PACKAGE_DIR) -> dict[str, dict]:
    """Find the ``# @step <id>`` comments in the package's immediate ``.py`` modules.

    Only real comments count: the tokenizer tells them apart from strings, docstrings and
    f-strings that merely contain the same text. Returns ``{id: {"file", "line"}}`` with
    ``file`` relative to the package's parent (``"glassllm/nn.py"``) and lines from 1.
    Raises ``ValueError`` for an ID marked twice (naming both places), an ID not in
    ``STEPS`` or a marker without an ID (naming the place).
    """
    package_dir = Path(package_dir)
    found: dict[str, dict] = {}
    for path in sorted(package_dir.glob("*.py")):
        rel = f"{package_dir.name}/{path.name}"
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type != tokenize.COMMENT:
                continue
            match = _MARKER.match(token.string)
            if match is None:
                continue
            line = token.start[0]
            place = f"{rel}:{line}"
            words = match.group("rest").split()
            if not words:
                raise ValueError(f"{place}: '# @step' marker without a step ID; "
                                 f"write '# @step <id>' with one of the IDs in glassllm.STEPS")
            step_id = words[0]
            if step_id not in STEPS:
                raise ValueError(f"{place}: marker names unknown step ID {step_id!r}; "
                                 f"use one of the IDs in glassllm.STEPS or add it there")
            if step_id in found:
                first = found[step_id]
                raise ValueError(f"step ID {step_id!r} is marked twice: at "
                                 f"{first['file']}:{first['line']} and at {place}; "
                                 f"keep one marker, on the line of the operation")
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
