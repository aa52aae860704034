"""Worked numbers: one entry of a step's snapshot redone by hand, from the same run.

``worked_example(step_id, run, study)`` picks an interesting entry of the step's snapshot
(the featured head's layer and head for the block steps, the last position of the traced
generation, the chosen token for ``probs``/``sample``, the hardest byte of the loss run) and
redoes its arithmetic from the run's other snapshots and the model's weights, in float64
from the float32 inputs. It returns a ``Worked``: the inputs and the arithmetic as LaTeX, a
table of terms where a sum has many, and each redone entry beside the snapshot's value.
``html/worked.py`` renders one in a language.

The notation is the equations' (``glassllm/steps.py``, the model page's "Notation"): every
index counts from 0, ``i`` a position, ``j`` a key position, ``c`` a feature, ``r`` a query
head, ``g(r) = ⌊r·H_kv/H⌋`` its key/value head.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..text import numbers

SHOWN_TERMS = (4, 2)  # a long sum's table shows its first 4 and last 2 terms
CUT = "⋮"  # a table row standing for the terms left out


@dataclass(frozen=True)
class Check:
    """One redone entry: its symbol, where it sits, the hand result and the snapshot's value."""

    symbol: str  # LaTeX, e.g. S^{(3)}_{10,7}
    index: tuple[int, ...]  # into the step's snapshot of ``Worked.layer`` (head axis included)
    by_hand: float
    snapshot: float

    def __post_init__(self) -> None:  # plain floats, whatever NumPy scalar computed them
        object.__setattr__(self, "by_hand", float(self.by_hand))
        object.__setattr__(self, "snapshot", float(self.snapshot))


@dataclass(frozen=True)
class Table:
    """Terms of a sum: LaTeX header cells and rows; a row of ``CUT`` marks terms left out."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Worked:
    step_id: str
    layer: int | None
    head: int | None
    note: str  # the UI key of the sentence saying which entry and why
    fields: dict  # that sentence's fields
    lines: tuple[str, ...]  # the arithmetic: rows of a LaTeX aligned block ("lhs &= rhs")
    checks: tuple[Check, ...]
    table: Table | None = None
    after: tuple[str, ...] = field(default=())  # arithmetic that follows the table


# -- numbers as LaTeX ---------------------------------------------------------------------------

def tex(value, digits: int = 4) -> str:
    """A number as the tables write it (4 significant digits unless told), in LaTeX."""
    text = numbers.format_value(value)
    if digits != 4 and math.isfinite(float(value)):
        text = f"{float(value):.{digits}g}"
    if text == numbers.MINUS_INF:
        return r"-\infty"
    if text == numbers.PLUS_INF:
        return r"+\infty"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return rf"{mantissa}\times 10^{{{int(exponent)}}}"
    return text


def par(value) -> str:
    """``tex`` in parentheses when negative, for a factor of a product."""
    text = tex(value)
    return f"({text})" if text.startswith("-") else text


def power_base(value) -> str:
    """``tex`` as the base of a power: in parentheses when it is negative or written with an
    exponent itself (``1\\times 10^{4}`` under ``^{…}`` would be a double superscript)."""
    text = tex(value)
    return rf"\left({text}\right)" if text.startswith("-") or "^" in text else text


def token_tex(label: str) -> str:
    """A token's label inside LaTeX: ``\\text{…}``, LaTeX's specials escaped."""
    specials = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&",
                "#": r"\#", "_": r"\_", "%": r"\%", "^": r"\textasciicircum{}",
                "~": r"\textasciitilde{}"}
    return r"\text{“" + "".join(specials.get(ch, ch) for ch in label) + r"”}"


def _f(x) -> float:
    return float(np.float64(x))


def _shown(count: int) -> list[int | None]:
    first, last = SHOWN_TERMS
    return numbers.bounded(count, first + last) if count > first + last else list(range(count))


def _rows(indices, cells) -> tuple[tuple[str, ...], ...]:
    """Table rows for ``indices`` (``None`` -> a CUT row) from ``cells(index)``."""
    out = []
    for k in indices:
        out.append(cells(k) if k is not None else (CUT,) * len(cells(0)))
    return tuple(out)


# -- where the entry sits --------------------------------------------------------------------

def block_layer_head(run, study) -> tuple[int, int]:
    """The layer and query head the block steps are worked in: the best induction head's
    (what the attention pages feature), else the last layer's head 0."""
    if study is not None:
        best = study.best_induction
        return best.layer, best.head
    return run.config.n_layers - 1, 0


