"""Tokens as the pages write them, from the labels and bytes the engine gives each token.

The labels are the example model's tokenizer's (``labels``: a subword token with its leading
space as ␣, ``␣the``; a byte token as ``glassllm.tokenizer.token_label`` writes it), and each
token's bytes as hex, as the engine's child reported them (``engine/child.py``): the pages,
the replay and the tests read one label per token ID of the model's vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence


class TokenLabels:
    """One label per token ID (``labels[t]``), and tokens as running text."""

    def __init__(self, labels: Sequence[str], token_bytes: Sequence[str] | None = None) -> None:
        self.labels = tuple(labels)
        # each token's bytes (hex); without them (a test's table of byte labels) token t is byte t
        self.token_bytes = (tuple(bytes.fromhex(h) for h in token_bytes)
                            if token_bytes is not None else None)
        if self.token_bytes is not None and len(self.token_bytes) != len(self.labels):
            raise ValueError(f"{len(self.labels)} token labels but {len(self.token_bytes)} "
                             f"tokens' bytes")

    def __call__(self, token: int) -> str:
        """The label of one token: what a table cell, an axis or a chip shows."""
        return self.labels[int(token)]

    def data(self, tokens) -> bytes:
        """The bytes of text that ``tokens`` stand for."""
        if self.token_bytes is None:
            return bytes(int(t) for t in tokens)
        return b"".join(self.token_bytes[int(t)] for t in tokens)

    def decode(self, tokens) -> str:
        """``tokens`` as the text they stand for, as the tokenizer decodes them (bytes that
        are no whole UTF-8 character become U+FFFD)."""
        return self.data(tokens).decode("utf-8", errors="replace")

    def text(self, tokens) -> str:
        """Tokens as running text (prompts in prose): the decoded text, with newlines as ⏎ and
        other characters that do not print as their labels' escapes."""
        return "".join(" " if char == " " else _shown(char) for char in self.decode(tokens))


def chip_text(text: str) -> str:
    """A piece of text as a token chip shows it: each space as ␣, each newline as ⏎, other
    characters that do not print as escapes (as the tokenizer's labels write them)."""
    return "".join("␣" if char == " " else _shown(char) for char in text)


def _shown(char: str) -> str:
    if char == "\n":
        return "⏎"
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
