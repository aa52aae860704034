"""What a hand-written page says of the replay's KV cache: each ``<!-- glassllm:cache-check -->``
line becomes a paragraph, in the page's language, on how closely the replay's generation
(recorded with the cache) agrees with the full recompute of the same run — the largest
differences the engine's child measured (``engine.schema.CacheCheck``), never typed by hand."""

from __future__ import annotations

import re

import numpy as np

from ..data.run import ExampleRun
from ..engine.schema import CacheCheck
from ..text.markdown import fmt, md_escape, number

CHECK_MARKER = re.compile(r"^<!-- glassllm:cache-check -->[ \t]*$", re.M)


def cache_check_text(check: CacheCheck, ui: dict[str, str]) -> str:
    """The paragraph: the same tokens and the largest differences, or that the tokens differ."""
    if not check.same_tokens:
        return fmt(ui, "replay.cache_check_differs", tokens=check.tokens)
    return fmt(ui, "replay.cache_check", tokens=check.tokens,
               probs=number(ui, np.float32(check.probs)),
               logits=number(ui, np.float32(check.logits)),
               attention=number(ui, np.float32(check.attention)))


def fill_cache_check(markdown: str, run: ExampleRun, ui: dict[str, str]) -> str:
    """``markdown`` with each marker line replaced by the paragraph (unchanged without one)."""
    if run.cache_check is None or not CHECK_MARKER.search(markdown):
        return markdown
    text = cache_check_text(run.cache_check, ui)
    if run.cache_check.tokens != len(run.generation):  # the catalog counts the example's
        text += " " + fmt(ui, "replay.more_tokens", tokens=run.cache_check.tokens,
                          example=len(run.generation))
    text = md_escape(text)
    return CHECK_MARKER.sub(lambda match: text, markdown)