def _kv_head(run, r: int) -> int:
    return r * run.config.n_kv_heads // run.config.n_heads


def _gen(run, step_id: str, layer: int | None = None) -> np.ndarray:
    return np.asarray(run.traced.trace.get(step_id, layer).value)


def _stream_before(run, layer: int) -> tuple[np.ndarray, str]:
    """x^{(l)}: the embedding for block 0, else the previous block's output."""
    if layer == 0:
        return _gen(run, "embed"), "x^{(0)}"
    return _gen(run, "mlp.residual", layer - 1), f"x^{{({layer})}}"


def _where(run, layer=None, head=None, i=None, tokens=None) -> dict:
    tokens = run.traced_tokens if tokens is None else tokens
    out = {}
    if layer is not None:
        out["layer"] = layer
    if head is not None:
        out["head"] = head
    if i is not None:
        out["i"] = i
        out["token"] = run.labels(tokens[i])
    return out


# -- the worked examples, one function per kind of step -----------------------------------------

def _embed(run, study) -> Worked:
    x = _gen(run, "embed")
    i = x.shape[0] - 1
    t = run.traced_tokens[i]
    E = run.model.embed_tokens
    cs = range(3)
    lines = [rf"t_{{{i}}} &= {t} \;({token_tex(run.labels(t))})",
             rf"x^{{(0)}}_{{{i}}} &= E_{{{t}}} = \left({', '.join(tex(E[t, c]) for c in cs)}, \dots\right)"]
    checks = tuple(Check(rf"x^{{(0)}}_{{{i},{c}}}", (i, c), _f(E[t, c]), _f(x[i, c])) for c in cs)
    return Worked("embed", None, None, "worked.embed", {**_where(run, i=i), "id": t},
                  tuple(lines), checks)


def _rms_row(run, step_id, out, stream, stream_tex, gain, gain_name, layer) -> Worked:
    i = out.shape[0] - 1
    row = stream[i].astype(np.float64)
    c = int(np.argmax(np.abs(out[i])))
    d = row.shape[0]
    eps = run.config.norm_eps
    mean_square = float(np.mean(row * row))
    rms = math.sqrt(mean_square + eps)
    result = row[c] / rms * _f(gain[c])
    name = {"attn.norm": "h", "mlp.norm": "h'", "final_norm": "z"}[step_id]
    squares = " + ".join(f"{power_base(row[k])}^2" for k in range(2))
    lines = [
        rf"\tfrac{{1}}{{d}}\textstyle\sum_{{c'}} ({stream_tex}_{{{i},c'}})^2 &= \tfrac{{1}}{{{d}}}"
        rf"\big({squares}",
        rf"&\qquad + \dots + {power_base(row[-1])}^2\big)",
        rf"&= \tfrac{{{tex(np.sum(row * row))}}}{{{d}}} = {tex(mean_square)}",
        rf"\mathrm{{RMS}} &= \sqrt{{{tex(mean_square)} + {tex(eps)}}}",
        rf"&= {tex(rms)}",
        rf"{name}_{{{i},{c}}} &= \frac{{{stream_tex}_{{{i},{c}}}}}{{\mathrm{{RMS}}}}\,"
        rf"\gamma_{{\mathrm{{{gain_name}}},{c}}}",
        rf"&= \frac{{{tex(row[c])}}}{{{tex(rms)}}}\cdot {par(gain[c])} = {tex(result)}",
    ]
    check = Check(rf"{name}_{{{i},{c}}}", (i, c), result, _f(out[i, c]))
    return Worked(step_id, layer, None, "worked.rmsnorm",
                  {**_where(run, layer, None, i), "c": c, "d": d}, tuple(lines), (check,))


def _attn_norm(run, study) -> Worked:
    layer, _ = block_layer_head(run, study)
    stream, stream_tex = _stream_before(run, layer)
    return _rms_row(run, "attn.norm", _gen(run, "attn.norm", layer), stream, stream_tex,
                    run.model.layers[layer].attn_norm, "attn", layer)


def _mlp_norm(run, study) -> Worked:
    layer, _ = block_layer_head(run, study)
    return _rms_row(run, "mlp.norm", _gen(run, "mlp.norm", layer),
                    _gen(run, "attn.residual", layer), f"x^{{({layer}+1/2)}}",
                    run.model.layers[layer].mlp_norm, "mlp", layer)


