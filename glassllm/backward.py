"""The backward catalog: for each of the 25 steps of ``STEPS``, the rule that carries the
gradient of the loss back through it, and the ``# @grad`` markers that place each rule in the
source, indexed like the ``# @step`` markers.

The notation is STEPS' (``glassllm.steps``), plus one sign: a bar over a value is the gradient
of the loss with respect to it, X̄ = ∂ℒ/∂X, of X's shape. A rule takes the gradient of the
step's value and gives the gradients of what the step read: its inputs and its weights. A
value read by two operations (the residual stream, h read by Q, K and V, the embedding matrix
when tied) receives the sum of their gradients, written ``+=``. In ``loss`` and ``loss.grad``,
n counts every prediction: b·n for a batch of b sequences.

Each rule is computed on the line marked ``# @grad <id>`` (``scan_grad_markers``), in
``glassllm/nn.py`` beside its forward function, or in ``glassllm/model.py``; ``GlassLM
.gradients`` runs them in the reverse order of the forward. Q, K and V are computed by one
matmul with the stacked matrix, and so are the MLP's gate and up, forward and backward: the
weight gradients of the parts are one matmul into the stacked matrix's gradient, their markers
sit on the lines that take each part's band of it, and the gradient of h (or h′) the parts
share is one matmul with the stacked matrix. ``probs`` and ``sample`` run
only in generation, which never runs a backward pass: their rules are the functions
``next_token_distribution_backward`` and ``sample_backward`` of ``glassllm/model.py``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from .steps import PACKAGE_DIR, STEPS, StepInfo, scan_tagged_comments

GRAD_INDEX_NAME = "grad_index.json"


def _rms_grad(out: str, stream: str, gain: str, accumulate: bool) -> str:
    """RMSNorm's rule: ``out`` = RMSNorm(``stream``) ⊙ γ_``gain``, row i, features c."""
    op = r"\mathrel{+}=" if accumulate else "="
    return (r"\begin{aligned} "
            rf"\bar{{\gamma}}_{{\mathrm{{{gain}}}}} &= \sum_{{i}} \bar{{{out}}}_i \odot \hat{{x}}_i,"
            rf"\quad \hat{{x}}_i = r_i\,{stream}_i,\quad r_i = \Big(\tfrac{{1}}{{d}}\textstyle\sum_{{c}} "
            rf"\left({stream}_{{i,c}}\right)^{{2}} + \epsilon\Big)^{{-1/2}} \\ "
            rf"\bar{{{stream}}}_i &{op} r_i\Big(g_i - \hat{{x}}_i\,\tfrac{{1}}{{d}}\textstyle\sum_{{c}} "
            rf"g_{{i,c}}\,\hat{{x}}_{{i,c}}\Big),\quad g_i = \bar{{{out}}}_i \odot "
            rf"\gamma_{{\mathrm{{{gain}}}}} \end{{aligned}}")


def _rms_grad_plain(out: str, bar_out: str, stream: str, bar_stream: str, gain: str,
                    accumulate: bool) -> str:
    op = "+=" if accumulate else "="
    return (f"γ̄_{gain} = Σ_i {bar_out}_i ⊙ x̂_i, x̂_i = r_i {stream}_i, "
            f"r_i = 1/√((1/d) Σ_c ({stream}_i,c)² + ε); "
            f"{bar_stream}_i {op} r_i (g_i − x̂_i (1/d) Σ_c g_i,c x̂_i,c), g_i = {bar_out}_i ⊙ γ_{gain}")


def _projection(out: str, weight: str, head: str, heads: str) -> str:
    """A projection of h to one head's ``out`` = h W⁽head⁾ᵀ."""
    return (rf"\bar{{W}}_{{{weight}}}^{{({head})}} = \bar{{{out}}}^{{({head})\top}} h,\quad "
            rf"\bar{{h}} \mathrel{{+}}= \sum_{{{head}}} \bar{{{out}}}^{{({head})}}\,"
            rf"W_{{{weight}}}^{{({head})}},\quad {head} = 0, \dots, {heads}")


