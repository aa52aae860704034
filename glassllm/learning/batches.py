"""What a training run learns from: text files as tokens (bytes, or a tokenizer.json's
subwords), and the batches drawn from them or from any mix of sources.

    data   = read_texts(["book.txt"])                    # UTF-8 bytes
    tokens = text_tokens(data)                           # one token per byte, or
    tok    = read_tokenizer("path/to/tokenizer.json")    # a byte-level BPE (glassllm.bpe) ...
    tokens = text_tokens(data, tok)                      # ... and its token IDs

A **batch source** is a callable ``source(step, rng) -> rows``: the rows of training step
``step`` (counted from 0) as an integer array ``(batch_size, context + 1)``, drawn with the
run's ``rng`` (a ``numpy.random.Generator``) and nothing else random. The trainer keeps the
generator's state in every snapshot, so a run resumed from a snapshot draws exactly the
rows of a run never stopped. The default source is ``Windows``: random windows of one token
stream. ``Mix`` draws each row from one of several **row sources** (``source(rng, n) -> (n,)``
tokens), with weights that change by phase; ``text_rows``, ``span_copy``, ``twice`` and
``chains`` are row sources that recipes mix:

    rows = Mix([(300, {"copy": 1.0}),                    # 300 steps of copying only,
                (700, {"copy": 0.2, "text": 0.8})],      # then mostly text
               {"copy": span_copy(range(32), (3, 10), 8), "text": text_rows(tokens)},
               batch_size=32, length=129)
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ..text.bpe import TOKENIZER_NAME, BPETokenizer, MAX_TOKENIZER_BYTES, tokenizer_from_json
from ..files.regular_file import read_bounded

MAX_TEXT_BYTES = 2_000_000_000  # held in memory as one byte per token
FILES_HINT = "give UTF-8 text files"

RowSource = Callable[[np.random.Generator, int], np.ndarray]      # (rng, n) -> (n,)
BatchSource = Callable[[int, np.random.Generator], np.ndarray]    # (step, rng) -> (b, n)


# -- text files ------------------------------------------------------------------------------

def read_texts(paths: Sequence) -> bytes:
    """The UTF-8 bytes of the text files ``paths``, one after the other (a newline put
    between two files where the first does not end with one). ``ValueError`` for a file
    that is missing, not a regular file, empty, binary or not UTF-8."""
    if isinstance(paths, (str, bytes, os.PathLike)) or not paths:
        raise ValueError("give a list of one or more text files")
    parts = []
    for path in paths:
        data = read_bounded(path, MAX_TEXT_BYTES, FILES_HINT)
        if not data.strip():
            raise ValueError(f"{path} is empty{' (only white space)' if data else ''}; "
                             f"{FILES_HINT} holding the text to learn")
        nul = data.find(b"\0")
        if nul >= 0:
            raise ValueError(f"{path} holds a NUL byte at position {nul}: it is a binary "
                             f"file, not text; {FILES_HINT}")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{path} is not UTF-8 text (byte 0x{data[error.start]:02x} at "
                             f"position {error.start}); convert it to UTF-8, e.g. with "
                             f"iconv -t UTF-8") from None
        if parts and not parts[-1].endswith(b"\n"):
            parts.append(b"\n")
        parts.append(data)
    return b"".join(parts)


# -- the tokenizer ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TokenizerFile:
    """A ``tokenizer.json`` as training uses it: its exact bytes (copied into the checkpoint
    folder), their sha256 (a resume with another tokenizer is refused) and glassllm's reader."""

    path: Path
    text: bytes
    sha256: str
    tokenizer: BPETokenizer

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size


def read_tokenizer(path) -> TokenizerFile:
    """The byte-level BPE of ``path``: a ``tokenizer.json`` or a folder holding one.
    ``ValueError`` for a missing file or one that glassllm's reader cannot reproduce."""
    path = Path(path)
    if path.is_dir():
        path = path / TOKENIZER_NAME
        if not path.exists():
            raise ValueError(f"{path.parent} holds no {TOKENIZER_NAME}; give a tokenizer.json "
                             f"or a folder holding one (scripts/train_tokenizer.py trains one)")
    text = read_bounded(path, MAX_TOKENIZER_BYTES, "give a tokenizer.json")
    try:
        spec = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path} is not JSON ({error}); give a tokenizer.json as the "
                         f"tokenizers package saves it") from None
    return TokenizerFile(path, text, hashlib.sha256(text).hexdigest(),
                         tokenizer_from_json(spec, str(path)))