def _final_norm(run, study) -> Worked:
    last = run.config.n_layers - 1
    return _rms_row(run, "final_norm", _gen(run, "final_norm"), _gen(run, "mlp.residual", last),
                    f"x^{{({last + 1})}}", run.model.norm, "final", None)


def _dot(step_id, note, symbol, index, snapshot, a, a_tex, w, w_tex, fields, layer, head,
         scale_dh: int | None = None) -> Worked:
    """An entry that is a dot product ``Σ_c' a_c' w_c'`` (divided by ``√scale_dh`` if given):
    the table shows a few of its terms, the lines the sum."""
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    terms = a64 * w64
    total = float(terms.sum())
    result = total / math.sqrt(scale_dh) if scale_dh is not None else total
    k = "c'"
    table = Table((k, a_tex(k), w_tex(k), r"\times"),
                  _rows(_shown(len(terms)), lambda k: (str(k), tex(a64[k]), tex(w64[k]), tex(terms[k]))))
    after = [rf"\textstyle\sum_{{c'=0}}^{{{len(terms) - 1}}} {a_tex(k)}\,{w_tex(k)} &= {tex(total)}"]
    if scale_dh is not None:
        after.append(rf"{symbol} &= \frac{{{tex(total)}}}{{\sqrt{{{scale_dh}}}}} = {tex(result)}")
    else:
        after.append(rf"{symbol} &= {tex(result)}")
    return Worked(step_id, layer, head, note, fields, (), (Check(symbol, index, result, snapshot),),
                  table, tuple(after))


def _projection(step_id, weight_of, letter, per_head):
    """attn.q/k/v: entry (i, c) of head r (q) or g(r) (k, v), from h and the weight's rows."""
    def work(run, study) -> Worked:
        layer, r = block_layer_head(run, study)
        head = r if per_head else _kv_head(run, r)
        out = _gen(run, step_id, layer)  # (heads, n, dh)
        h = _gen(run, "attn.norm", layer)
        i = out.shape[1] - 1
        c = int(np.argmax(np.abs(out[head, i])))
        dh = run.config.head_dim
        w = weight_of(run.model.layers[layer])[head * dh + c]
        symbol = rf"{letter}^{{({head})}}_{{{i},{c}}}"
        return _dot(step_id, "worked.head_projection", symbol, (head, i, c), _f(out[head, i, c]),
                    h[i], lambda k: f"h_{{{i},{k}}}", w,
                    lambda k: rf"(W_{letter}^{{({head})}})_{{{c},{k}}}",
                    {**_where(run, layer, head, i), "c": c, "row": head * dh + c}, layer, head)
    return work


def _rope(step_id, before_id, letter, per_head):
    def work(run, study) -> Worked:
        layer, r = block_layer_head(run, study)
        head = r if per_head else _kv_head(run, r)
        x = _gen(run, before_id, layer)[head].astype(np.float64)
        out = _gen(run, step_id, layer)[head]
        i = x.shape[0] - 1
        dh = run.config.head_dim
        half = dh // 2
        c = 1  # the pair (1, 1 + d_h/2): its angle shows β's exponent
        beta = run.config.rope_theta
        angle = i * beta ** (-2 * c / dh)
        cos, sin = math.cos(angle), math.sin(angle)
        first = x[i, c] * cos - x[i, c + half] * sin
        second = x[i, c + half] * cos + x[i, c] * sin
        sym = rf"\tilde{{{letter}}}^{{({head})}}"
        raw = rf"{letter}^{{({head})}}"
        lines = [
            rf"\Theta_{{{i},{c}}} &= {i}\cdot {power_base(beta)}^{{-2\cdot {c}/{dh}}} = {tex(angle)}",
            rf"\cos\Theta &= {tex(cos)},\quad \sin\Theta = {tex(sin)}",
            rf"{sym}_{{{i},{c}}} &= {raw}_{{{i},{c}}}\cos\Theta - {raw}_{{{i},{c + half}}}\sin\Theta",
            rf"&= {tex(x[i, c])}\cdot {par(cos)} - {par(x[i, c + half])}\cdot {par(sin)} = {tex(first)}",
            rf"{sym}_{{{i},{c + half}}} &= {raw}_{{{i},{c + half}}}\cos\Theta + {raw}_{{{i},{c}}}\sin\Theta",
            rf"&= {tex(x[i, c + half])}\cdot {par(cos)} + {par(x[i, c])}\cdot {par(sin)} = {tex(second)}",
        ]
        checks = (Check(rf"{sym}_{{{i},{c}}}", (head, i, c), first, _f(out[i, c])),
                  Check(rf"{sym}_{{{i},{c + half}}}", (head, i, c + half), second,
                        _f(out[i, c + half])))
        return Worked(step_id, layer, head, "worked.rope",
                      {**_where(run, layer, head, i), "c": c, "pair": c + half}, tuple(lines), checks)
    return work


