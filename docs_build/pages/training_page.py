"""The page "One training step": the example's training step from end to end — the forward
through the steps, the loss, the backward through the steps in reverse (each linked to its
step page's Backward section), and AdamW's update of one weight with every number, redone
here in float64 from the hyperparameters and the gradient the engine's child recorded
(``engine/training_step.py``) and checked against the weight ``glassllm.optim.AdamW`` left;
then a link that opens the replay on the recording of the same step (forward, gradients in
reverse, the update).
The words are ``docs/_texts/<lang>/backward.yml`` (``page.*``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import numpy as np

from ..data.backward import GENERATION_ONLY
from ..html.math import display_math
from ..text.languages import Language
from ..text.markdown import fmt, md_code, md_escape, md_rel, number
from .backward_section import ANCHOR
from .urls import step_page_uri

PAGE = "training-step.md"
# the replay page opens the recording a link names (docs_build/assets/replay/site.js,
# firstRecording): the same step, recorded by the engine's child as "training"
REPLAY_PAGE = "replay.md"
REPLAY_QUERY = "recording=training"


def training_page_uri(lang: Language) -> str:
    return f"{lang.prefix}{PAGE}"


@dataclass(frozen=True)
class AdamWByHand:
    """One AdamW step of one weight from zero moments, in float64 (torch's order of
    operations): the moments, their bias corrections, the decay and the step."""

    m: float
    v: float
    m_hat: float
    v_hat: float
    decayed: float
    step: float
    updated: float


def adamw_by_hand(u) -> AdamWByHand:
    """``u``: a ``schema.AdamWEntry`` at step t with the moments before it zero (t = 1)."""
    if u.step != 1:
        raise ValueError(f"the page works AdamW's first step; this update is step {u.step}")
    m = (1 - u.beta1) * u.grad
    v = (1 - u.beta2) * u.grad * u.grad
    m_hat, v_hat = m / (1 - u.beta1 ** u.step), v / (1 - u.beta2 ** u.step)
    decayed = u.weight * (1 - u.lr * u.weight_decay)
    step = u.lr * m_hat / (math.sqrt(v_hat) + u.eps)
    return AdamWByHand(m, v, m_hat, v_hat, decayed, step, decayed - step)


def _n(ui, value) -> str:
    return number(ui, np.float32(value)) if not isinstance(value, int) else str(value)


def render_training_page(run, catalog, labels: dict[str, str], ui, texts, lang: Language) -> str:
    """The Markdown of the page in one language."""
    me = training_page_uri(lang)
    t = run.training
    text = run.labels.text(t.tokens + t.targets[-1:])
    link = lambda sid, anchor="": (f"[{md_escape(labels[sid])}]"  # noqa: E731
                                   f"({md_rel(me, step_page_uri(sid, lang))}{anchor})")
    trained = [s for s in catalog.steps if s.id not in GENERATION_ONLY]
    lines = [f"# {md_escape(texts['page.title'])}", "",
             md_escape(fmt(texts, "page.intro", text=text, n=str(len(t.tokens)))), "",
             f"## {md_escape(texts['page.forward'])}", "",
             md_escape(texts["page.forward_text"]), "",
             " → ".join(link(s.id) for s in trained), "",
             f"## {md_escape(texts['page.loss'])}", "",
             display_math(r"\mathcal{L} = -\frac{1}{n}\sum_{i=0}^{n-1} \log "
                          r"\operatorname{softmax}(\ell_i)_{y_i}"), "",
             md_escape(fmt(texts, "page.loss_text", loss=_n(ui, t.loss), n=str(len(t.tokens)))), "",
             f"## {md_escape(texts['page.backward'])}", "",
             md_escape(texts["page.backward_text"]), ""]
    grads = {}
    for rec in t.grad_trace.records:
        grads.setdefault(rec.id, []).append(float(np.abs(np.asarray(rec.value)).max()))
    for s in reversed(trained):
        lines.append(f"1. {link(s.id, '#' + ANCHOR)} — "
                     + md_escape(fmt(texts, "page.largest", value=_n(ui, max(grads[s.id])))))
    u = t.update
    hand = adamw_by_hand(u)
    f = lambda v: _n(ui, v)  # noqa: E731
    lines += ["", f"## {md_escape(texts['page.update'])}", "",
              md_escape(fmt(texts, "page.update_text", name=u.name,
                            index=", ".join(map(str, u.index)), lr=f(u.lr), beta1=f(u.beta1),
                            beta2=f(u.beta2), eps=f(u.eps), decay=f(u.weight_decay))), "",
              display_math(r"\begin{aligned} m_t &= \beta_1 m_{t-1} + (1-\beta_1)\,g_t,\quad "
                           r"v_t = \beta_2 v_{t-1} + (1-\beta_2)\,g_t^2 \\ "
                           r"\hat m_t &= \frac{m_t}{1-\beta_1^t},\quad \hat v_t = \frac{v_t}{1-\beta_2^t} \\ "
                           r"w_t &= w_{t-1}(1-\eta\lambda) - \eta\,\frac{\hat m_t}{\sqrt{\hat v_t}+\epsilon}"
                           r"\end{aligned}"), "",
              f"- {md_code(f'w₀ = {f(u.weight)}, g = {f(u.grad)}, t = {u.step}')}",
              f"- {md_code(f'm₁ = (1 − {f(u.beta1)}) × {f(u.grad)} = {f(hand.m)}')}",
              f"- {md_code(f'v₁ = (1 − {f(u.beta2)}) × {f(u.grad)}² = {f(hand.v)}')}",
              f"- {md_code(f'm̂₁ = {f(hand.m)} / (1 − {f(u.beta1)}¹) = {f(hand.m_hat)}')}",
              f"- {md_code(f'v̂₁ = {f(hand.v)} / (1 − {f(u.beta2)}¹) = {f(hand.v_hat)}')}",
              f"- {md_code(f'w₀ (1 − η λ) = {f(u.weight)} × (1 − {f(u.lr)} × {f(u.weight_decay)}) = {f(hand.decayed)}')}",
              f"- {md_code(f'η m̂₁ / (√v̂₁ + ε) = {f(u.lr)} × {f(hand.m_hat)} / ({f(math.sqrt(hand.v_hat))} + {f(u.eps)}) = {f(hand.step)}')}",
              f"- {md_code(f'w₁ = {f(hand.decayed)} − {f(hand.step)} = {f(hand.updated)}')}", "",
              f'<p class="gl-adamw" data-weight="{u.weight!r}" data-grad="{u.grad!r}" '
              f'data-m="{u.exp_avg!r}" data-v="{u.exp_avg_sq!r}" data-updated="{u.updated!r}" '
              f'data-hand="{hand.updated!r}">'
              + escape(fmt(texts, "page.update_check", updated=f(u.updated), m=f(u.exp_avg),
                           v=f(u.exp_avg_sq))) + "</p>", "",
              f"## {md_escape(texts['page.after'])}", "",
              md_escape(fmt(texts, "page.after_text", before=f(t.loss), after=f(t.loss_after))), "",
              f"## {md_escape(texts['page.replay'])}", "",
              md_escape(texts["page.replay_text"]) + " "
              + f"[{md_escape(texts['page.replay_link'])}]"
              f"({md_rel(me, f'{lang.prefix}{REPLAY_PAGE}')}?{REPLAY_QUERY})", ""]
    return "\n".join(lines)
