"""Probes: what a model's heads do, measured from traced runs of glassllm's own forward.

The two standard tests of Olsson et al. (2022), "In-context learning and induction heads",
on a sequence of random distinct tokens written twice (``repeated_random_tokens``):

- a **previous-token head** puts its attention on position i-1;
- an **induction head**, on the second copy, attends to the token right after the current
  token's earlier occurrence (position i-length+1), and the model then predicts the second
  copy far better than the first.

Every score is read from the ``attn.softmax`` snapshots a ``Tracer`` records, so it is exactly
what the model computed. Everything is float32 except the final averages, which are Python
floats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import Sequence

import numpy as np

from ..model import GlassLM
from ..nn import log_softmax
from ..text.tokenizer import check_token_order
from ..trace import Tracer

# the printable ASCII bytes, space to tilde: a probe string reads as text on the site
PRINTABLE = np.arange(32, 127)
# a subword model's probe alphabet: the tokens that decode to a space and two or more
# lowercase letters (" the", " cat", " wh"), so a probe reads as a string of words and
# word pieces on the site, each token a chip of its own; random IDs over the whole
# vocabulary would show bytes, punctuation and fragments of words glued together
WORD_TOKEN = re.compile(r" [a-z]{2,}")

# held-out texts beside a checkpoint's weights (the demo's: glassllm/checkpoints/demo):
# ordinary English sentences written apart from the training corpus and never trained on,
# and, for the demo, its toy grammar drawn with a seed training never used
HELDOUT_ENGLISH_FILE = "heldout.txt"
HELDOUT_GRAMMAR_FILE = "heldout_grammar.txt"


def _check_int(name: str, value, low: int, high: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if value < low or (high is not None and value > high):
        bound = f"at least {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return int(value)


def _check_model(model) -> GlassLM:
    if not isinstance(model, GlassLM):
        raise ValueError(f"model must be a glassllm.GlassLM, got {type(model).__name__}")
    return model


def probe_alphabet(model) -> np.ndarray:
    """The tokens a probe of ``model`` is drawn from, in increasing ID order.

    - a byte model (its tokenizer reads bytes): ``PRINTABLE``, the printable ASCII bytes;
    - a subword model: its tokens that decode to ``WORD_TOKEN`` (a space, then two or more
      lowercase letters), so the probe reads as words on the site;
    - a model without a tokenizer (token IDs only): every token of its vocabulary.
    """
    model = _check_model(model)
    try:
        tokenizer = model.tokenizer
    except ValueError:  # token IDs only
        return np.arange(model.config.vocab_size)
    if getattr(tokenizer, "kind", None) == "bytes":
        return PRINTABLE
    words = [t for t in range(min(tokenizer.vocab_size, model.config.vocab_size))
             if WORD_TOKEN.fullmatch(tokenizer.decode([t]))]
    if len(words) < 2:
        raise ValueError(f"the model's tokenizer has {len(words)} tokens that decode to a "
                         f"space and lowercase letters; a probe needs at least 2")
    return np.asarray(words)


def repeated_random_tokens(length: int = 24, seed: int = 0, alphabet=None) -> list[int]:
    """``length`` distinct tokens of ``alphabet`` in random order, written twice (2*length
    tokens).

    ``alphabet`` defaults to ``PRINTABLE`` (the byte model's probe); give
    ``probe_alphabet(model)`` for any model. No token repeats inside one copy, so the only
    way to predict the second copy is to find the current token earlier in the sequence and
    copy what followed it.
    """
    alphabet = PRINTABLE if alphabet is None else _check_alphabet(alphabet)
    length = _check_int("length", length, 2, len(alphabet))
    seed = _check_int("seed", seed, 0)
    first = np.random.default_rng(seed).choice(alphabet, size=length, replace=False)
    return [int(t) for t in first] * 2


def _check_alphabet(alphabet) -> np.ndarray:
    values = np.asarray(alphabet)
    if values.ndim != 1 or values.size < 2 or not np.issubdtype(values.dtype, np.integer) \
            or values.min() < 0 or len(np.unique(values)) != values.size:
        raise ValueError(f"alphabet must be at least 2 distinct non-negative token IDs "
                         f"(e.g. probe_alphabet(model)), got {alphabet!r}")
    return values


def attention_weights(model: GlassLM, tokens: Sequence[int]) -> np.ndarray:
    """Every head's attention on ``tokens``: the traced ``attn.softmax``, shape (L, H, n, n)."""
    model = _check_model(model)
    trace = Tracer()
    model.forward(tokens, trace)
    return np.stack([trace.get("attn.softmax", layer=layer).value
                     for layer in range(model.config.n_layers)])  # (L, H, n, n)


def previous_token_scores(model: GlassLM, tokens: Sequence[int]) -> np.ndarray:
    """Mean attention weight from position i to i-1 over i >= 1, per head: shape (L, H)."""
    check_token_order(tokens, "tokens")
    if len(tokens) < 2:
        raise ValueError(f"previous_token_scores needs at least 2 tokens, got {len(tokens)}")
    weights = attention_weights(model, tokens)  # (L, H, n, n)
    i = np.arange(1, len(tokens))
    return weights[:, :, i, i - 1].mean(axis=-1)  # (L, H)


def _check_repeat(tokens: Sequence[int], length) -> int:
    length = _check_int("length", length, 2)
    check_token_order(tokens, "tokens")
    if len(tokens) != 2 * length:
        raise ValueError(f"tokens must be one copy of {length} tokens written twice "
                         f"({2 * length} tokens), got {len(tokens)}; "
                         f"see repeated_random_tokens(length)")
    if list(tokens[:length]) != list(tokens[length:]):
        raise ValueError("the second half of tokens must repeat the first; "
                         "see repeated_random_tokens(length)")
    return length


def induction_scores(model: GlassLM, tokens: Sequence[int], length: int) -> np.ndarray:
    """Mean attention from each second-copy position i >= length to i-length+1: (L, H).

    ``tokens`` is a sequence of ``length`` tokens written twice. Position i-length+1 holds
    the token that followed the current token's earlier occurrence: what to copy next.
    """
    length = _check_repeat(tokens, length)
    weights = attention_weights(model, tokens)  # (L, H, n, n)
    i = np.arange(length, 2 * length)
    return weights[:, :, i, i - length + 1].mean(axis=-1)  # (L, H)


def _next_token_nll(model: GlassLM, tokens: Sequence[int]) -> np.ndarray:
    """-log p(tokens[i+1] | tokens[:i+1]) for each i: shape (n-1,), float32."""
    model = _check_model(model)
    logits = model.forward(tokens[:-1])  # (n-1, V): the last token is only a target
    targets = np.asarray(tokens[1:], dtype=np.int64)
    return -log_softmax(logits)[np.arange(len(targets)), targets]  # (n-1,)


def copy_losses(model: GlassLM, tokens: Sequence[int], length: int) -> tuple[float, float]:
    """Mean next-token loss (nats) on the first copy and on the second copy.

    Each copy's first token is left out of its mean: nothing before it tells what it is, in
    either copy, so both means cover the ``length - 1`` tokens that follow a known one.
    """
    length = _check_repeat(tokens, length)
    nll = _next_token_nll(model, tokens)  # nll[j] is the loss of predicting tokens[j+1]
    first = nll[0:length - 1]             # targets 1 .. length-1
    second = nll[length:2 * length - 1]   # targets length+1 .. 2*length-1
    return float(first.mean()), float(second.mean())


def heldout_loss(model: GlassLM, text: bytes, window: int) -> float:
    """Mean next-token loss per byte of ``text`` (nats per byte), read in windows of
    ``window`` tokens: the summed loss of the tokens predicted over their UTF-8 bytes.

    The text is read with the model's tokenizer (``model.tokenizer``): for a byte model each
    byte is one token, so this is the mean next-byte loss. Consecutive windows overlap by one
    token so that every token but the first is predicted exactly once, from the tokens before
    it in its window.
    """
    model = _check_model(model)
    window = _check_int("window", window, 1, model.config.max_len)
    tokens, sizes = heldout_tokens(model, text)
    total, count = 0.0, 0
    for start in range(0, len(tokens) - 1, window):
        chunk = tokens[start:start + window + 1]  # window inputs, their window next tokens
        nll = _next_token_nll(model, chunk)
        total += float(nll.sum(dtype=np.float64))
        count += sum(sizes[start + 1:start + len(chunk)])
    return total / count


def heldout_tokens(model: GlassLM, text: bytes) -> tuple[list[int], list[int]]:
    """``text`` (bytes) as the model's tokens, and the number of bytes each token stands for.

    A byte model reads any bytes, one token each; a subword model reads UTF-8 text with its
    tokenizer (``ValueError`` for text that is not UTF-8, or a model without a tokenizer)."""
    if not isinstance(text, (bytes, bytearray)):
        raise ValueError(f"text must be bytes (e.g. str.encode('utf-8')), got "
                         f"{type(text).__name__}")
    tokenizer = model.tokenizer
    if getattr(tokenizer, "kind", None) == "bytes":
        tokens, sizes = list(text), [1] * len(text)
    else:
        try:
            tokens = tokenizer.encode(bytes(text).decode("utf-8"))
        except UnicodeDecodeError as err:
            raise ValueError(f"text is not UTF-8 (byte {err.start}); a model with subword "
                             f"tokens reads UTF-8 text") from None
        sizes = tokenizer.byte_lengths(tokens)
    if len(tokens) < 2:
        what = "bytes" if getattr(tokenizer, "kind", None) == "bytes" else "tokens"
        raise ValueError(f"text must hold at least 2 {what} to predict one, got {len(tokens)}")
    return tokens, sizes


def heldout_losses(model: GlassLM, folder) -> dict[str, float]:
    """Held-out loss (nats per byte) of each held-out text beside a checkpoint.

    ``folder`` is a checkpoint folder (``glassllm.DEMO_CHECKPOINT`` for the demo); the result
    has ``"english"`` for its ``heldout.txt`` and ``"grammar"`` for its
    ``heldout_grammar.txt``, for the files that exist. Each is ``heldout_loss`` read in windows
    of the model's ``max_len``, so each sentence is predicted from the sentences before it in
    its window. Uniform guessing scores ln 256 = 5.55.
    """
    model = _check_model(model)
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder; give a checkpoint folder such as "
                         f"glassllm.DEMO_CHECKPOINT")
    files = {"english": HELDOUT_ENGLISH_FILE, "grammar": HELDOUT_GRAMMAR_FILE}
    return {name: heldout_loss(model, (folder / file).read_bytes(), model.config.max_len)
            for name, file in files.items() if (folder / file).is_file()}