def text_tokens(data: bytes, tokenizer: TokenizerFile | BPETokenizer | None = None) -> np.ndarray:
    """The tokens of UTF-8 text ``data``: each byte one token in [0, 256) (uint8) without a
    tokenizer, else the tokenizer's IDs (int32) of the whole text, as ``tokenizers`` gives them."""
    if tokenizer is None:
        return np.frombuffer(data, dtype=np.uint8)
    reader = tokenizer.tokenizer if isinstance(tokenizer, TokenizerFile) else tokenizer
    return np.array(reader.encode(bytes(data).decode("utf-8")), dtype=np.int32)


def timed_tokens(data: bytes, tokenizer: TokenizerFile | None) -> tuple[np.ndarray, float]:
    """``text_tokens`` and the seconds it took (the pure-Python BPE reads ~3 MB/s)."""
    start = time.perf_counter()
    tokens = text_tokens(data, tokenizer)
    return tokens, time.perf_counter() - start


def tokens_sha256(tokens: np.ndarray) -> str:
    """The data's fingerprint: bytes as bytes, subword IDs as little-endian int32."""
    tokens = np.asarray(tokens)
    array = tokens if tokens.dtype == np.uint8 else tokens.astype("<i4")
    return hashlib.sha256(array.tobytes()).hexdigest()


# -- batch sources ----------------------------------------------------------------------------

class Windows:
    """The default batch source: ``batch_size`` random windows of ``length`` tokens of one
    token stream."""

    def __init__(self, tokens: np.ndarray, length: int, batch_size: int) -> None:
        if len(tokens) < length:
            raise ValueError(f"the text has {len(tokens):,} tokens, fewer than one window of "
                             f"{length} (the context + 1); give more text or a shorter context")
        self.tokens, self.length, self.batch_size = tokens, length, batch_size
        self._offsets = np.arange(length)

    def __call__(self, step: int, rng: np.random.Generator) -> np.ndarray:
        starts = rng.integers(0, len(self.tokens) - self.length + 1, self.batch_size)
        return self.tokens[starts[:, None] + self._offsets].astype(np.int64)  # (b, length)


def check_rows(rows, batch_size: int, length: int, vocab_size: int, step: int) -> np.ndarray:
    """A batch source's rows as int64 ``(batch_size, length)``, or a ``ValueError`` that
    says what is wrong with them."""
    rows = np.asarray(rows)
    where = f"the batch source's rows of step {step}"
    if rows.shape != (batch_size, length):
        raise ValueError(f"{where} have shape {rows.shape}; the run needs (batch_size, "
                         f"context + 1) = ({batch_size}, {length})")
    if not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(f"{where} are {rows.dtype}, not token IDs (integers)")
    if rows.size and (rows.min() < 0 or rows.max() >= vocab_size):
        bad = rows.min() if rows.min() < 0 else rows.max()
        raise ValueError(f"{where} hold token {bad}, outside the vocabulary [0, {vocab_size})")
    return rows.astype(np.int64)


def _weights(phase: int, mix) -> dict[str, float]:
    if not isinstance(mix, Mapping) or not mix:
        raise ValueError(f"phase {phase}'s mix must be a non-empty {{source: weight}}, "
                         f"got {mix!r}")
    for name, weight in mix.items():
        if isinstance(weight, bool) or not isinstance(weight, Real) or not weight >= 0 \
                or not np.isfinite(weight):
            raise ValueError(f"phase {phase}: the weight of {name!r} must be a finite number "
                             f">= 0, got {weight!r}")
    if sum(mix.values()) <= 0:
        raise ValueError(f"phase {phase}'s weights are all 0; give one a positive weight")
    return {str(name): float(weight) for name, weight in mix.items()}