def _attention_row(run, study):
    """Layer, query head r, its kv head, the last position i and the key j it attends to most."""
    layer, r = block_layer_head(run, study)
    weights = _gen(run, "attn.softmax", layer)[r]
    i = weights.shape[0] - 1
    j = int(np.argmax(weights[i]))
    return layer, r, _kv_head(run, r), i, j


def _scores(run, study) -> Worked:
    layer, r, g, i, j = _attention_row(run, study)
    q = _gen(run, "attn.q_rope", layer)[r]
    k = _gen(run, "attn.k_rope", layer)[g]
    scores = _gen(run, "attn.scores", layer)
    dh = run.config.head_dim
    worked = _dot("attn.scores", "worked.scores", rf"S^{{({r})}}_{{{i},{j}}}", (r, i, j),
                  _f(scores[r, i, j]), q[i], lambda c: rf"\tilde{{Q}}^{{({r})}}_{{{i},{c}}}",
                  k[j], lambda c: rf"\tilde{{K}}^{{({g})}}_{{{j},{c}}}",
                  {**_where(run, layer, r, i), "g": g, "j": j,
                   "key": run.labels(run.traced_tokens[j])}, layer, r, scale_dh=dh)
    group = rf"g({r}) &= \lfloor {r}\cdot {run.config.n_kv_heads}/{run.config.n_heads} \rfloor = {g}"
    return dataclasses.replace(worked, lines=(group,))


def _mask(run, study) -> Worked:
    layer, r, _, i, j = _attention_row(run, study)
    scores = _gen(run, "attn.scores", layer)[r]
    masked = _gen(run, "attn.mask", layer)[r]
    fi, fj = i - 1, i  # a future key: position i is after i - 1
    lines = [rf"M^{{({r})}}_{{{i},{j}}} &= S^{{({r})}}_{{{i},{j}}} = {tex(scores[i, j])} \quad ({j} \le {i})",
             rf"M^{{({r})}}_{{{fi},{fj}}} &= -\infty \quad ({fj} > {fi};\ S^{{({r})}}_{{{fi},{fj}}} = {tex(scores[fi, fj])})"]
    checks = (Check(rf"M^{{({r})}}_{{{i},{j}}}", (r, i, j), _f(scores[i, j]), _f(masked[i, j])),
              Check(rf"M^{{({r})}}_{{{fi},{fj}}}", (r, fi, fj), -math.inf, _f(masked[fi, fj])))
    return Worked("attn.mask", layer, r, "worked.mask",
                  {**_where(run, layer, r, i), "j": j, "fi": fi, "fj": fj}, tuple(lines), checks)


def _softmax(run, study) -> Worked:
    layer, r, _, i, j = _attention_row(run, study)
    m = _gen(run, "attn.mask", layer)[r, i].astype(np.float64)
    weights = _gen(run, "attn.softmax", layer)[r]
    top = float(m.max())
    e = np.exp(m - top)
    total = float(e.sum())
    tokens = run.traced_tokens
    table = Table(("j", r"t_j", rf"M^{{({r})}}_{{{i},j}}", rf"e^{{M_{{{i},j}} - {tex(top)}}}", rf"A^{{({r})}}_{{{i},j}}"),
                  tuple((str(k), token_tex(run.labels(tokens[k])), tex(m[k]), tex(e[k]), tex(e[k] / total))
                        for k in range(len(m))))
    after = (rf"\textstyle\sum_{{j'}} e^{{M_{{{i},j'}} - {tex(top)}}} &= {tex(total)}",
             rf"A^{{({r})}}_{{{i},{j}}} &= \frac{{{tex(e[j])}}}{{{tex(total)}}} = {tex(e[j] / total)}")
    checks = (Check(rf"A^{{({r})}}_{{{i},{j}}}", (r, i, j), float(e[j] / total), _f(weights[i, j])),)
    return Worked("attn.softmax", layer, r, "worked.softmax",
                  {**_where(run, layer, r, i), "j": j, "max": float(top)}, (),
                  checks, table, after)


