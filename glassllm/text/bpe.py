"""A checkpoint's tokenizer in pure Python: bytes, or the byte-level BPE of its ``tokenizer.json``.

    tokenizer = load_tokenizer("path/to/model")   # ByteTokenizer without tokenizer.json
    ids = tokenizer.encode("The cat sat")          # the tokenizers package's IDs
    tokenizer.strings(ids)                         # ['The', ' cat', ' sat']

The reader needs no ``tokenizers`` (the reader's browser has none, only Python and its
standard ``re``). It reads the byte-level BPE of GPT-2's design in Hugging Face's format and
nothing else: a ``tokenizer.json`` it cannot reproduce exactly (another normalizer,
pre-tokenizer, decoder or model, BPE dropout, ...) is a ``ValueError`` that names the part.

Encoding, as ``tokenizers`` does it: (1) the added tokens are cut out of the text wherever
they occur (leftmost, longest first); (2) each piece between them is split into words by
GPT-2's pattern; (3) each word's UTF-8 bytes become printable characters, one per byte
(GPT-2's byte-to-unicode table); (4) the word's characters are merged pair by pair, always
the pair learned first, until no learned pair is left; each resulting symbol is one token.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import Sequence

from ..files.regular_file import read_bounded
from .tokenizer import BYTE_VOCAB_SIZE, bytes_label, decode as decode_bytes, encode as encode_bytes

TOKENIZER_NAME = "tokenizer.json"
# The tokenizer.json of a large vocabulary takes tens of megabytes
MAX_TOKENIZER_BYTES = 200_000_000


class UnsupportedTokenizer(ValueError):
    """A tokenizer.json this reader cannot reproduce exactly; the message names the part."""


class ByteTokenizer:
    """The byte tokenizer: each UTF-8 byte is one token (256 IDs)."""

    vocab_size = BYTE_VOCAB_SIZE
    kind = "bytes"

    def encode(self, text: str) -> list[int]:
        return encode_bytes(text)

    def decode(self, ids: Sequence[int]) -> str:
        return decode_bytes(ids)

    def strings(self, ids: Sequence[int]) -> list[str]:
        """Each token decoded on its own (a byte inside a multi-byte character reads as
        U+FFFD)."""
        return [decode_bytes([i]) for i in ids]

    def byte_lengths(self, ids: Sequence[int]) -> list[int]:
        """How many bytes of text each token stands for: one."""
        return [1] * len(ids)

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        """The bytes of text each token stands for: its own byte."""
        decode_bytes(ids)  # a ValueError naming an ID that is no byte
        return [bytes([int(i)]) for i in ids]

    def labels(self, ids: Sequence[int]) -> list[str]:
        """Each token as a chip shows it (``bytes_label``: ␣ for a space, ``\\xc3`` for a byte
        that is part of a character)."""
        return [bytes_label(data) for data in self.token_bytes(ids)]

    def __repr__(self) -> str:
        return "ByteTokenizer()"


# -- GPT-2's byte-to-unicode table ---------------------------------------------------------

def bytes_to_unicode() -> dict[int, str]:
    """Each byte as one printable character: printable Latin-1 bytes as themselves, the rest
    (controls, space, ...) as U+0100 onwards, so no word's characters are whitespace."""
    kept = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            + list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for byte in range(256):
        if byte in kept:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


BYTE_CHAR = bytes_to_unicode()
CHAR_BYTE = {char: byte for byte, char in BYTE_CHAR.items()}


# -- GPT-2's split into words --------------------------------------------------------------
# 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
# The pattern of tokenizers' ByteLevel pre-tokenizer (Oniguruma). Python's re has no \p{L} or
# \p{N}; its \s also matches U+001C..U+001F, which Oniguruma's does not; and unicodedata's
# Unicode version differs from Oniguruma's (and between Pythons). So the three classes come
# from bpe_classes.py, which scripts/build_bpe_classes.py writes by asking tokenizers.

def _class_body(ranges: str) -> str:
    """A regex character class body from hex code point ranges ("41-5a 61-7a aa"): the
    characters themselves, a backslash before those a class gives a meaning (a pattern 7x
    shorter than one of \\U escapes, which re compiles 2x faster: 0.1 s of the site's start
    in WebAssembly)."""
    def char(code: str) -> str:
        c = chr(int(code, 16))
        return "\\" + c if c in "\\]^-[" else c
    return "".join("-".join(char(end) for end in part.split("-")) for part in ranges.split())


_WORDS: re.Pattern | None = None


