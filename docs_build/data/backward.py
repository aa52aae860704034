"""The Backward sections' numbers: each step's gradient from the example's training step
(``engine/training_step.py``: ``GlassLM.gradients`` with both tracers on the traced
generation step's tokens) and one entry of it redone by hand with the step's backward rule.

``grad_worked(step_id, run, layer, head)`` applies the rule of ``step_id``
(``glassllm.backward.GRADS``) to one entry: from the gradient of the step's value and the
forward's values (both of that one pass) it computes the gradient of what the step read — an
input value, whose gradient the trace also holds, or a weight, whose gradient ``gradients``
returned — in float64, and gives the two side by side. The entry is on the last position
(the prediction the generation made), in the layer and head the forward's worked number uses,
at the column of the largest gradient there.

Notation as the rules': X̄ = ∂ℒ/∂X, i a position, j a key, c a feature, r a query head,
g its key/value head, indices from 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .run import Snapshot

GENERATION_ONLY = ("probs", "sample")  # run only while generating: no training gradient
SHOWN_TERMS = (4, 2)  # a long sum shows its first 4 and last 2 terms


@dataclass(frozen=True)
class Term:
    """One term of a sum: its factors' labels and values, and the product."""

    label: str
    factors: tuple[float, ...]
    value: float


@dataclass(frozen=True)
class GradWorked:
    """One entry of a step's backward rule, redone: ``lines`` are the arithmetic, each a tuple
    of text and numbers (the page writes the numbers in its language); ``terms`` the sum's
    terms where it has many (``count`` of them); ``by_hand`` beside ``traced``, the value
    ``gradients`` computed, named by ``compared`` (a key of the texts: which gradient)."""

    step_id: str
    layer: int | None
    head: int | None
    symbol: str
    lines: tuple[tuple, ...]
    by_hand: float
    traced: float
    compared: str
    terms: tuple[Term, ...] = ()
    count: int = 0

    def __post_init__(self) -> None:  # plain floats, whatever NumPy scalar computed them
        object.__setattr__(self, "by_hand", float(self.by_hand))
        object.__setattr__(self, "traced", float(self.traced))


class _Pass:
    """The training step's values (F) and gradients (G), by step ID and layer."""

    def __init__(self, run) -> None:
        self.t = run.training
        self.run = run
        self.n = len(self.t.tokens)

    def F(self, step_id: str, layer=None) -> np.ndarray:
        return np.asarray(self.t.trace.get(step_id, layer).value, dtype=np.float64)

    def G(self, step_id: str, layer=None) -> np.ndarray:
        return np.asarray(self.t.grad_trace.get(step_id, layer).value, dtype=np.float64)

    def stream_before(self, layer: int) -> tuple[np.ndarray, np.ndarray, str]:
        """x^{(l)} and its gradient: the embedding for block 0, else the block before's output."""
        step, at = ("embed", None) if layer == 0 else ("mlp.residual", layer - 1)
        return self.F(step, at), self.G(step, at), f"x⁽{layer}⁾"


def grad_snapshots(run, step_id: str) -> list[Snapshot]:
    """∂ℒ/∂value of every record of ``step_id`` in the training step, as snapshots."""
    t = run.training
    snaps = [Snapshot(step_id=r.id, layer=r.layer, value=np.asarray(r.value), run="training",
                      row_tokens=tuple(t.tokens)) for r in t.grad_trace.records if r.id == step_id]
    return sorted(snaps, key=lambda s: -1 if s.layer is None else s.layer)


def _argmax(values: np.ndarray) -> int:
    return int(np.argmax(np.abs(values)))


def _sum(labels, a: np.ndarray, b: np.ndarray, scale: float = 1.0) -> tuple[float, tuple[Term, ...]]:
    """Σ_k a_k b_k · scale, float64, and its terms (first and last ``SHOWN_TERMS`` kept)."""
    products = a * b * scale
    first, last = SHOWN_TERMS
    keep = list(range(len(a))) if len(a) <= first + last else \
        list(range(first)) + list(range(len(a) - last, len(a)))
    return float(products.sum()), tuple(Term(labels(k), (float(a[k]), float(b[k])),
                                             float(products[k])) for k in keep)