def _context(run, study) -> Worked:
    layer, r, g, i, _ = _attention_row(run, study)
    a = _gen(run, "attn.softmax", layer)[r, i].astype(np.float64)
    v = _gen(run, "attn.v", layer)[g].astype(np.float64)
    out = _gen(run, "attn.context", layer)[r]
    c = int(np.argmax(np.abs(out[i])))
    terms = a * v[:, c]
    tokens = run.traced_tokens
    table = Table(("j", "t_j", rf"A^{{({r})}}_{{{i},j}}", rf"V^{{({g})}}_{{j,{c}}}", r"\times"),
                  tuple((str(k), token_tex(run.labels(tokens[k])), tex(a[k]), tex(v[k, c]), tex(terms[k]))
                        for k in range(len(a))))
    result = float(terms.sum())
    after = (rf"C^{{({r})}}_{{{i},{c}}} &= \textstyle\sum_{{j}} A^{{({r})}}_{{{i},j}}\,V^{{({g})}}_{{j,{c}}} = {tex(result)}",)
    return Worked("attn.context", layer, r, "worked.context",
                  {**_where(run, layer, r, i), "g": g, "c": c}, (),
                  (Check(rf"C^{{({r})}}_{{{i},{c}}}", (r, i, c), result, _f(out[i, c])),),
                  table, after)


def _attn_out(run, study) -> Worked:
    layer, _ = block_layer_head(run, study)
    context = _gen(run, "attn.context", layer)  # (H, n, dh)
    merged = context.transpose(1, 0, 2).reshape(context.shape[1], -1)  # (n, H·dh)
    out = _gen(run, "attn.out", layer)
    i = out.shape[0] - 1
    c = int(np.argmax(np.abs(out[i])))
    dh = run.config.head_dim
    return _dot("attn.out", "worked.out", rf"o_{{{i},{c}}}", (i, c), _f(out[i, c]), merged[i],
                lambda k: rf"[C]_{{{i},{k}}}", run.model.layers[layer].wo[c],
                lambda k: rf"(W_O)_{{{c},{k}}}", {**_where(run, layer, None, i), "c": c, "dh": dh},
                layer, None)


def _residual(step_id, before, added, added_name):
    def work(run, study) -> Worked:
        layer, _ = block_layer_head(run, study)
        if before == "stream":
            x, x_tex = _stream_before(run, layer)
        else:
            x, x_tex = _gen(run, before, layer), f"x^{{({layer}+1/2)}}"
        delta = _gen(run, added, layer)
        out = _gen(run, step_id, layer)
        i = out.shape[0] - 1
        c = int(np.argmax(np.abs(delta[i])))
        result = _f(x[i, c]) + _f(delta[i, c])
        sym = {"attn.residual": f"x^{{({layer}+1/2)}}", "mlp.residual": f"x^{{({layer + 1})}}"}[step_id]
        lines = (rf"{sym}_{{{i},{c}}} &= {x_tex}_{{{i},{c}}} + {added_name}_{{{i},{c}}}",
                 rf"&= {tex(x[i, c])} + {par(delta[i, c])} = {tex(result)}")
        return Worked(step_id, layer, None, "worked.residual",
                      {**_where(run, layer, None, i), "c": c}, lines,
                      (Check(rf"{sym}_{{{i},{c}}}", (i, c), result, _f(out[i, c])),))
    return work


def _mlp_cell(run, layer) -> tuple[int, int]:
    """The MLP's featured cell: last position, the hidden unit with the largest |u|."""
    u = _gen(run, "mlp.act", layer)
    i = u.shape[0] - 1
    return i, int(np.argmax(np.abs(u[i])))


def _gate_up(step_id, weight_name, letter, w_tex):
    def work(run, study) -> Worked:
        layer, _ = block_layer_head(run, study)
        i, c = _mlp_cell(run, layer)
        out = _gen(run, step_id, layer)
        h = _gen(run, "mlp.norm", layer)
        w = getattr(run.model.layers[layer], weight_name)[c]
        return _dot(step_id, "worked.mlp_projection", rf"{letter}_{{{i},{c}}}", (i, c),
                    _f(out[i, c]), h[i], lambda k: f"h'_{{{i},{k}}}", w,
                    lambda k: rf"({w_tex})_{{{c},{k}}}", {**_where(run, layer, None, i), "c": c},
                    layer, None)
    return work


