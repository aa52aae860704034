"""Exercises of the step pages: questions the reader answers before opening the answer,
worked from the page's own run.

``exercises(step_id, run, study)`` gives one or more ``Exercise`` per step: the numbers the
question shows (taken from the snapshots the page shows, the model's config and weights, the
head study) and the numeric answer, computed here in float64 from the float32 values. The
words are ``docs/_texts/<lang>/exercises.yml`` (``<kind>.q`` and ``<kind>.a``, placeholders
from ``fields``); ``html/exercises.py`` renders them.

Sections: ``FORWARD`` lists the makers of every step's forward exercises; a later section (the
backward pass) adds its own table of makers and a ``SECTIONS`` entry, and the page shows each
section's exercises under its own heading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .worked import _gen, _kv_head, _stream_before, block_layer_head


@dataclass(frozen=True)
class Exercise:
    step_id: str
    kind: str  # exercises.yml's <kind>.q / <kind>.a
    fields: dict  # the sentences' fields: int, float (written in the language) or str
    answer: float | int  # the numeric answer (float64 from the run's float32 values; int: a count)
    section: str = "forward"


def _row_of(run, step_id: str, layer: int | None) -> np.ndarray:
    """The last row of a (n, …) snapshot of the traced step, in float64."""
    return _gen(run, step_id, layer)[-1].astype(np.float64)


def _whole(x: float) -> int | float:
    """A whole number as an int (10000, not 1e+04, in a sentence)."""
    return int(x) if float(x).is_integer() else x


def _label(run, token: int) -> str:
    return run.labels(int(token))


def _params(run) -> int:
    """Every weight of the model: embeddings, output matrix, blocks, final norm."""
    c = run.config
    attn = c.d_model * c.head_dim * (2 * c.n_heads + 2 * c.n_kv_heads)
    block = 2 * c.d_model + attn + 3 * c.d_model * c.d_ff
    out = 0 if c.tie_word_embeddings else c.vocab_size * c.d_model
    return c.vocab_size * c.d_model + out + c.n_layers * block + c.d_model


# -- one maker per step: (run, study) -> Exercise -------------------------------------------

def _embed(run, study) -> Exercise:
    i = len(run.traced_tokens) - 1
    t = run.traced_tokens[i]
    c = run.config
    return Exercise("embed", "embed", {"i": i, "token": _label(run, t), "V": c.vocab_size,
                                       "d": c.d_model, "params": c.vocab_size * c.d_model},
                    int(t))


def _rms4(run, study) -> Exercise:
    layer, _ = block_layer_head(run, study)
    stream, name = _stream_before(run, layer)
    row = stream[-1, :4].astype(np.float64)
    eps = run.config.norm_eps
    ms = float(np.mean(row * row))
    rms = math.sqrt(ms + eps)
    return Exercise("attn.norm", "rms4", {"i": stream.shape[0] - 1, "layer": layer,
                                          "row": [float(x) for x in row], "eps": eps, "ms": ms,
                                          "rms": rms, "x0": float(row[0])}, row[0] / rms)


def _q_rows(run, study) -> Exercise:
    layer, r = block_layer_head(run, study)
    c = run.config
    dh = c.head_dim
    return Exercise("attn.q", "q_rows", {"rows": c.n_heads * dh, "H": c.n_heads, "dh": dh,
                                         "r": r, "layer": layer, "last": r * dh + dh - 1},
                    r * dh)


def _k_group(run, study) -> Exercise:
    _, r = block_layer_head(run, study)
    c = run.config
    q_params = c.n_heads * c.head_dim * c.d_model
    k_params = c.n_kv_heads * c.head_dim * c.d_model
    return Exercise("attn.k", "k_group", {"r": r, "H": c.n_heads, "Hkv": c.n_kv_heads,
                                          "q_params": q_params, "k_rows": c.n_kv_heads * c.head_dim,
                                          "d": c.d_model, "k_params": k_params,
                                          "ratio": k_params / q_params},
                    _kv_head(run, r))


def _cache_size(run, study) -> Exercise:
    c = run.config
    n = len(run.traced_tokens)
    size = 2 * c.n_layers * n * c.n_kv_heads * c.head_dim
    return Exercise("attn.v", "cache", {"Hkv": c.n_kv_heads, "dh": c.head_dim, "L": c.n_layers,
                                        "n": n, "H": c.n_heads,
                                        "full": 2 * c.n_layers * n * c.n_heads * c.head_dim},
                    size)


def _rope_slow(run, study) -> Exercise:
    c = run.config
    i = len(run.traced_tokens) - 1
    pair = c.head_dim // 2 - 1
    exponent = 2 * pair / c.head_dim
    return Exercise("attn.q_rope", "rope_slow", {"i": i, "c": pair, "beta": _whole(c.rope_theta),
                                                 "dh": c.head_dim, "exp": exponent},
                    i * c.rope_theta ** -exponent)


def _rope_distance(run, study) -> Exercise:
    layer, r = block_layer_head(run, study)
    weights = _gen(run, "attn.softmax", layer)[r]
    i = weights.shape[0] - 1
    j = int(np.argmax(weights[i]))
    c = run.config
    freq = c.rope_theta ** (-2 / c.head_dim)
    return Exercise("attn.k_rope", "rope_distance", {"i": i, "j": j, "beta": _whole(c.rope_theta),
                                                     "dh": c.head_dim, "dist": i - j,
                                                     "freq": freq, "layer": layer, "r": r},
                    (i - j) * freq)


def _top_two(row: np.ndarray) -> tuple[int, int]:
    order = np.argsort(-row, kind="stable")
    return int(order[0]), int(order[1])


def _score_ratio(run, study) -> Exercise:
    layer, r = block_layer_head(run, study)
    scores = _gen(run, "attn.scores", layer)[r].astype(np.float64)
    i = scores.shape[0] - 1
    j, j2 = _top_two(scores[i, :i + 1])
    tokens = run.traced_tokens
    return Exercise("attn.scores", "score_ratio",
                    {"i": i, "r": r, "layer": layer, "j": j, "key": _label(run, tokens[j]),
                     "s1": scores[i, j], "j2": j2, "key2": _label(run, tokens[j2]),
                     "s2": scores[i, j2]}, math.exp(scores[i, j] - scores[i, j2]))


def _mask_count(run, study) -> Exercise:
    layer, r = block_layer_head(run, study)
    n = len(run.traced_tokens)
    return Exercise("attn.mask", "mask_count", {"r": r, "layer": layer, "n": n, "total": n * n},
                    n * (n - 1) // 2)


SOFTMAX_ROW = 3  # a short row of the attention weights: 4 keys, done by hand


def _softmax4(run, study) -> Exercise:
    layer, r = block_layer_head(run, study)
    i = min(SOFTMAX_ROW, len(run.traced_tokens) - 1)
    row = _gen(run, "attn.mask", layer)[r, i, :i + 1].astype(np.float64)
    e = np.exp(row - row.max())
    weights = e / e.sum()
    j = int(np.argmax(weights))
    return Exercise("attn.softmax", "softmax4",
                    {"i": i, "r": r, "layer": layer, "k": i + 1, "scores": [float(x) for x in row],
                     "j": j, "token": _label(run, run.traced_tokens[j]),
                     "weights": [float(x) for x in weights]}, float(weights[j]))


def _ablate(run, study) -> Exercise:
    layer = study.best_induction.layer
    scores = np.asarray(study.report.induction, dtype=np.float64)[layer]
    head = int(np.argmax(scores))
    threshold = study.circuit["qualifies"] if study.circuit else 0.5
    others = [h for h in range(len(scores)) if h != head and scores[h] >= threshold]
    return Exercise("attn.context", "ablate",
                    {"length": study.length, "layer": layer, "scores": [float(s) for s in scores],
                     "head": head, "best": float(scores[head]), "threshold": float(threshold),
                     "others": ", ".join(f"L{layer}H{h}" for h in others) or "—",
                     "count": len(others)}, head)


def _head_parts(run, layer: int, i: int, c: int) -> np.ndarray:
    """Each head's part of o_{i,c}: its context row times its d_h columns of row c of W_O."""
    context = _gen(run, "attn.context", layer).astype(np.float64)  # (H, n, dh)
    wo = np.asarray(run.model.layers[layer].wo, dtype=np.float64)[c]  # (H·dh,)
    dh = run.config.head_dim
    return np.array([context[h, i] @ wo[h * dh:(h + 1) * dh] for h in range(context.shape[0])])