def _rms_part(x: np.ndarray, gbar: np.ndarray, gamma: np.ndarray, eps: float, c: int):
    """RMSNorm's rule for row x: r, the mean of g ⊙ x̂, and the entry c of its input's gradient."""
    r = 1.0 / math.sqrt(float(np.mean(x * x)) + eps)
    xhat = x * r
    g = gbar * gamma
    mean = float(np.mean(g * xhat))
    return r, mean, g[c], xhat[c], r * (g[c] - xhat[c] * mean)


def grad_worked(step_id: str, run, layer: int, head: int) -> GradWorked | None:
    """One entry of ``step_id``'s backward rule worked by hand (None for the generation-only
    steps); ``layer`` and ``head`` (a query head) place the block steps."""
    if step_id in GENERATION_ONLY or run.training is None:
        return None
    p = _Pass(run)
    cfg, w, grads = run.config, run.model, run.training.grads
    i, dh = p.n - 1, cfg.head_dim
    r, g = head, head * cfg.n_kv_heads // cfg.n_heads
    block = w.layers[layer] if layer < len(w.layers) else None
    out = dict(step_id=step_id, layer=layer, head=None)

    if step_id == "loss.grad":
        y = run.training.targets[i]
        value = float(p.F("loss.grad")[i, y])
        return GradWorked(**{**out, "layer": None}, symbol=f"ℓ̄[{i},{y}]",
                          lines=((f"ℓ̄[{i},{y}] = ∂ℒ/∂ℓ[{i},{y}] = ", value),),
                          by_hand=value, traced=float(p.G("logits")[i, y]), compared="logits")
    if step_id == "loss":
        y = run.training.targets[i]
        row = p.F("logits")[i]
        top = float(row.max())
        total = float(np.exp(row - top).sum())
        prob = math.exp(float(row[y]) - top) / total
        hand = (prob - 1.0) / p.n
        return GradWorked(**{**out, "layer": None}, symbol=f"ℓ̄[{i},{y}]", lines=(
            (f"max_v ℓ[{i},v] = ", top), (f"Σ_v e^(ℓ[{i},v] − max) = ", total),
            (f"softmax(ℓ_{i})[{y}] = e^(", float(row[y]), " − ", top, ") / ", total, " = ", prob),
            (f"ℓ̄[{i},{y}] = (", prob, f" − 1) / {p.n} = ", hand)),
            by_hand=hand, traced=float(p.G("logits")[i, y]), compared="logits")
    if step_id == "logits":
        zbar = p.G("final_norm")[i]
        c = _argmax(zbar)
        w_out = np.asarray(w.lm_head if not cfg.tie_word_embeddings else w.embed_tokens, np.float64)
        hand, terms = _sum(lambda v: f"v={v}", p.G("logits")[i], w_out[:, c])
        return GradWorked(**{**out, "layer": None}, symbol=f"z̄[{i},{c}]",
                          lines=((f"z̄[{i},{c}] = Σ_v ℓ̄[{i},v] W_out[v,{c}] = ", hand),),
                          by_hand=hand, traced=float(zbar[c]), compared="final_norm",
                          terms=terms, count=cfg.vocab_size)
    if step_id == "final_norm":
        last = cfg.n_layers - 1
        xbar = p.G("mlp.residual", last)[i]
        c = _argmax(xbar)
        rr, mean, gc, xc, hand = _rms_part(p.F("mlp.residual", last)[i], p.G("final_norm")[i],
                                           np.asarray(w.norm, np.float64), cfg.norm_eps, c)
        return GradWorked(**{**out, "layer": None}, symbol=f"x̄⁽ᴸ⁾[{i},{c}]", lines=(
            (f"r_{i} = ", rr), (f"g[{i},{c}] = z̄[{i},{c}] γ_final[{c}] = ", gc),
            (f"(1/d) Σ_c g[{i},c] x̂[{i},c] = ", mean),
            (f"x̄⁽ᴸ⁾[{i},{c}] = ", rr, " × (", gc, " − ", xc, " × ", mean, ") = ", hand)),
            by_hand=hand, traced=float(xbar[c]), compared="stream")
    if step_id in ("mlp.residual", "attn.residual"):
        value, read = ("mlp.down", "mlp.residual") if step_id == "mlp.residual" else \
            ("attn.out", "attn.residual")
        row = p.G(read, layer)[i]
        c = _argmax(row)
        name, half = ("m̄", f"x̄⁽{layer}+1⁾") if step_id == "mlp.residual" else ("ō", f"x̄⁽{layer}+½⁾")
        return GradWorked(**out, symbol=f"{name}[{i},{c}]",
                          lines=((f"{name}[{i},{c}] = {half}[{i},{c}] = ", float(row[c])),),
                          by_hand=float(row[c]), traced=float(p.G(value, layer)[i, c]),
                          compared=value)
    if step_id == "mlp.down":
        ubar = p.G("mlp.act", layer)[i]
        k = _argmax(ubar)
        hand, terms = _sum(lambda c: f"c={c}", p.G("mlp.down", layer)[i],
                           np.asarray(block.w_down, np.float64)[:, k])
        return GradWorked(**out, symbol=f"ū[{i},{k}]",
                          lines=((f"ū[{i},{k}] = Σ_c m̄[{i},c] W_down[c,{k}] = ", hand),),
                          by_hand=hand, traced=float(ubar[k]), compared="mlp.act",
                          terms=terms, count=cfg.d_model)
    if step_id == "mlp.act":
        abar = p.G("mlp.gate", layer)[i]
        k = _argmax(abar)
        a, b, u = p.F("mlp.gate", layer)[i, k], p.F("mlp.up", layer)[i, k], p.G("mlp.act", layer)[i, k]
        sig = 1.0 / (1.0 + math.exp(-a))
        hand = u * b * sig * (1.0 + a * (1.0 - sig))
        return GradWorked(**out, symbol=f"ā[{i},{k}]", lines=(
            (f"a = ", a, ", b = ", b, ", ū = ", u), ("σ(a) = ", sig),
            (f"ā[{i},{k}] = ", u, " × ", b, " × ", sig, " × (1 + ", a, " × (1 − ", sig, ")) = ",
             hand)),
            by_hand=hand, traced=float(abar[k]), compared="mlp.gate")
    if step_id in ("mlp.gate", "mlp.up"):
        mine = np.asarray(getattr(grads.layers[layer], "w_gate" if step_id == "mlp.gate"
                                  else "w_up"), np.float64)
        k, c = np.unravel_index(_argmax(mine), mine.shape)
        bar = "ā" if step_id == "mlp.gate" else "b̄"
        hand, terms = _sum(lambda i2: f"i={i2}", p.G(step_id, layer)[:, k],
                           p.F("mlp.norm", layer)[:, c])
        wname = "W̄_gate" if step_id == "mlp.gate" else "W̄_up"
        return GradWorked(**out, symbol=f"{wname}[{k},{c}]",
                          lines=((f"{wname}[{k},{c}] = Σ_i {bar}[i,{k}] h′[i,{c}] = ", hand),),
                          by_hand=hand, traced=float(mine[k, c]), compared="weight",
                          terms=terms, count=p.n)
    if step_id in ("mlp.norm", "attn.norm"):
        if step_id == "mlp.norm":
            x, xbar_all = p.F("attn.residual", layer), p.G("attn.residual", layer)
            through, gamma, name = p.G("mlp.residual", layer), block.mlp_norm, f"x̄⁽{layer}+½⁾"
            hbar, hname = p.G("mlp.norm", layer), "h̄′"
        else:
            x, xbar_all, _ = p.stream_before(layer)
            through, gamma, name = p.G("attn.residual", layer), block.attn_norm, f"x̄⁽{layer}⁾"
            hbar, hname = p.G("attn.norm", layer), "h̄"
        c = _argmax(xbar_all[i])
        rr, mean, gc, xc, part = _rms_part(x[i], hbar[i], np.asarray(gamma, np.float64),
                                           cfg.norm_eps, c)
        direct = float(through[i, c])
        return GradWorked(**out, symbol=f"{name}[{i},{c}]", lines=(
            (f"r_{i} = ", rr, f", g[{i},{c}] = {hname}[{i},{c}] γ[{c}] = ", gc),
            (f"(1/d) Σ_c g[{i},c] x̂[{i},c] = ", mean),
            (f"{name}[{i},{c}] = ", direct, " + ", rr, " × (", gc, " − ", xc, " × ", mean, ") = ",
             direct + part)),
            by_hand=direct + part, traced=float(xbar_all[i, c]), compared="stream")
    out["head"] = r
    if step_id == "attn.out":
        cbar = p.G("attn.context", layer)[r, i]
        c2 = _argmax(cbar)
        hand, terms = _sum(lambda c: f"c={c}", p.G("attn.out", layer)[i],
                           np.asarray(block.wo, np.float64)[:, r * dh + c2])
        return GradWorked(**out, symbol=f"C̄⁽{r}⁾[{i},{c2}]",
                          lines=((f"C̄⁽{r}⁾[{i},{c2}] = Σ_c ō[{i},c] W_O[c,{r * dh + c2}] = ", hand),),
                          by_hand=hand, traced=float(cbar[c2]), compared="attn.context",
                          terms=terms, count=cfg.d_model)
    if step_id == "attn.context":
        abar = p.G("attn.softmax", layer)[r, i]
        j = _argmax(abar)
        hand, terms = _sum(lambda c: f"c={c}", p.G("attn.context", layer)[r, i],
                           p.F("attn.v", layer)[g, j])
        return GradWorked(**out, symbol=f"Ā⁽{r}⁾[{i},{j}]",
                          lines=((f"Ā⁽{r}⁾[{i},{j}] = Σ_c C̄⁽{r}⁾[{i},c] V⁽{g}⁾[{j},c] = ", hand),),
                          by_hand=hand, traced=float(abar[j]), compared="attn.softmax",
                          terms=terms, count=dh)
    if step_id == "attn.softmax":
        mbar = p.G("attn.mask", layer)[r, i]
        j = _argmax(mbar)
        A, Abar = p.F("attn.softmax", layer)[r, i], p.G("attn.softmax", layer)[r, i]
        total, terms = _sum(lambda k: f"j′={k}", Abar, A)
        hand = float(A[j] * (Abar[j] - total))
        return GradWorked(**out, symbol=f"M̄⁽{r}⁾[{i},{j}]", lines=(
            (f"Σ_j′ Ā⁽{r}⁾[{i},j′] A⁽{r}⁾[{i},j′] = ", total),
            (f"M̄⁽{r}⁾[{i},{j}] = ", float(A[j]), " × (", float(Abar[j]), " − ", total, ") = ", hand)),
            by_hand=hand, traced=float(mbar[j]), compared="attn.mask", terms=terms, count=p.n)
    if step_id == "attn.mask":
        sbar = p.G("attn.scores", layer)[r, i]
        j = _argmax(sbar)
        value = float(p.G("attn.mask", layer)[r, i, j])
        return GradWorked(**out, symbol=f"S̄⁽{r}⁾[{i},{j}]",
                          lines=((f"{j} ≤ {i}: S̄⁽{r}⁾[{i},{j}] = M̄⁽{r}⁾[{i},{j}] = ", value),),
                          by_hand=value, traced=float(sbar[j]), compared="attn.scores")
    if step_id == "attn.scores":
        qbar = p.G("attn.q_rope", layer)[r, i]
        c = _argmax(qbar)
        hand, terms = _sum(lambda j: f"j={j}", p.G("attn.scores", layer)[r, i],
                           p.F("attn.k_rope", layer)[g, :, c], 1.0 / math.sqrt(dh))
        return GradWorked(**out, symbol=f"Q̃̄⁽{r}⁾[{i},{c}]", lines=(
            (f"Q̃̄⁽{r}⁾[{i},{c}] = Σ_j S̄⁽{r}⁾[{i},j] K̃⁽{g}⁾[j,{c}] / √{dh} = ", hand),),
            by_hand=hand, traced=float(qbar[c]), compared="attn.q_rope", terms=terms, count=p.n)
    if step_id in ("attn.q_rope", "attn.k_rope"):
        q = step_id == "attn.q_rope"
        hh, name = (r, "Q") if q else (g, "K")
        out["head"] = hh
        ybar = p.G(step_id, layer)[hh, i]
        half = dh // 2
        xbar = p.G("attn.q" if q else "attn.k", layer)[hh, i]
        c = _argmax(xbar[:half])
        theta = i * float(cfg.rope_theta) ** (-2.0 * c / dh)
        hand = ybar[c] * math.cos(theta) + ybar[c + half] * math.sin(theta)
        return GradWorked(**out, symbol=f"{name}̄⁽{hh}⁾[{i},{c}]", lines=(
            (f"Θ = {i} × {cfg.rope_theta:g}^(−2×{c}/{dh}) = ", theta),
            (f"{name}̄⁽{hh}⁾[{i},{c}] = {name}̃̄[{i},{c}] cos Θ − (−{name}̃̄[{i},{c + half}]) sin Θ = ",
             float(ybar[c]), " × ", math.cos(theta), " + ", float(ybar[c + half]), " × ",
             math.sin(theta), " = ", hand)),
            by_hand=hand, traced=float(xbar[c]), compared="attn.q" if q else "attn.k")
    if step_id in ("attn.q", "attn.k", "attn.v"):
        hh = r if step_id == "attn.q" else g
        out["head"] = hh
        attr = {"attn.q": "wq", "attn.k": "wk", "attn.v": "wv"}[step_id]
        mine = np.asarray(getattr(grads.layers[layer], attr), np.float64)[hh * dh:(hh + 1) * dh]
        c2, c = np.unravel_index(_argmax(mine), mine.shape)
        name = {"attn.q": "Q", "attn.k": "K", "attn.v": "V"}[step_id]
        hand, terms = _sum(lambda i2: f"i={i2}", p.G(step_id, layer)[hh, :, c2],
                           p.F("attn.norm", layer)[:, c])
        return GradWorked(**out, symbol=f"W̄_{name}[{hh * dh + c2},{c}]", lines=(
            (f"W̄_{name}[{hh * dh + c2},{c}] = Σ_i {name}̄⁽{hh}⁾[i,{c2}] h[i,{c}] = ", hand),),
            by_hand=hand, traced=float(mine[c2, c]), compared="weight", terms=terms, count=p.n)
    if step_id == "embed":
        v = run.training.tokens[i]
        mine = np.asarray(grads.embed_tokens, np.float64)[v]
        c = _argmax(mine)
        rows = [k for k, t in enumerate(run.training.tokens) if t == v]
        xbar = p.G("embed")
        hand = float(sum(xbar[k, c] for k in rows))
        lines = [(f"Ē[{v},{c}] = Σ_(i: t_i = {v}) x̄⁽⁰⁾[i,{c}] = "
                  + " + ".join(f"x̄⁽⁰⁾[{k},{c}]" for k in rows) + " = ", hand)]
        if cfg.tie_word_embeddings:  # the output layer's use of the same matrix
            tied = float(np.sum(p.G("logits")[:, v] * p.F("final_norm")[:, c]))
            lines.append((f"+ Σ_i ℓ̄[i,{v}] z[i,{c}] = ", tied, " → ", hand + tied))
            hand += tied
        return GradWorked(**{**out, "layer": None}, symbol=f"Ē[{v},{c}]", lines=tuple(lines),
                          by_hand=hand, traced=float(mine[c]), compared="weight")
    raise KeyError(f"no backward worked entry for step {step_id!r}; add one to "
                   f"docs_build/data/backward.py")