def _act(run, study) -> Worked:
    layer, _ = block_layer_head(run, study)
    i, c = _mlp_cell(run, layer)
    a = _f(_gen(run, "mlp.gate", layer)[i, c])
    b = _f(_gen(run, "mlp.up", layer)[i, c])
    u = _gen(run, "mlp.act", layer)
    sigma = 1 / (1 + math.exp(-a))
    result = a * sigma * b
    lines = (rf"a_{{{i},{c}}} &= {tex(a)},\quad b_{{{i},{c}}} = {tex(b)}",
             rf"\sigma(a) &= \frac{{1}}{{1 + e^{{-a}}}} = \frac{{1}}{{1 + e^{{{tex(-a)}}}}} = {tex(sigma)}",
             rf"\operatorname{{silu}}(a) &= a\,\sigma(a) = {tex(a * sigma)}",
             rf"u_{{{i},{c}}} &= \operatorname{{silu}}(a)\, b = {tex(a * sigma)}\cdot {par(b)} = {tex(result)}")
    return Worked("mlp.act", layer, None, "worked.act", {**_where(run, layer, None, i), "c": c},
                  lines, (Check(rf"u_{{{i},{c}}}", (i, c), result, _f(u[i, c])),))


def _down(run, study) -> Worked:
    layer, _ = block_layer_head(run, study)
    out = _gen(run, "mlp.down", layer)
    u = _gen(run, "mlp.act", layer)
    i = out.shape[0] - 1
    c = int(np.argmax(np.abs(out[i])))
    return _dot("mlp.down", "worked.mlp_projection", rf"m_{{{i},{c}}}", (i, c), _f(out[i, c]),
                u[i], lambda k: f"u_{{{i},{k}}}", run.model.layers[layer].w_down[c],
                lambda k: rf"(W_{{\mathrm{{down}}}})_{{{c},{k}}}",
                {**_where(run, layer, None, i), "c": c}, layer, None)


def _chosen(run) -> int:
    return run.traced.token


def _logits(run, study) -> Worked:
    z = _gen(run, "final_norm")
    out = _gen(run, "logits")
    i = out.shape[0] - 1
    v = _chosen(run)
    return _dot("logits", "worked.logits", rf"\ell_{{{i},{v}}}", (i, v), _f(out[i, v]), z[i],
                lambda k: f"z_{{{i},{k}}}", run.model.lm_head[v],
                lambda k: rf"(W_{{\mathrm{{out}}}})_{{{v},{k}}}",
                {**_where(run, None, None, i), "v": v, "chosen": run.labels(v)}, None, None)


def _probs(run, study) -> Worked:
    s = run.settings
    logits = _gen(run, "logits")[-1].astype(np.float64)
    probs = _gen(run, "probs")
    n = len(run.traced_tokens)
    v = _chosen(run)
    T = 1.0 if s.greedy else float(s.temperature)
    kept = np.ones(len(logits), dtype=bool)
    if s.top_k is not None and s.top_k < len(logits):
        kept = logits >= np.sort(logits)[-s.top_k]
    top = float(logits[kept].max())
    e = np.where(kept, np.exp((logits - top) / T), 0.0)
    total = float(e.sum())
    result = float(e[v] / total)
    ranked = [int(w) for w in np.argsort(-e, kind="stable") if w != v]
    w = ranked[0]  # the runner-up, for comparison
    ell = rf"\ell_{{{n - 1},{v}}}"
    lines = [rf"{ell} &= {tex(logits[v])},\quad T = {tex(T)}",
             rf"\max_{{v'}} \ell_{{{n - 1},v'}} &= {tex(top)}"]
    if s.top_k is not None and s.top_k < len(logits):
        lines.append(rf"k &= {s.top_k}:\ {int(kept.sum())} \text{{ logits kept}}")
    lines += [rf"e^{{({ell} - {tex(top)})/T}} &= e^{{{tex((logits[v] - top) / T)}}} = {tex(e[v])}",
              rf"e^{{(\ell_{{{n - 1},{w}}} - {tex(top)})/T}} &= e^{{{tex((logits[w] - top) / T)}}} = {tex(e[w])}",
              rf"\textstyle\sum_{{v'}} e^{{(\ell_{{{n - 1},v'}} - {tex(top)})/T}} &= {tex(total, 7)}",
              rf"p_{{{v}}} &= \frac{{{tex(e[v])}}}{{{tex(total, 7)}}} = {tex(result)}",
              rf"p_{{{w}}} &= \frac{{{tex(e[w])}}}{{{tex(total, 7)}}} = {tex(e[w] / total)}"]
    return Worked("probs", None, None, "worked.probs",
                  {"v": v, "chosen": run.labels(v), "w": w, "other": run.labels(w)},
                  tuple(lines),
                  (Check(rf"p_{{{v}}}", (v,), result, _f(probs[v])),
                   Check(rf"p_{{{w}}}", (w,), float(e[w] / total), _f(probs[w]))))


