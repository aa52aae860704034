"""How large a recording will be, from the model's shapes alone, before the run."""

from __future__ import annotations

import math

from ...config import Config
from .arrays import BINARY_DTYPES
from .events import AXES, UPDATE_ENTRIES, step_counts

# Outside the arrays each event costs about 95 bytes of JSON keys in version 1 and about
# 122 bytes of index plus a few of padding in version 2; the header (config, texts, the
# steps table) about 5 KB. Measured on recordings of 1 to 30 blocks.
_EVENT_BYTES = 96
_INDEX_EVENT_BYTES = 124
_HEADER_BYTES = 5_000
# a training recording's update: per parameter its name, shape and norms, then each sampled
# weight's index and five numbers; its steps table gives each step's backward rule too
_UPDATE_PARAM_BYTES = 140
_UPDATE_ENTRY_BYTES = 158
_GRAD_RULES_BYTES = 7_100


def estimate_size(config: Config, kind: str, n_prompt: int, n_tokens: int = 0, *,
                  binary: bool = False, dtype: str = "float32", cache: bool = True) -> int:
    """About how many bytes ``write_recording`` writes for a run, from the shapes alone,
    before it runs: version 1 JSON, or with ``binary`` version 2 with floats as ``dtype``.

    ``"generation"``: ``n_tokens`` passes over ``n_prompt``, ``n_prompt + 1``, ... tokens
    (with ``cache``, the default as in ``record_generation``, every pass after the first
    computes one position against them; ``cache=False``: the full recompute);
    ``"loss"``: one pass over ``n_prompt`` input tokens; ``"training"``: the same pass, its
    gradients and the update of ``UPDATE_ENTRIES`` weights per parameter. Within 2 % of the
    real size (a few KB for tiny runs, whose header dominates).
    """
    c = config
    counts = step_counts(kind, c.n_layers)  # Python ints: a billion blocks is arithmetic

    def values(n: int, keys: int) -> int:
        """The values one pass records that computes n positions against keys positions."""
        size = {"token": n, "query": n, "key": keys, "feature": c.d_model, "hidden": c.d_ff,
                "head": c.n_heads, "kv_head": c.n_kv_heads, "dim": c.head_dim,
                "vocab": c.vocab_size}
        return sum(count * math.prod(size[axis] for axis in AXES[step])
                   for step, count in counts.items())

    # a full pass over n tokens records values(n, n) = a n^2 + b n + e exactly (no snapshot
    # has more than two token axes), a cached one values(1, k) = e1 + s k: so a run of a
    # billion passes is summed in closed form rather than pass by pass
    e = values(0, 0)
    b = (4 * values(1, 1) - values(2, 2) - 3 * e) // 2
    a = values(1, 1) - b - e
    count = n_tokens if kind == "generation" else 1
    full = count if kind != "generation" or not cache else min(count, 1)
    # the full passes read n_prompt, n_prompt + 1, ..., last tokens (integers of any size)
    last = n_prompt + full - 1
    total_n = (n_prompt + last) * full // 2
    total_n2 = _sum_of_squares(last) - _sum_of_squares(n_prompt - 1) if full else 0
    total_values = a * total_n2 + b * total_n + e * full
    if count > full:  # the cached passes attend to n_prompt + 1, ..., n_prompt + count - 1
        e1 = values(1, 0)
        slope = values(1, 1) - e1
        cached = count - full
        total_values += e1 * cached + slope * (2 * n_prompt + count) * cached // 2
    events = count * sum(counts.values())
    header = _HEADER_BYTES
    if kind == "training":  # every value again as its gradient, then the update
        total_values, events = total_values * 2, events * 2
        params = 9 * c.n_layers + 2 + (not c.tie_word_embeddings)
        header += (_GRAD_RULES_BYTES + params * (_UPDATE_PARAM_BYTES
                                                 + UPDATE_ENTRIES * _UPDATE_ENTRY_BYTES))
    if binary:
        return (total_values * BINARY_DTYPES[dtype].itemsize
                + events * _INDEX_EVENT_BYTES + header)
    # base64 turns 3 bytes into 4 characters
    return total_values * 16 // 3 + events * _EVENT_BYTES + header


def _sum_of_squares(n: int) -> int:
    """1 + 4 + ... + n*n (0 for n <= 0)."""
    return n * (n + 1) * (2 * n + 1) // 6 if n > 0 else 0