class Mix:
    """A batch source whose rows come from row sources mixed by phase.

    ``phases``: ``[(steps, {source name: weight}), ...]`` in order; phase k covers its
    ``steps`` steps after the phases before it, and the last phase goes on after its own.
    Each row of a step picks its source with probability proportional to the weights of
    the step's phase, then draws its ``length`` tokens from it, all with the run's ``rng``.
    ``length``: one row length for every phase, or a list of one per phase.
    """

    def __init__(self, phases: Sequence, sources: Mapping[str, RowSource], *, batch_size: int,
                 length: int | Sequence[int]) -> None:
        if isinstance(phases, (str, bytes)) or not phases:
            raise ValueError("phases must be a non-empty list of (steps, {source: weight})")
        self.phases: list[tuple[int, dict[str, float]]] = []
        for k, phase in enumerate(phases):
            if not (isinstance(phase, Sequence) and len(phase) == 2):
                raise ValueError(f"phase {k} must be (steps, {{source: weight}}), got {phase!r}")
            steps, mix = phase
            if isinstance(steps, bool) or not isinstance(steps, Integral) or steps < 1:
                raise ValueError(f"phase {k}'s steps must be a whole number >= 1, got {steps!r}")
            mix = _weights(k, mix)
            unknown = sorted(set(mix) - set(sources))
            if unknown:
                raise ValueError(f"phase {k} names {unknown}, which are not sources; the "
                                 f"sources are {sorted(sources)}")
            self.phases.append((int(steps), mix))
        lengths = [length] * len(self.phases) if isinstance(length, Integral) else list(length)
        if len(lengths) != len(self.phases) or not all(
                isinstance(n, Integral) and not isinstance(n, bool) and n >= 2 for n in lengths):
            raise ValueError(f"length must be a whole number >= 2 or one per phase "
                             f"({len(self.phases)}), got {length!r}")
        self.sources, self.batch_size, self.lengths = dict(sources), batch_size, lengths
        self.ends = np.cumsum([steps for steps, _ in self.phases])

    @property
    def steps(self) -> int:
        """The steps of all phases together."""
        return int(self.ends[-1])

    def phase_at(self, step: int) -> int:
        """The phase of step ``step`` (from 0); the last phase after the end of all."""
        return min(int(np.searchsorted(self.ends, step, side="right")), len(self.phases) - 1)

    def __call__(self, step: int, rng: np.random.Generator) -> np.ndarray:
        phase = self.phase_at(step)
        mix, length = self.phases[phase][1], self.lengths[phase]
        names = list(mix)
        edges = np.cumsum([mix[name] for name in names])
        picks = np.minimum(np.searchsorted(edges, rng.random(self.batch_size) * edges[-1],
                                           side="right"), len(names) - 1)
        rows = []
        for i in picks:
            row = np.asarray(self.sources[names[i]](rng, length))
            if row.shape != (length,):
                raise ValueError(f"source {names[i]!r} gave a row of shape {row.shape}, not "
                                 f"({length},)")
            rows.append(row)
        return np.stack(rows).astype(np.int64)  # (batch_size, length)


# -- row sources ------------------------------------------------------------------------------

def _alphabet(alphabet) -> np.ndarray:
    tokens = np.asarray(alphabet, dtype=np.int64).ravel()
    if len(tokens) < 2 or len(np.unique(tokens)) != len(tokens):
        raise ValueError(f"an alphabet must hold 2 or more distinct tokens, got {len(tokens)}"
                         f"{' with repeats' if len(np.unique(tokens)) != len(tokens) else ''}")
    return tokens


def _lengths(lengths, most: int) -> tuple[int, int]:
    low, high = (lengths, lengths) if isinstance(lengths, Integral) else tuple(lengths)
    if not 1 <= low <= high:
        raise ValueError(f"span lengths must be (shortest, longest) with 1 <= shortest <= "
                         f"longest, got {lengths!r}")
    if high > most:
        raise ValueError(f"a span of {high} distinct tokens needs an alphabet of {high} or "
                         f"more; this one has {most}")
    return int(low), int(high)


def text_rows(tokens: np.ndarray) -> RowSource:
    """Rows of a token stream: ``n`` consecutive tokens at a random place."""
    tokens = np.asarray(tokens)

    def row(rng: np.random.Generator, n: int) -> np.ndarray:
        if len(tokens) < n:
            raise ValueError(f"the text has {len(tokens):,} tokens, fewer than one row of {n}")
        start = int(rng.integers(0, len(tokens) - n + 1))
        return tokens[start:start + n].astype(np.int64)
    return row


