"""The probabilities and sampled-token pages' control: temperature T and top-k, with the
next token's most probable tokens. The page carries the traced step's logits (the last row
of its ``logits`` snapshot) as float32 bytes; ``assets/sampling.js`` recomputes
softmax(ℓ/T) over the top k from them as the reader moves the control, exactly as
``glassllm.model.next_token_distribution`` does. At build the table shows the run's own
probabilities (its T and k), so it reads the same with JavaScript off."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from html import escape

import numpy as np

from ..text.numbers import format_value

SHOWN = 8  # tokens the table lists
T_RANGE = (0.05, 3.0, 0.05)  # the temperature slider's min, max and step


@dataclass(frozen=True)
class SamplingStrings:
    title: str  # the control's group label
    intro: str
    temperature: str
    top_k: str
    token: str
    decimal: str = "."  # the page language's decimal mark


def logits_code(logits: np.ndarray) -> str:
    """A row of logits as base64 of its little-endian float32 bytes (sampling.js reads it)."""
    return base64.b64encode(np.asarray(logits, dtype="<f4").tobytes()).decode("ascii")


def sampling_html(logits: np.ndarray, probs: np.ndarray, temperature: float, top_k: int | None,
                  labels, strings: SamplingStrings) -> str:
    """The control, set to the run's ``temperature`` and ``top_k`` (None: every logit), and
    the table of the ``SHOWN`` most probable tokens of ``probs`` (the run's distribution)."""
    vocab = len(logits)
    low, high, step = T_RANGE
    t = min(max(float(temperature), low), high)
    k = vocab if top_k is None else int(top_k)
    ranked = [int(v) for v in np.argsort(-np.asarray(probs, dtype=np.float64), kind="stable")[:SHOWN]]
    rows = "".join(f'<tr><td>{escape(labels(v))}</td><td>{v}</td><td><meter min="0" max="1" '
                   f'value="{float(probs[v]):.6g}"></meter> <span>{escape(format_value(probs[v], strings.decimal))}</span></td></tr>'
                   for v in ranked)
    return (f'<div class="gl-sampling" role="group" aria-label="{escape(strings.title)}" '
            f'data-search-exclude data-logits="{logits_code(logits)}">'
            f'<p class="gl-note">{escape(strings.intro)}</p><div class="gl-sampling-controls">'
            f'<label>{escape(strings.temperature)} <input class="gl-sampling-t" type="range" '
            f'min="{low:g}" max="{high:g}" step="{step:g}" value="{t:g}"> '
            f'<output class="gl-sampling-t-value">{escape(format_value(t, strings.decimal))}</output></label>'
            f'<label>{escape(strings.top_k)} <input class="gl-sampling-k" type="number" min="1" '
            f'max="{vocab}" step="1" value="{k}"></label></div>'
            f'<table class="gl-sampling-top"><thead><tr><th>{escape(strings.token)}</th><th>ID</th>'
            f'<th>p</th></tr></thead><tbody>{rows}</tbody></table></div>')