def _out_part(run, study) -> Exercise:
    layer, r = block_layer_head(run, study)
    out = _gen(run, "attn.out", layer)
    i = out.shape[0] - 1
    c = int(np.argmax(np.abs(out[i])))
    parts = _head_parts(run, layer, i, c)
    others = [float(parts[h]) for h in range(len(parts)) if h != r]
    return Exercise("attn.out", "out_part",
                    {"i": i, "c": c, "layer": layer, "o": float(out[i, c]), "r": r,
                     "parts": others, "heads": ", ".join(str(h) for h in range(len(parts)) if h != r),
                     "dh": run.config.head_dim}, float(parts[r]))


def _residual_norm(step_id, before, added, kind):
    def make(run, study) -> Exercise:
        layer, _ = block_layer_head(run, study)
        x = (_stream_before(run, layer)[0] if before == "stream" else _gen(run, before, layer))
        x = x[-1].astype(np.float64)
        o = _row_of(run, added, layer)
        nx, no = float(np.linalg.norm(x)), float(np.linalg.norm(o))
        cos = float(x @ o / (nx * no))
        return Exercise(step_id, kind, {"i": len(run.traced_tokens) - 1, "layer": layer,
                                        "nx": nx, "no": no, "cos": cos},
                        math.sqrt(nx * nx + no * no + 2 * nx * no * cos))
    return make