def _projection_plain(out: str, weight: str, head: str, sup: str, heads: str) -> str:
    return (f"W̄_{weight}⁽{sup}⁾ = {out}⁽{sup}⁾ᵀ h, h̄ += Σ_{head} {out}⁽{sup}⁾ W_{weight}⁽{sup}⁾, "
            f"{head} = 0…{heads}")


def _rope_grad(x: str, head: str) -> str:
    # ∂ℒ/∂x is ∂ℒ/∂x̃ rotated back by −Θ: a rotation's transpose is its inverse
    return (rf"\begin{{aligned}} \bar{{{x}}}^{{({head})}} &= \bar{{\tilde{{{x}}}}}^{{({head})}} "
            rf"\odot \cos\Theta \\ &\quad - \operatorname{{rotate\_half}}"
            rf"(\bar{{\tilde{{{x}}}}}^{{({head})}}) \odot \sin\Theta \end{{aligned}}")


def _rope_grad_plain(x: str, sup: str) -> str:
    return (f"{x}\u0304⁽{sup}⁾ = {x}\u0303\u0304⁽{sup}⁾ ⊙ cos Θ − rotate_half({x}\u0303\u0304⁽{sup}⁾) "
            f"⊙ sin Θ (the rotation by −Θ)")


_HALF = "(l+1/2)"  # the stream halfway through block l, as in STEPS

