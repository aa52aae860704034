"""A checkpoint's own tokenizer: the ``tokenizer.json`` of a Hugging Face model folder, read
with the ``tokenizers`` package (installed with ``transformers``, or ``pip install tokenizers``).

    tokenizer = CheckpointTokenizer.from_folder("path/to/model")   # None without tokenizer.json
    ids = tokenizer.encode("Hello")            # as the model was trained: special tokens too
    tokenizer.strings(ids)                     # how each token reads, e.g. ['<s>', 'Hello']
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from ..files.regular_file import read_bounded

TOKENIZER_NAME = "tokenizer.json"
# The tokenizer.json of a large vocabulary takes tens of megabytes
MAX_TOKENIZER_BYTES = 200_000_000


class CheckpointTokenizer:
    """Encodes text to a checkpoint's token IDs and shows each token as a string."""

    def __init__(self, tokenizer, source: str) -> None:
        self.tokenizer, self.source = tokenizer, source

    @classmethod
    def from_folder(cls, folder) -> "CheckpointTokenizer | None":
        """The tokenizer of ``folder/tokenizer.json``; ``None`` when the folder has none.

        ``ValueError`` when the file cannot be read (read only as a regular file of bounded
        size) or ``tokenizers`` is not installed."""
        path = Path(folder) / TOKENIZER_NAME
        if not os.path.lexists(path):
            return None
        text = read_bounded(path, MAX_TOKENIZER_BYTES)  # a FIFO or a device: ValueError
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ValueError(f"{path} needs the tokenizers package to be read: pip install "
                             f"tokenizers (it comes with transformers)") from None
        try:
            return cls(Tokenizer.from_str(text.decode("utf-8")), str(path))
        except Exception as error:  # tokenizers raises plain Exception for a bad file
            raise ValueError(f"{path} is not a tokenizer file that the tokenizers package "
                             f"reads: {error}") from None

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        """Token IDs of ``text``, with the special tokens the tokenizer adds (e.g. BOS)."""
        return list(self.tokenizer.encode(text).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def strings(self, ids: Sequence[int]) -> list[str]:
        """Each token decoded on its own (a token holding part of a UTF-8 character reads
        as U+FFFD, as the byte tokenizer's do)."""
        return [self.decode([i]) for i in ids]