def word_pattern() -> re.Pattern:
    """GPT-2's pattern for Python's re (compiled once, on first use)."""
    global _WORDS
    if _WORDS is None:
        from . import bpe_classes
        letters, numbers = _class_body(bpe_classes.LETTERS), _class_body(bpe_classes.NUMBERS)
        s = _class_body(bpe_classes.WHITE_SPACE)
        _WORDS = re.compile(
            rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letters}]+| ?[{numbers}]+| ?[^{s}{letters}{numbers}]+"
            rf"|[{s}]+(?![^{s}])|[{s}]+")
    return _WORDS


# -- the BPE tokenizer ---------------------------------------------------------------------

@dataclass(frozen=True)
class Merge:
    """One merge applied to a word: the pair and the piece it makes (as ``bytes_label``
    shows each: ``␣c``, and ``\\xc3`` + ``\\xaf`` make ``ï``), its rank in tokenizer.json's
    ``merges`` (0: learned first) and how many times it joined the pair in the word."""

    left: str
    right: str
    joined: str
    rank: int
    count: int = 1


@dataclass(frozen=True)
class WordSplit:
    """One word of a text as ``BPETokenizer.explain`` reports it: the word, the merges that
    turned its bytes into tokens (in the order applied) and the tokens' IDs."""

    word: str
    merges: tuple[Merge, ...]
    ids: tuple[int, ...]