def recovered_draw(settings) -> float:
    """The uniform number ``sample_token`` drew at the traced step: ``generate`` makes
    ``default_rng(sampling_seed)`` and draws one number per sampled token, in order."""
    rng = np.random.default_rng(settings.sampling_seed)
    draws = [rng.random() for _ in range(settings.traced_step + 1)]
    return draws[-1]


def _sample(run, study) -> Worked:
    s = run.settings
    probs = _gen(run, "probs")
    t = int(_gen(run, "sample"))
    n = len(run.traced_tokens)
    cdf = np.cumsum(probs, dtype=np.float64)
    if s.greedy:
        ranked = np.argsort(-probs, kind="stable")
        other = int(ranked[1]) if ranked[0] == t else int(ranked[0])
        lines = (rf"t_{{{n}}} &= \arg\max_v p_v = {t}\ ({token_tex(run.labels(t))}),\quad p_{{{t}}} = {tex(probs[t])}",
                 rf"&\text{{}} p_{{{other}}} = {tex(probs[other])}")
        return Worked("sample", None, None, "worked.sample.greedy",
                      {"n": n, "token": run.labels(t), "id": t}, lines,
                      (Check(rf"t_{{{n}}}", (), float(np.argmax(probs)), float(t)),))
    low = float(cdf[t - 1]) if t > 0 else 0.0
    high = float(cdf[t])
    total = float(cdf[-1])
    u = recovered_draw(s)
    target = u * total
    before = f"F_{{{t - 1}}}" if t > 0 else "0"  # the interval of token 0 starts at 0
    lines = [rf"F_v &= \textstyle\sum_{{v' \le v}} p_{{v'}},\quad F_{{{len(probs) - 1}}} = {tex(total, 7)}",
             rf"[{before},\, F_{{{t}}}) &= [{tex(low)},\, {tex(high, 7)})",
             rf"p_{{{t}}} &= F_{{{t}}} - {before} = {tex(probs[t])}"]
    if low <= target < high:  # the draw replayed from the seed lands in t's interval
        by_hand = float(np.searchsorted(cdf, target, side="right"))
        lines += [rf"u &= {tex(u, 7)}", rf"u\,F_{{{len(probs) - 1}}} &= {tex(target, 7)}",
                  rf"t_{{{n}}} &= \min\{{v : F_v > u\,F_{{{len(probs) - 1}}}\}} = {t}\ ({token_tex(run.labels(t))})"]
        note = "worked.sample"
    else:  # the engine drew otherwise than replayed here: only the interval is shown
        by_hand = float(t)
        note = "worked.sample.interval"
    return Worked("sample", None, None, note,
                  {"n": n, "token": run.labels(t), "id": t, "seed": s.sampling_seed,
                   "draw": s.traced_step + 1}, tuple(lines),
                  (Check(rf"t_{{{n}}}", (), by_hand, float(t)),))


def _loss_terms(run) -> tuple[np.ndarray, np.ndarray]:
    """Per position of the loss run: log-sum-exp of the logits and −log p of the target."""
    logits = np.asarray(run.loss_trace.get("logits").value, dtype=np.float64)
    top = logits.max(axis=-1, keepdims=True)
    lse = (top + np.log(np.exp(logits - top).sum(axis=-1, keepdims=True)))[:, 0]
    targets = np.array(run.loss_targets)
    return lse, lse - logits[np.arange(len(targets)), targets]


