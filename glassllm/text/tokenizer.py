"""A byte-level tokenizer: each UTF-8 byte is one token, so the vocabulary has 256 IDs."""

from __future__ import annotations

from collections.abc import Mapping, MappingView, Set
from numbers import Integral
from typing import Sequence

BYTE_VOCAB_SIZE = 256
# containers with no order of their own: a set's is its hashes', a dict's items are no IDs
UNORDERED = (Set, Mapping, MappingView)


def encode(text: str) -> list[int]:
    """The UTF-8 bytes of ``text`` as token IDs in [0, 256)."""
    if not isinstance(text, str):
        raise ValueError(f"encode() takes a str, got {type(text).__name__}")
    return list(text.encode("utf-8"))


def decode(tokens: Sequence[int]) -> str:
    """The text of byte tokens; bytes that are not valid UTF-8 become U+FFFD."""
    items = None
    if not isinstance(tokens, UNORDERED):  # a set's order is not the text's
        try:
            items = list(tokens)
        except TypeError:  # None, a number: nothing to read token IDs from
            pass
    if items is None:
        raise ValueError(f"decode() takes a sequence of byte token IDs (a list, a tuple or a "
                         f"1-D array), got {type(tokens).__name__}")
    for position, token in enumerate(items):
        if (isinstance(token, bool) or not isinstance(token, Integral)
                or not 0 <= token < BYTE_VOCAB_SIZE):
            raise ValueError(f"tokens[{position}] is {token!r}; byte tokens are integers "
                             f"in [0, {BYTE_VOCAB_SIZE})")
    return bytes(int(t) for t in items).decode("utf-8", errors="replace")


def check_token_order(tokens, what: str) -> None:
    """Refuse what cannot be a sequence of token IDs before reading it: text, and containers
    with no order of their own (a set's order is its hashes', a dict's items are not IDs)."""
    if isinstance(tokens, (str, bytes)):
        raise ValueError(f"{what} must be a sequence of token IDs, not text; "
                         f"use glassllm.encode(text) to turn text into byte tokens")
    if isinstance(tokens, UNORDERED):
        raise ValueError(f"{what} is a {type(tokens).__name__}, which does not keep the tokens' "
                         f"order; give the token IDs in order as a list, a tuple or a 1-D array")


def token_label(token: int) -> str:
    """How one byte token reads in a table cell or an axis label, the same on every page and
    in the replay: ``bytes_label`` of its byte (printable ASCII as itself, space as ␣, newline
    as ⏎, any other byte as its escape ``\\x09``). A token above 255 (a larger vocabulary,
    recorded without its tokenizer) is no byte: it reads as its ID, ``#41809``."""
    token = int(token)
    if token >= BYTE_VOCAB_SIZE:
        return f"#{token}"
    return bytes_label(bytes([token]))


def bytes_label(data: bytes) -> str:
    """How a token's bytes read as a chip or an axis label: its UTF-8 text, with each space
    as ␣ and each newline as ⏎ (so a leading space shows), any other character that does not
    print as its escape (``\\x09``, ``\\u200b``), and bytes that are no whole UTF-8
    character (part of one: a byte token, a piece of an emoji) as ``\\xf0``."""
    out = []
    for char in bytes(data).decode("utf-8", errors="backslashreplace"):
        if char == " ":
            out.append("␣")
        elif char == "\n":
            out.append("⏎")
        elif char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)