class BPETokenizer:
    """A byte-level BPE tokenizer read from a ``tokenizer.json`` (see the module's text)."""

    kind = "bpe"

    def __init__(self, vocab: dict[str, int], merges: Sequence[tuple[str, str]], *,
                 added: Sequence[tuple[str, int, bool]] = (), add_prefix_space: bool = False,
                 use_regex: bool = True, ignore_merges: bool = False,
                 around: tuple[Sequence[int], Sequence[int]] = ((), ()), source: str = "") -> None:
        self.vocab = dict(vocab)
        # the post-processor's special tokens before and after every text (e.g. BOS)
        self.before, self.after = list(around[0]), list(around[1])
        self.source = source
        self.add_prefix_space, self.use_regex = add_prefix_space, use_regex
        self.ignore_merges = ignore_merges
        self.ranks: dict[tuple[str, str], int] = {}
        for rank, (left, right) in enumerate(merges):
            self.ranks.setdefault((left, right), rank)  # a merge listed twice: the first counts
        self.added = {content: token_id for content, token_id, _ in added}
        self.special = {token_id for _, token_id, special in added if special}
        self.id_to_token: dict[int, str] = {i: t for t, i in self.vocab.items()}
        self.id_to_token.update({i: t for t, i in self.added.items()})
        self.vocab_size = max(self.id_to_token) + 1 if self.id_to_token else 0
        # longest first: a regex alternation takes the first alternative that matches
        self._added_pattern = (re.compile("|".join(re.escape(t) for t in sorted(
            self.added, key=lambda t: (-len(t), t)))) if self.added else None)
        self._cache: dict[str, tuple[int, ...]] = {}
        if use_regex:
            word_pattern()  # compiled now (~0.05 s), not inside the first encode

    # -- encoding --------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """The token IDs of ``text``, as ``tokenizers`` gives them."""
        if not isinstance(text, str):
            raise TypeError(f"encode() takes a str, got {type(text).__name__}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(f"text holds U+{ord(text[err.start]):04X} at index {err.start}, a "
                             f"lone surrogate that UTF-8 cannot encode; give valid text") from None
        ids: list[int] = list(self.before)
        for piece, added_id in self._pieces(text):
            if added_id is not None:
                ids.append(added_id)
                continue
            if self.add_prefix_space and not piece.startswith(" "):
                piece = " " + piece
            words = word_pattern().findall(piece) if self.use_regex else [piece]
            for word in words:
                ids.extend(self._word_ids(word))
        return ids + self.after

    def _pieces(self, text: str):
        """``text`` cut at the added tokens: (piece, None) between them, (token, ID) for each."""
        if self._added_pattern is None:
            if text:
                yield text, None
            return
        start = 0
        for match in self._added_pattern.finditer(text):
            if match.start() > start:
                yield text[start:match.start()], None
            yield match.group(), self.added[match.group()]
            start = match.end()
        if start < len(text):
            yield text[start:], None

    def _word_ids(self, word: str) -> tuple[int, ...]:
        ids = self._cache.get(word)
        if ids is None:
            chars = "".join(BYTE_CHAR[b] for b in word.encode("utf-8"))
            if self.ignore_merges and chars in self.vocab:
                ids = (self.vocab[chars],)
            else:
                ids = tuple(self.vocab[symbol] for symbol in self._merge(list(chars)))
            if len(self._cache) < 100_000:
                self._cache[word] = ids
        return ids

    def _merge(self, symbols: list[str], steps: list | None = None) -> list[str]:
        """Merge the pair learned first, every occurrence left to right, until none is left;
        ``steps``, if given, receives ``(pair, rank, occurrences)`` of each merge applied."""
        ranks = self.ranks
        while len(symbols) > 1:
            best, best_rank = None, None
            for pair in zip(symbols, symbols[1:]):
                rank = ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best, best_rank = pair, rank
            if best is None:
                break
            merged, i, joined = [], 0, best[0] + best[1]
            before = len(symbols)
            while i < len(symbols):
                if i + 1 < len(symbols) and symbols[i] == best[0] and symbols[i + 1] == best[1]:
                    merged.append(joined)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            if steps is not None:
                steps.append((best, best_rank, before - len(merged)))
            symbols = merged
        return symbols

    # -- decoding --------------------------------------------------------------------------

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (special tokens kept); bytes that are not valid UTF-8 (part of
        a character) become U+FFFD."""
        data = b"".join(_token_bytes(self._token(i, n)) for n, i in enumerate(ids))
        return data.decode("utf-8", errors="replace")

    def strings(self, ids: Sequence[int]) -> list[str]:
        """Each token as the pages show it: its text on its own, e.g. ``' the'``."""
        return [self.decode([i]) for i in ids]

    def byte_lengths(self, ids: Sequence[int]) -> list[int]:
        """How many bytes of text each token stands for (nats per byte divide by their sum)."""
        return [len(_token_bytes(self._token(i, n))) for n, i in enumerate(ids)]

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        """The bytes of text each token stands for (``b" the"``)."""
        return [_token_bytes(self._token(i, n)) for n, i in enumerate(ids)]

    def labels(self, ids: Sequence[int]) -> list[str]:
        """Each token as a chip shows it: ``strings`` with a space as ␣ and a newline as ⏎,
        so ``' the'`` reads ``␣the`` (``bytes_label``; a piece of a character reads as its
        bytes' escapes, ``\\xf0\\x9f``)."""
        return [bytes_label(data) for data in self.token_bytes(ids)]

    def explain(self, text: str) -> list["WordSplit"]:
        """How ``text`` is split into tokens, word by word as ``encode`` does it: each word of
        GPT-2's pattern (or added token) with the merges applied to its bytes, in order, and
        the tokens that result. ``sum of the words' ids`` is ``encode(text)`` without the
        post-processor's special tokens."""
        if not isinstance(text, str):
            raise TypeError(f"explain() takes a str, got {type(text).__name__}")
        text.encode("utf-8")  # a lone surrogate: UnicodeEncodeError, as encode refuses it
        out = []
        for piece, added_id in self._pieces(text):
            if added_id is not None:
                out.append(WordSplit(piece, (), (added_id,)))
                continue
            if self.add_prefix_space and not piece.startswith(" "):
                piece = " " + piece
            for word in (word_pattern().findall(piece) if self.use_regex else [piece]):
                chars = "".join(BYTE_CHAR[b] for b in word.encode("utf-8"))
                if self.ignore_merges and chars in self.vocab:
                    out.append(WordSplit(word, (), (self.vocab[chars],)))
                    continue
                steps: list = []
                symbols = self._merge(list(chars), steps)
                merges = tuple(Merge(*(bytes_label(_token_bytes(part))
                                       for part in (left, right, left + right)), rank, count)
                               for (left, right), rank, count in steps)
                out.append(WordSplit(word, merges, tuple(self.vocab[s] for s in symbols)))
        return out

    def _token(self, token_id, position: int) -> str:
        if isinstance(token_id, bool) or not isinstance(token_id, Integral) \
                or int(token_id) not in self.id_to_token:
            raise ValueError(f"ids[{position}] is {token_id!r}, not a token ID of "
                             f"{self.source or 'this tokenizer'} (integers in "
                             f"[0, {self.vocab_size}))")
        return self.id_to_token[int(token_id)]

    def __repr__(self) -> str:
        return f"BPETokenizer({self.source!r}, vocab_size={self.vocab_size})"


def _token_bytes(token: str) -> bytes:
    """A token's bytes: its characters mapped back through GPT-2's table, or, for an added
    token with a character outside it, its own UTF-8 text (as tokenizers' decoder does)."""
    try:
        return bytes(CHAR_BYTE[char] for char in token)
    except KeyError:
        return token.encode("utf-8")


# -- reading tokenizer.json ----------------------------------------------------------------

def load_tokenizer(folder) -> ByteTokenizer | BPETokenizer:
    """The tokenizer of a checkpoint folder: ``folder/tokenizer.json`` read by glassllm's own
    reader, or the byte tokenizer when the folder has no ``tokenizer.json``.

    ``ValueError`` when the folder is missing, or its ``tokenizer.json`` is unreadable or asks
    for something this reader cannot reproduce exactly (the message names it)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder; give a checkpoint folder (config.json, "
                         f"model.safetensors, optionally {TOKENIZER_NAME})")
    path = folder / TOKENIZER_NAME
    if not os.path.lexists(path):
        return ByteTokenizer()
    raw = read_bounded(path, MAX_TOKENIZER_BYTES)  # a FIFO or a device: ValueError
    try:
        spec = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not JSON ({err}); give a tokenizer.json as the tokenizers "
                         f"package saves it") from None
    return tokenizer_from_json(spec, str(path))


def tokenizer_from_json(spec, source: str = "tokenizer.json") -> BPETokenizer:
    """A ``BPETokenizer`` from the parsed JSON of a ``tokenizer.json``."""
    def unsupported(part: str, found) -> ValueError:
        shown = json.dumps(found)
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        return UnsupportedTokenizer(f"{source}: {part} is {shown}; glassllm's tokenizer reads only "
                          f"byte-level BPE (GPT-2's design) and cannot reproduce this exactly")

    if not isinstance(spec, dict):
        raise ValueError(f"{source} is not a JSON object; give a tokenizer.json as the "
                         f"tokenizers package saves it")
    for part in ("normalizer", "truncation", "padding"):
        if spec.get(part) is not None:
            raise unsupported(part, spec[part])
    pre = spec.get("pre_tokenizer")
    if isinstance(pre, dict) and pre.get("type") == "Sequence" \
            and len(pre.get("pretokenizers") or []) == 1:
        pre = pre["pretokenizers"][0]
    if not isinstance(pre, dict) or pre.get("type") != "ByteLevel":
        raise unsupported("pre_tokenizer", pre)
    around = _template(spec.get("post_processor"), unsupported)
    decoder = spec.get("decoder")
    if not isinstance(decoder, dict) or decoder.get("type") != "ByteLevel":
        raise unsupported("decoder", decoder)
    model = spec.get("model")
    if not isinstance(model, dict) or model.get("type", "BPE") != "BPE" \
            or not isinstance(model.get("vocab"), dict) or "merges" not in model:
        raise unsupported("model", model if not isinstance(model, dict) else
                          {k: v for k, v in model.items() if k not in ("vocab", "merges")})
    for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise unsupported(f"model.{key}", model[key])
    vocab = model["vocab"]
    if not all(isinstance(t, str) and isinstance(i, int) and not isinstance(i, bool) and i >= 0
               for t, i in vocab.items()):
        raise ValueError(f"{source}: model.vocab must map token strings to IDs >= 0")
    missing = [b for b, char in BYTE_CHAR.items() if char not in vocab]
    if missing:
        # then some texts need model.unk_token or byte_fallback, which this reader lacks
        raise unsupported("model.vocab without every byte (missing bytes)", missing[:16])
    merges = []
    for merge in model["merges"]:
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise unsupported("a merge", merge)
        merges.append((pair[0], pair[1]))
    added = []
    for token in spec.get("added_tokens") or []:
        for flag in ("single_word", "lstrip", "rstrip"):
            if token.get(flag):
                raise unsupported(f"added token {token.get('content')!r}'s {flag}", True)
        if not token.get("content"):
            raise unsupported("an added token without content", token)
        added.append((token["content"], int(token["id"]), bool(token.get("special"))))
    return BPETokenizer(vocab, merges, added=added,
                        add_prefix_space=bool(pre.get("add_prefix_space", True)),
                        use_regex=bool(pre.get("use_regex", True)),
                        ignore_merges=bool(model.get("ignore_merges", False)), around=around,
                        source=source)


def _template(post, unsupported) -> tuple[list[int], list[int]]:
    """The IDs a post-processor puts before and after a single text: none for ByteLevel's
    (it changes only offsets), the special tokens of a TemplateProcessing's ``single``."""
    processors = post.get("processors") if isinstance(post, dict) and \
        post.get("type") == "Sequence" else [post]
    before: list[int] = []
    after: list[int] = []
    templates = 0
    for one in processors or []:
        if one is None or (isinstance(one, dict) and one.get("type") == "ByteLevel"):
            continue
        if not (isinstance(one, dict) and one.get("type") == "TemplateProcessing"
                and isinstance(one.get("single"), list) and templates == 0):
            raise unsupported("post_processor", post)
        templates += 1
        sequences = 0
        for item in one["single"]:
            if isinstance(item, dict) and "Sequence" in item and item["Sequence"].get("id") == "A":
                sequences += 1
            elif isinstance(item, dict) and "SpecialToken" in item:
                special = (one.get("special_tokens") or {}).get(item["SpecialToken"].get("id"))
                if not isinstance(special, dict) or not isinstance(special.get("ids"), list):
                    raise unsupported("post_processor", post)
                (after if sequences else before).extend(int(i) for i in special["ids"])
            else:
                raise unsupported("post_processor", post)
        if sequences != 1:
            raise unsupported("post_processor", post)
    return before, after