def _scale_free(run, study) -> Exercise:
    layer, _ = block_layer_head(run, study)
    h = _row_of(run, "mlp.norm", layer)
    c = int(np.argmax(np.abs(h)))
    x = _row_of(run, "attn.residual", layer) * 10
    gain = float(run.model.layers[layer].mlp_norm[c])
    ten = x[c] / math.sqrt(float(np.mean(x * x)) + run.config.norm_eps) * gain
    return Exercise("mlp.norm", "scale_free", {"i": len(run.traced_tokens) - 1, "layer": layer,
                                               "c": c, "h": float(h[c]),
                                               "eps": run.config.norm_eps}, ten)


def _mlp_flops(run, study) -> Exercise:
    c = run.config
    n = len(run.traced_tokens)
    return Exercise("mlp.gate", "mlp_flops", {"f": c.d_ff, "d": c.d_model, "rows": 2 * c.d_ff,
                                              "n": n}, 2 * n * c.d_model * c.d_ff)


def _silu_unit(run, study) -> Exercise:
    layer, _ = block_layer_head(run, study)
    a, b = _row_of(run, "mlp.gate", layer), _row_of(run, "mlp.up", layer)
    u = _row_of(run, "mlp.act", layer)
    featured = int(np.argmax(np.abs(u)))  # the worked unit: take another
    order = [int(k) for k in np.argsort(-np.abs(b), kind="stable") if k != featured]
    c = order[0]
    sig = 1 / (1 + math.exp(-a[c]))
    return Exercise("mlp.up", "silu_unit", {"i": len(run.traced_tokens) - 1, "layer": layer, "c": c,
                                            "a": float(a[c]), "b": float(b[c]), "sig": sig,
                                            "silu": a[c] * sig}, a[c] * sig * b[c])


def _relu_gate(run, study) -> Exercise:
    layer, _ = block_layer_head(run, study)
    a, b = _row_of(run, "mlp.gate", layer), _row_of(run, "mlp.up", layer)
    u = _row_of(run, "mlp.act", layer)
    c = int(np.argmax(np.abs(u)))
    return Exercise("mlp.act", "relu_gate", {"i": len(run.traced_tokens) - 1, "layer": layer, "c": c,
                                             "a": float(a[c]), "b": float(b[c]), "u": float(u[c])},
                    max(a[c], 0.0) * b[c])


def _mlp_params(run, study) -> Exercise:
    c = run.config
    per = 3 * c.d_model * c.d_ff
    attn = c.d_model * c.head_dim * (2 * c.n_heads + 2 * c.n_kv_heads)
    return Exercise("mlp.down", "mlp_params", {"f": c.d_ff, "d": c.d_model, "L": c.n_layers,
                                               "all": per * c.n_layers, "attn": attn},
                    per)


def _final_entry(run, study) -> Exercise:
    """z at the row's largest input, another feature than the worked entry's when they differ."""
    last = run.config.n_layers - 1
    x = _row_of(run, "mlp.residual", last)
    worked = int(np.argmax(np.abs(_row_of(run, "final_norm", None))))
    order = [int(k) for k in np.argsort(-np.abs(x), kind="stable") if k != worked]
    c = order[0]
    ms = float(np.mean(x * x))
    eps = run.config.norm_eps
    gain = float(run.model.norm[c])
    rms = math.sqrt(ms + eps)
    return Exercise("final_norm", "final_entry", {"i": len(run.traced_tokens) - 1, "L": last + 1,
                                                  "ms": ms, "eps": eps, "c": c, "x": float(x[c]),
                                                  "g": gain, "rms": rms}, x[c] / rms * gain)