GRADS: MappingProxyType[str, StepInfo] = MappingProxyType({
    "embed": StepInfo(
        r"\bar{E}_v \mathrel{+}= \sum_{i:\,t_i = v} \bar{x}^{(0)}_i",
        "Ē_v += Σ_(i: t_i = v) x̄⁽⁰⁾_i"),
    "attn.norm": StepInfo(
        _rms_grad("h", "x^{(l)}", "attn", accumulate=True),
        _rms_grad_plain("h", "h̄", "x⁽ˡ⁾", "x̄⁽ˡ⁾", "attn", accumulate=True)),
    "attn.q": StepInfo(_projection("Q", "Q", "r", "H-1"),
                       _projection_plain("Q̄", "Q", "r", "ʳ", "H−1")),
    "attn.k": StepInfo(_projection("K", "K", "g", "H_{kv}-1"),
                       _projection_plain("K̄", "K", "g", "ᵍ", "H_kv−1")),
    "attn.v": StepInfo(_projection("V", "V", "g", "H_{kv}-1"),
                       _projection_plain("V̄", "V", "g", "ᵍ", "H_kv−1")),
    "attn.q_rope": StepInfo(_rope_grad("Q", "r"), _rope_grad_plain("Q", "ʳ")),
    "attn.k_rope": StepInfo(_rope_grad("K", "g"), _rope_grad_plain("K", "ᵍ")),
    "attn.scores": StepInfo(
        r"\bar{\tilde{Q}}^{(r)} = \frac{\bar{S}^{(r)}\,\tilde{K}^{(g(r))}}{\sqrt{d_h}},\quad "
        r"\bar{\tilde{K}}^{(g)} = \sum_{r:\,g(r) = g} \frac{\bar{S}^{(r)\top}\,\tilde{Q}^{(r)}}{\sqrt{d_h}}",
        "Q̃̄⁽ʳ⁾ = S̄⁽ʳ⁾ K̃⁽ᵍ⁽ʳ⁾⁾ / √d_h, K̃̄⁽ᵍ⁾ = Σ_(r: g(r)=g) S̄⁽ʳ⁾ᵀ Q̃⁽ʳ⁾ / √d_h"),
    "attn.mask": StepInfo(
        r"\bar{S}^{(r)}_{i,j} = \begin{cases} \bar{M}^{(r)}_{i,j} & j \le i \\ 0 & j > i \end{cases}",
        "S̄⁽ʳ⁾_i,j = M̄⁽ʳ⁾_i,j if j ≤ i, else 0"),
    "attn.softmax": StepInfo(
        r"\bar{M}^{(r)}_{i,j} = A^{(r)}_{i,j}\Big(\bar{A}^{(r)}_{i,j} - "
        r"\sum_{j'=0}^{n-1} \bar{A}^{(r)}_{i,j'}\,A^{(r)}_{i,j'}\Big)",
        "M̄⁽ʳ⁾_i,j = A⁽ʳ⁾_i,j (Ā⁽ʳ⁾_i,j − Σ_(j′=0…n−1) Ā⁽ʳ⁾_i,j′ A⁽ʳ⁾_i,j′)"),
    "attn.context": StepInfo(
        r"\bar{A}^{(r)} = \bar{C}^{(r)}\,V^{(g(r))\top},\quad "
        r"\bar{V}^{(g)} = \sum_{r:\,g(r) = g} A^{(r)\top}\,\bar{C}^{(r)}",
        "Ā⁽ʳ⁾ = C̄⁽ʳ⁾ V⁽ᵍ⁽ʳ⁾⁾ᵀ, V̄⁽ᵍ⁾ = Σ_(r: g(r)=g) A⁽ʳ⁾ᵀ C̄⁽ʳ⁾"),
    "attn.out": StepInfo(
        r"\begin{aligned} \left[\bar{C}^{(0)} \,\|\, \cdots \,\|\, \bar{C}^{(H-1)}\right] &= \bar{o}\,W_O \\ "
        r"\bar{W}_O &= \bar{o}^\top \left[C^{(0)} \,\|\, \cdots \,\|\, C^{(H-1)}\right] \end{aligned}",
        "concat(C̄⁽⁰⁾, …, C̄⁽ᴴ⁻¹⁾) = ō W_O, W̄_O = ōᵀ concat(C⁽⁰⁾, …, C⁽ᴴ⁻¹⁾)"),
    "attn.residual": StepInfo(
        rf"\bar{{o}} = \bar{{x}}^{{{_HALF}}},\quad \bar{{x}}^{{(l)}} \mathrel{{+}}= \bar{{x}}^{{{_HALF}}}",
        "ō = x̄⁽ˡ⁺½⁾, x̄⁽ˡ⁾ += x̄⁽ˡ⁺½⁾"),
    "mlp.norm": StepInfo(
        _rms_grad("h'", f"x^{{{_HALF}}}", "mlp", accumulate=True),
        _rms_grad_plain("h′", "h̄′", "x⁽ˡ⁺½⁾", "x̄⁽ˡ⁺½⁾", "mlp", accumulate=True)),
    "mlp.gate": StepInfo(
        r"\bar{W}_{\mathrm{gate}} = \bar{a}^\top h',\quad \bar{h}' \mathrel{+}= \bar{a}\,W_{\mathrm{gate}}",
        "W̄_gate = āᵀ h′, h̄′ += ā W_gate"),
    "mlp.up": StepInfo(
        r"\bar{W}_{\mathrm{up}} = \bar{b}^\top h',\quad \bar{h}' \mathrel{+}= \bar{b}\,W_{\mathrm{up}}",
        "W̄_up = b̄ᵀ h′, h̄′ += b̄ W_up"),
    "mlp.act": StepInfo(
        r"\begin{aligned} \bar{b} &= \bar{u} \odot \operatorname{silu}(a) \\ "
        r"\bar{a} &= \bar{u} \odot b \odot \sigma(a)\,\big(1 + a\,(1 - \sigma(a))\big),\quad "
        r"\sigma(a) = \frac{1}{1 + e^{-a}} \end{aligned}",
        "b̄ = ū ⊙ silu(a), ā = ū ⊙ b ⊙ σ(a) (1 + a (1 − σ(a))), σ(a) = 1 / (1 + e^(−a))"),
    "mlp.down": StepInfo(
        r"\bar{u} = \bar{m}\,W_{\mathrm{down}},\quad \bar{W}_{\mathrm{down}} = \bar{m}^\top u",
        "ū = m̄ W_down, W̄_down = m̄ᵀ u"),
    "mlp.residual": StepInfo(
        rf"\bar{{m}} = \bar{{x}}^{{(l+1)}},\quad \bar{{x}}^{{{_HALF}}} \mathrel{{+}}= \bar{{x}}^{{(l+1)}}",
        "m̄ = x̄⁽ˡ⁺¹⁾, x̄⁽ˡ⁺½⁾ += x̄⁽ˡ⁺¹⁾"),
    "final_norm": StepInfo(
        _rms_grad("z", "x^{(L)}", "final", accumulate=False),
        _rms_grad_plain("z", "z̄", "x⁽ᴸ⁾", "x̄⁽ᴸ⁾", "final", accumulate=False)),
    "logits": StepInfo(
        r"\bar{z} = \bar{\ell}\,W_{\mathrm{out}},\quad \bar{W}_{\mathrm{out}} = \bar{\ell}^\top z"
        r"\quad \left(\text{tied: } W_{\mathrm{out}} = E,\ \bar{E} \mathrel{+}= \bar{W}_{\mathrm{out}}\right)",
        "z̄ = ℓ̄ W_out, W̄_out = ℓ̄ᵀ z (tied: W_out = E, Ē += W̄_out)"),
    "probs": StepInfo(
        r"\bar{\ell}_{n-1,v} = \frac{p_v}{T}\Big(\bar{p}_v - \sum_{v'} \bar{p}_{v'}\,p_{v'}\Big)"
        r"\quad \left(0 \text{ for the logits } \operatorname{top}_k \text{ drops: } p_v = 0\right)",
        "ℓ̄_(n−1),v = (p_v / T) (p̄_v − Σ_v′ p̄_v′ p_v′) (0 for the logits top_k drops: p_v = 0)"),
    "sample": StepInfo(
        r"\bar{p} = 0\quad \left(t_n \text{ is a discrete choice: no gradient passes back}\right)",
        "p̄ = 0 (t_n is a discrete choice: no gradient passes back)"),
    "loss": StepInfo(
        r"\bar{\mathcal{L}} = 1,\quad \bar{\ell}_i = \frac{1}{n}\left(\operatorname{softmax}(\ell_i) "
        r"- \operatorname{onehot}(y_i)\right)",
        "ℒ̄ = 1, ℓ̄_i = (softmax(ℓ_i) − onehot(y_i)) / n"),
    "loss.grad": StepInfo(
        r"\bar{\ell} = \frac{\partial \mathcal{L}}{\partial \ell}\quad \left(\text{the backward pass "
        r"starts from this step's value; } \mathcal{L} \text{ does not read it: its own gradient is } 0\right)",
        "ℓ̄ = ∂ℒ/∂ℓ (the backward pass starts from this step's value; ℒ does not read it: "
        "its own gradient is 0)"),
})



def scan_grad_markers(package_dir: Path = PACKAGE_DIR) -> dict[str, dict]:
    """The ``# @grad <id>`` comments of the package's immediate modules, as ``scan_markers``
    finds the ``# @step`` ones: ``{id: {"file", "line"}}``; ``ValueError`` for an unknown,
    repeated or missing ID, naming the place."""
    return scan_tagged_comments(package_dir, "grad", "on the line that computes its backward")


def load_grad_index() -> dict[str, dict]:
    """Read the packaged ``grad_index.json`` (written by ``scripts/build_step_index.py``)."""
    text = resources.files("glassllm").joinpath(GRAD_INDEX_NAME).read_text(encoding="utf-8")
    return json.loads(text)