def span_copy(alphabet, lengths=(3, 10), prefix: int = 8) -> RowSource:
    """Rows that only induction predicts (``glassllm.lessons``' construction): a random
    prefix of up to ``prefix`` tokens, then a span of distinct tokens of the ``alphabet``,
    ``lengths[0]`` to ``lengths[1]`` long, repeated until the row ends. The prefix avoids the
    span's tokens, so every repeated token has one successor."""
    tokens = _alphabet(alphabet)
    low, high = _lengths(lengths, len(tokens) - 1)

    def row(rng: np.random.Generator, n: int) -> np.ndarray:
        length = int(rng.integers(low, high + 1))
        before = int(rng.integers(0, prefix + 1))
        shuffled = rng.permutation(tokens)
        span, others = shuffled[:length], shuffled[length:]
        repeats = -(-(n - before) // length)  # ceil
        return np.concatenate([rng.choice(others, size=before), np.tile(span, repeats)])[:n]
    return row


def twice(rows: RowSource, lengths=(4, 40), gap: int = 40) -> RowSource:
    """Rows of ``rows`` (e.g. English) in which a span of the row itself, ``lengths[0]`` to
    ``lengths[1]`` tokens long, is written again after a gap of 0 to ``gap`` tokens, at a
    random place: the second copy is predictable from the first, wherever they sit."""
    low, high = _lengths(lengths, 1 << 30)
    if isinstance(gap, bool) or not isinstance(gap, Integral) or gap < 0:
        raise ValueError(f"gap must be a whole number >= 0, got {gap!r}")

    def row(rng: np.random.Generator, n: int) -> np.ndarray:
        out = np.array(rows(rng, n), dtype=np.int64)
        length = min(int(rng.integers(low, high + 1)), n // 2)
        space = int(rng.integers(0, min(gap, n - 2 * length) + 1))
        start = int(rng.integers(0, n - 2 * length - space + 1))
        second = start + length + space
        out[second:second + length] = out[start:start + length]
        return out
    return row


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return int(value)


def random_twice(alphabet, lengths=(6, 30), gap: int = 20, prefix: int = 8) -> RowSource:
    """Rows of random spans written twice: a prefix of up to ``prefix`` random tokens, then,
    until the row is full, a span of ``lengths[0]`` to ``lengths[1]`` tokens drawn from the
    ``alphabet`` (repeats allowed only in a span longer than it), up to ``gap`` random
    tokens, and the span again. Only induction predicts a second copy."""
    tokens = _alphabet(alphabet)
    low, high = _lengths(lengths, 1 << 30)
    gap, prefix = _count("gap", gap), _count("prefix", prefix)

    def row(rng: np.random.Generator, n: int) -> np.ndarray:
        out = [rng.choice(tokens, size=int(rng.integers(0, prefix + 1)))]
        size = len(out[0])
        while size < n:
            length = int(rng.integers(low, high + 1))
            span = rng.choice(tokens, size=length, replace=length > len(tokens))
            between = rng.choice(tokens, size=int(rng.integers(0, gap + 1)))
            out += [span, between, span]
            size += 2 * length + len(between)
        return np.concatenate(out)[:n].astype(np.int64)
    return row


def repeated_spans(tokens, lengths=(8, 40), gap: int = 30, prefix: int = 20) -> RowSource:
    """Rows of a token stream's spans written twice: up to ``prefix`` tokens of a random
    window, then, until the row is full, a span of ``lengths[0]`` to ``lengths[1]`` tokens
    from a random place, up to ``gap`` tokens from another, and the span again."""
    tokens = np.asarray(tokens)
    low, high = _lengths(lengths, 1 << 30)
    gap, prefix = _count("gap", gap), _count("prefix", prefix)
    if len(tokens) < max(high, gap, prefix) + 1:
        raise ValueError(f"the text has {len(tokens):,} tokens, too few for spans of {high}")

    def take(rng: np.random.Generator, size: int) -> np.ndarray:
        start = int(rng.integers(0, len(tokens) - size + 1))
        return tokens[start:start + size]

    def row(rng: np.random.Generator, n: int) -> np.ndarray:
        out = [take(rng, int(rng.integers(0, prefix + 1)))]
        size = len(out[0])
        while size < n:
            span = take(rng, int(rng.integers(low, high + 1)))
            between = take(rng, int(rng.integers(0, gap + 1)))
            out += [span, between, span]
            size += 2 * len(span) + len(between)
        return np.concatenate(out)[:n].astype(np.int64)
    return row


def chains(alphabet, seed: int = 0) -> RowSource:
    """Permutation chains: ``x[i] = perm[x[i - 2]]`` for one fixed random permutation of the
    ``alphabet`` (drawn once from ``seed``), from two random first tokens. The next token
    depends on exactly the token two back, which rewards a previous-token head."""
    tokens = _alphabet(alphabet)
    perm = dict(zip(tokens.tolist(), np.random.default_rng([seed, 7]).permutation(tokens).tolist()))

    def row(rng: np.random.Generator, n: int) -> np.ndarray:
        out = [int(t) for t in rng.choice(tokens, size=2)]
        while len(out) < n:
            out.append(perm[out[-2]])
        return np.array(out[:n], dtype=np.int64)
    return row