def _lm_head(run, study) -> Exercise:
    c = run.config
    total = _params(run)
    tied = c.tie_word_embeddings
    return Exercise("logits", "lm_head_tied" if tied else "lm_head",
                    {"V": c.vocab_size, "d": c.d_model, "total": total,
                     "share": 2 * c.vocab_size * c.d_model / total},
                    0 if tied else c.vocab_size * c.d_model)


def _temperature(run, study) -> Exercise:
    s = run.settings
    T = 1.0 if s.greedy else float(s.temperature)
    probs = np.asarray(run.traced.probs, dtype=np.float64)
    logits = _row_of(run, "logits", None)
    t1, t2 = _top_two(probs)
    ratio = math.exp((logits[t1] - logits[t2]) / T)
    return Exercise("probs", "temperature", {"T": T, "T2": T / 2, "p1": probs[t1], "p2": probs[t2],
                                             "t1": _label(run, t1), "t2": _label(run, t2),
                                             "ratio": ratio}, ratio ** 2)


def _tail(run, study) -> Exercise:
    probs = np.asarray(run.traced.probs, dtype=np.float64)
    top = [int(t) for t in np.argsort(-probs, kind="stable")[:3]]
    chosen = run.traced.token
    return Exercise("sample", "tail", {"p": [float(probs[t]) for t in top],
                                       "tokens": ", ".join(_label(run, t) for t in top),
                                       "sum": float(probs[top].sum()),
                                       "chosen": _label(run, chosen), "pc": float(probs[chosen])},
                    1 - float(probs[top].sum()))


def _perplexity(run, study) -> Exercise:
    loss = float(np.float64(run.loss_trace.get("loss").value))
    return Exercise("loss", "perplexity", {"n": len(run.loss_tokens), "loss": loss,
                                           "V": run.config.vocab_size}, math.exp(loss))


def _grad_target(run, study) -> Exercise:
    logits = np.asarray(run.loss_trace.get("logits").value, dtype=np.float64)
    targets = np.array(run.loss_targets)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    target_p = p[np.arange(len(targets)), targets]
    i = int(np.argmax(target_p))  # the easiest target (the worked entry takes the hardest)
    n = len(targets)
    return Exercise("loss.grad", "grad_target", {"i": i, "target": _label(run, targets[i]),
                                                 "p": float(target_p[i]), "n": n},
                    (target_p[i] - 1) / n)


FORWARD = {
    "embed": (_embed,),
    "attn.norm": (_rms4,),
    "attn.q": (_q_rows,),
    "attn.k": (_k_group,),
    "attn.v": (_cache_size,),
    "attn.q_rope": (_rope_slow,),
    "attn.k_rope": (_rope_distance,),
    "attn.scores": (_score_ratio,),
    "attn.mask": (_mask_count,),
    "attn.softmax": (_softmax4,),
    "attn.context": (_ablate,),
    "attn.out": (_out_part,),
    "attn.residual": (_residual_norm("attn.residual", "stream", "attn.out", "residual_attn"),),
    "mlp.norm": (_scale_free,),
    "mlp.gate": (_mlp_flops,),
    "mlp.up": (_silu_unit,),
    "mlp.act": (_relu_gate,),
    "mlp.down": (_mlp_params,),
    "mlp.residual": (_residual_norm("mlp.residual", "attn.residual", "mlp.down", "residual_mlp"),),
    "final_norm": (_final_entry,),
    "logits": (_lm_head,),
    "probs": (_temperature,),
    "sample": (_tail,),
    "loss": (_perplexity,),
    "loss.grad": (_grad_target,),
}

# section name -> its makers per step; the page shows the sections in this order
SECTIONS = {"forward": FORWARD}


def exercises(step_id: str, run, study=None) -> list[Exercise]:
    """Every exercise of ``step_id`` for ``run`` (an ``ExampleRun``), in page order."""
    return [make(run, study) for makers in SECTIONS.values() for make in makers.get(step_id, ())]
