"""Tokens as the pages write them, from the labels the engine gives each token.

The labels are ``glassllm.tokenizer.token_label``'s, as the engine's child reported them
(``engine/child.py``): the pages, the replay and the tests read one label per byte.
"""

from __future__ import annotations

from collections.abc import Sequence

SPACE = 32  # the byte that running text writes as itself


class TokenLabels:
    """One label per token ID (``labels[t]``), and tokens as running text."""

    def __init__(self, labels: Sequence[str]) -> None:
        self.labels = tuple(labels)

    def __call__(self, token: int) -> str:
        """The label of one token: what a table cell or an axis shows."""
        return self.labels[int(token)]

    def text(self, tokens) -> str:
        """Tokens as running text (prompts in prose): spaces stay spaces, others as labels."""
        return "".join(" " if int(t) == SPACE else self(t) for t in tokens)