def _loss(run, study) -> Worked:
    logits = np.asarray(run.loss_trace.get("logits").value, dtype=np.float64)
    lse, nll = _loss_terms(run)
    loss = _f(run.loss_trace.get("loss").value)
    n = len(nll)
    i = int(np.argmax(nll))
    y = run.loss_targets[i]
    tokens = run.loss_tokens
    table = Table(("i", "t_i", "y_i", r"p_{y_i}", r"-\log p_{y_i}"),
                  tuple((str(k), token_tex(run.labels(tokens[k])), token_tex(run.labels(run.loss_targets[k])),
                         tex(math.exp(-nll[k])), tex(nll[k])) for k in range(n)))
    lines = (rf"-\log \operatorname{{softmax}}(\ell_{{{i}}})_{{y_{{{i}}}}} &= \log\textstyle\sum_v e^{{\ell_{{{i},v}}}} - \ell_{{{i},{y}}}",
             rf"&= {tex(lse[i])} - {par(logits[i, y])} = {tex(nll[i])}")
    mean = float(nll.mean())
    after = (rf"\mathcal{{L}} &= \tfrac{{1}}{{{n}}}\left({tex(nll[0])} + {tex(nll[1])} + \dots + {tex(nll[-1])}\right)",
             rf"&= \tfrac{{{tex(nll.sum())}}}{{{n}}} = {tex(mean)}")
    return Worked("loss", None, None, "worked.loss",
                  {**_where(run, None, None, i, tokens), "target": run.labels(y), "n": n},
                  lines, (Check(r"\mathcal{L}", (), mean, loss),), table, after)


def _loss_grad(run, study) -> Worked:
    logits = np.asarray(run.loss_trace.get("logits").value, dtype=np.float64)
    grad = np.asarray(run.loss_trace.get("loss.grad").value)
    lse, nll = _loss_terms(run)
    n = len(nll)
    i = int(np.argmax(nll))
    y = run.loss_targets[i]
    p = np.exp(logits[i] - lse[i])
    ranked = [int(v) for v in np.argsort(-p, kind="stable") if v != y]
    w = ranked[0]  # the token the model preferred instead
    g = rf"\tfrac{{\partial\mathcal{{L}}}}{{\partial \ell_{{{i},"
    lines = (rf"{g}{y}}}}} &= \tfrac{{1}}{{{n}}}\left(p_{{{y}}} - 1\right)",
             rf"&= \tfrac{{1}}{{{n}}}\left({tex(p[y])} - 1\right) = {tex((p[y] - 1) / n)}",
             rf"{g}{w}}}}} &= \tfrac{{1}}{{{n}}}\left(p_{{{w}}} - 0\right)",
             rf"&= \tfrac{{{tex(p[w])}}}{{{n}}} = {tex(p[w] / n)}")
    checks = (Check(rf"{g}{y}}}}}", (i, y), float((p[y] - 1) / n), _f(grad[i, y])),
              Check(rf"{g}{w}}}}}", (i, w), float(p[w] / n), _f(grad[i, w])))
    return Worked("loss.grad", None, None, "worked.grad",
                  {**_where(run, None, None, i, run.loss_tokens), "target": run.labels(y),
                   "y": y, "other": run.labels(w), "w": w, "n": n}, lines, checks)


WORKERS = {
    "embed": _embed,
    "attn.norm": _attn_norm,
    "attn.q": _projection("attn.q", lambda b: b.wq, "Q", True),
    "attn.k": _projection("attn.k", lambda b: b.wk, "K", False),
    "attn.v": _projection("attn.v", lambda b: b.wv, "V", False),
    "attn.q_rope": _rope("attn.q_rope", "attn.q", "Q", True),
    "attn.k_rope": _rope("attn.k_rope", "attn.k", "K", False),
    "attn.scores": _scores,
    "attn.mask": _mask,
    "attn.softmax": _softmax,
    "attn.context": _context,
    "attn.out": _attn_out,
    "attn.residual": _residual("attn.residual", "stream", "attn.out", "o"),
    "mlp.norm": _mlp_norm,
    "mlp.gate": _gate_up("mlp.gate", "w_gate", "a", r"W_{\mathrm{gate}}"),
    "mlp.up": _gate_up("mlp.up", "w_up", "b", r"W_{\mathrm{up}}"),
    "mlp.act": _act,
    "mlp.down": _down,
    "mlp.residual": _residual("mlp.residual", "attn.residual", "mlp.down", "m"),
    "final_norm": _final_norm,
    "logits": _logits,
    "probs": _probs,
    "sample": _sample,
    "loss": _loss,
    "loss.grad": _loss_grad,
}


def worked_example(step_id: str, run, study=None) -> Worked | None:
    """The worked entry of ``step_id`` for ``run`` (an ``ExampleRun``), or ``None`` for a
    step this module has no worked example for. ``study`` (a ``HeadStudy``) picks the head."""
    work = WORKERS.get(step_id)
    return None if work is None else work(run, study)