@dataclass(frozen=True)
class HeadReport:
    """Per-head scores and copy losses, averaged over several repeated random strings.

    ``previous_token`` and ``induction`` are (L, H) arrays; ``tokens`` is the first seed's
    probe sequence (the one to show beside a prompt's run); ``length`` is one copy's length.
    """

    previous_token: np.ndarray
    induction: np.ndarray
    copy_first: float
    copy_second: float
    tokens: list[int]
    length: int

    @property
    def copy_ratio(self) -> float:
        """Loss on the second copy over loss on the first: well below 1 when the model copies."""
        return self.copy_second / self.copy_first

    def best_previous_token(self, layer: int | None = 0) -> tuple[int, int, float]:
        """(layer, head, score) of the highest previous-token score.

        Searched in layer 0 by default, where a previous-token head must sit for a layer-1
        induction head to use it; ``layer=None`` searches all layers.
        """
        return _best(self.previous_token, layer)

    def best_induction(self, layer: int | None = -1) -> tuple[int, int, float]:
        """(layer, head, score) of the highest induction score.

        Searched in the last layer by default (layer 1 of a 2-layer model: an induction head
        needs a previous-token head before it); ``layer=None`` searches all layers.
        """
        return _best(self.induction, layer)


def _best(scores: np.ndarray, layer: int | None) -> tuple[int, int, float]:
    n_layers = scores.shape[0]
    if layer is None:
        layers = range(n_layers)
    else:
        if isinstance(layer, (bool, np.bool_)) or not isinstance(layer, Integral) \
                or not -n_layers <= layer < n_layers:
            raise ValueError(f"layer must be None or an integer in [{-n_layers}, "
                             f"{n_layers - 1}] for a model of {n_layers} layers, got {layer!r}")
        layers = [int(layer) % n_layers]
    best = max(((l, h) for l in layers for h in range(scores.shape[1])),
               key=lambda lh: scores[lh])
    return best[0], best[1], float(scores[best])


def head_report(model: GlassLM, length: int = 24, seeds: Sequence[int] = (0, 1, 2, 3),
                alphabet=None) -> HeadReport:
    """Previous-token and induction scores and copy losses, averaged over one probe per seed
    (``repeated_random_tokens(length, seed, alphabet)``; ``alphabet`` defaults to
    ``probe_alphabet(model)``: give another model's to probe two models on the same tokens,
    e.g. a trained model and its untrained weights)."""
    model = _check_model(model)
    alphabet = probe_alphabet(model) if alphabet is None else _check_alphabet(alphabet)
    if alphabet.max() >= model.config.vocab_size:
        raise ValueError(f"alphabet holds token {int(alphabet.max())}, outside the model's "
                         f"vocabulary of {model.config.vocab_size}")
    length = _check_int("length", length, 2, len(alphabet))
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds is empty; give at least one seed for a probe sequence")
    if 2 * length > model.config.max_len:
        raise ValueError(f"a probe of 2 * length = {2 * length} tokens exceeds the model's "
                         f"max_len ({model.config.max_len}); use length <= "
                         f"{model.config.max_len // 2}")
    probes = [repeated_random_tokens(length, seed, alphabet) for seed in seeds]
    previous = np.mean([previous_token_scores(model, t) for t in probes], axis=0)
    induction = np.mean([induction_scores(model, t, length) for t in probes], axis=0)
    losses = np.array([copy_losses(model, t, length) for t in probes])  # (seeds, 2)
    return HeadReport(previous_token=previous.astype(np.float32),
                      induction=induction.astype(np.float32),
                      copy_first=float(losses[:, 0].mean()), copy_second=float(losses[:, 1].mean()),
                      tokens=probes[0], length=length)
