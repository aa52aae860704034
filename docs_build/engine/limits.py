"""Where the copying circuit holds and where it fails, measured on the example model in the
engine's child (cached with the example run), in the model's own tokens: the loss on a
second copy against the first

- of random token sequences of several lengths (``COPY_LENGTHS``: the probe's kind of
  sequence, ``glassllm.probes.repeated_random_tokens`` over ``probe_alphabet(model)``),
- of English sentences written twice (the held-out sentences that fit twice, their
  openings of at most ``ENGLISH_CUT`` tokens, and two consecutive sentences joined: longer
  English),
- of made-up names met again in a short English story (``NAME_STORY``, one name per story;
  ``NAMES`` are no names the demo's training stories draw, nor its report's held-out ones),

and the featured story (``glassllm.circuits.FEATURED_STORY``): the probability of each of the
name's tokens at its first mention and when it is met again.

Each result is JSON-ready: means in nats per token, and the ratio second / first (near 0: the
model copies; near 1: the repeat does not help it). Runs in the child with the engine's
package on ``sys.path``; imports nothing of the build.
"""

from __future__ import annotations

import numpy as np

COPY_LENGTHS = (8, 16, 24, 32, 48, 64)  # tokens of the random sequence written twice
COPY_SEEDS = 5  # sequences per length
ENGLISH_CUT = 8  # tokens: the held-out sentences' openings
# A story that meets one made-up name four times, each time after a space: the name's
# tokens after its first are scored at its first mention and at the later ones.
NAME_STORY = ("Once a child called {name} lived in a house by the river. One day {name} went "
              "to the town. The baker knew {name} and gave {name} some bread.")
# made-up names with consonant clusters: none is one syllable of a consonant and a vowel
# after another, as the demo's training stories draw them, and none is a held-out name of
# its report (scripts/heldout/names.json) or the featured story's
NAMES = ("Thornquist", "Ostrander", "Grimsdottle", "Wendelbright", "Corvashton",
         "Pimbleroft", "Haskwerdane", "Trundlewick")


def _nll(model, tokens: list[int]) -> np.ndarray:
    """-log p(tokens[j+1] | tokens[:j+1]) for each j, float64: shape (n-1,)."""
    logits = np.asarray(model.forward(tokens[:-1]), dtype=np.float64)  # (n-1, V)
    logits -= logits.max(axis=-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return -logp[np.arange(len(tokens) - 1), tokens[1:]]


def _pair(first: list[float], second: list[float]) -> dict:
    a, b = float(np.mean(first)), float(np.mean(second))
    return {"first": a, "second": b, "ratio": b / a}


def copy_by_length(model, probes, max_len: int) -> list[dict]:
    """Random token sequences of each length written twice: the loss on each copy after its
    first token (``probes.copy_losses``), averaged over ``COPY_SEEDS`` sequences."""
    alphabet = probes.probe_alphabet(model)
    out = []
    for length in COPY_LENGTHS:
        if 2 * length > max_len or length > len(alphabet):
            continue
        pairs = [probes.copy_losses(model, probes.repeated_random_tokens(length, seed, alphabet),
                                    length)
                 for seed in range(COPY_SEEDS)]
        out.append({"length": length, "strings": COPY_SEEDS,
                    **_pair([p[0] for p in pairs], [p[1] for p in pairs])})
    return out


def english_twice(model, probes, heldout: bytes | None, max_len: int,
                  cut: int | None = None, pairs: bool = False) -> dict | None:
    """Each held-out sentence (or, with ``cut``, its first ``cut`` tokens; with ``pairs``,
    each two consecutive sentences joined by a space, a longer English text) that fits twice
    (with a newline between) in ``max_len``: the loss on its tokens after the first, in the
    first copy and in the second; and every head's scores there, as ``glassllm.probes``
    scores the probe: ``induction[l][r]``, the mean attention from a second-copy token to the
    token after its first occurrence (the copy target), ``previous_token[l][r]``, from each
    position to the one before."""
    if not heldout:
        return None
    tokenizer = model.tokenizer
    newline = tokenizer.encode("\n")
    lines = [line.strip() for line in heldout.decode("utf-8", "replace").splitlines()
             if line.strip()]
    if pairs:
        lines = [f"{a} {b}" for a, b in zip(lines[0::2], lines[1::2])]
    sentences = [tokenizer.encode(line) for line in lines]
    if cut is not None:
        sentences = [ids[:cut] for ids in sentences]
    sentences = [ids for ids in sentences
                 if len(ids) >= 4 and 2 * len(ids) + len(newline) <= max_len]
    first, second = [], []
    on_target, on_previous, targets, steps = 0.0, 0.0, 0, 0
    for ids in sentences:
        n, k = len(ids), len(newline)
        tokens = ids + newline + ids
        nll = _nll(model, tokens)  # nll[j] predicts token j+1
        first.append(nll[0:n - 1].mean())
        second.append(nll[n + k:2 * n + k - 1].mean())
        # every head's attention (L, H, N, N): from each second-copy token ids[j] to the
        # first copy's ids[j + 1] (the copy target), and from each position to the one before
        weights = np.asarray(probes.attention_weights(model, tokens), dtype=np.float64)
        query, key = n + k + np.arange(n - 1), np.arange(1, n)
        on_target = on_target + weights[:, :, query, key].sum(axis=-1)
        i = np.arange(1, len(tokens))
        on_previous = on_previous + weights[:, :, i, i - 1].sum(axis=-1)
        targets, steps = targets + n - 1, steps + len(i)
    if not sentences:
        return None
    return {"sentences": len(sentences), "tokens": int(round(np.mean([len(s) for s in sentences]))),
            **_pair(first, second),
            "induction": (on_target / targets).tolist(), "previous_token": (on_previous / steps).tolist()}


def _mentions(tokens: list[int], name_ids: list[int]) -> list[int]:
    n = len(name_ids)
    return [i for i in range(1, len(tokens) - n + 1) if tokens[i:i + n] == name_ids]


def names_met_again(model, max_len: int) -> dict | None:
    """``NAME_STORY`` with each of ``NAMES``: the loss on the name's tokens after its first,
    at its first mention and at the later ones (names of one token are left out: nothing of
    them is left to copy)."""
    tokenizer = model.tokenizer
    first, later, names, sizes = [], [], [], []
    for name in NAMES:
        text = NAME_STORY.format(name=name)
        tokens, name_ids = tokenizer.encode(text), tokenizer.encode(" " + name)
        starts = _mentions(tokens, name_ids)
        if len(tokens) > max_len or len(name_ids) < 2 or len(starts) < 2:
            continue
        nll = _nll(model, tokens)  # nll[j] predicts token j+1
        spans = [nll[s:s + len(name_ids) - 1].mean() for s in starts]  # tokens s+1 ...
        first.append(spans[0])
        later.append(np.mean(spans[1:]))
        names.append(name)
        sizes.append(len(name_ids))
    if not names:
        return None
    return {"names": names, "story": NAME_STORY, "occurrences": NAME_STORY.count("{name}"),
            "tokens": int(round(np.mean(sizes))), **_pair(first, later)}


def name_example(model, story: str, name: str) -> dict | None:
    """The featured story: each of the name's tokens (with its space) and the probability the
    model gives it at the name's first mention and at its last, where the story ends."""
    tokenizer = model.tokenizer
    tokens, name_ids = tokenizer.encode(story), tokenizer.encode(" " + name)
    starts = _mentions(tokens, name_ids)
    if len(tokens) > model.config.max_len or len(starts) < 2:
        return None
    nll = _nll(model, tokens)

    def probs(start: int) -> list[float]:
        return [float(np.exp(-nll[start - 1 + j])) for j in range(len(name_ids))]
    return {"story": story, "name": name, "name_tokens": list(map(int, name_ids)),
            "first": starts[0], "again": starts[-1],
            "p_first": probs(starts[0]), "p_again": probs(starts[-1])}


def measure_limits(model, probes, heldout: bytes | None, story: str | None = None,
                   name: str | None = None) -> dict:
    """Every figure of this module for ``model`` (``probes``: ``glassllm.probes``), the
    featured ``story`` and its ``name`` included when given."""
    max_len = model.config.max_len
    return {"copy": copy_by_length(model, probes, max_len),
            "english": english_twice(model, probes, heldout, max_len),
            "english_short": english_twice(model, probes, heldout, max_len, ENGLISH_CUT),
            "english_long": english_twice(model, probes, heldout, max_len, pairs=True),
            "names": names_met_again(model, max_len),
            "name_example": None if story is None else name_example(model, story, name)}


def _direct_parts(model, Tracer, ids: list[int], token: int, edit=None) -> dict:
    """The logit of ``token`` at the last position and each MLP's direct part of it (its
    output through the final norm, with the run's own scale, and W_out's row), with ``edit``
    applied (an ``Ablate`` of ``glassllm.edits``) or without."""
    c = model.config
    trace = Tracer(steps=("mlp.down", "mlp.residual", "logits"))
    model.forward(ids, trace, edit=edit)
    last = np.asarray(trace.get("mlp.residual", layer=c.n_layers - 1).value[-1], np.float64)
    readout = (np.asarray(model.norm, np.float64) * np.asarray(model.lm_head[token], np.float64)
               / np.sqrt(np.mean(last ** 2) + c.norm_eps))
    mlps = [float(np.asarray(trace.get("mlp.down", layer=layer).value[-1], np.float64) @ readout)
            for layer in range(c.n_layers)]
    return {"logit": float(trace.get("logits").value[-1][token]), "mlps": mlps}


def direct_and_indirect(model, Tracer, Ablate, ids: list[int], token: int, layer: int,
                        head: int) -> dict:
    """What zeroing one head (its context at ``attn.context``) does to the logit of ``token``
    and to each MLP's direct part of it: a head that drives a later MLP shows its effect
    there, indirectly, not in its own direct part."""
    clean = _direct_parts(model, Tracer, ids, token)
    ablated = _direct_parts(model, Tracer, ids, token, Ablate("attn.context", layer=layer,
                                                               head=head))
    return {"layer": layer, "head": head, "token": token, "clean": clean, "ablated": ablated}
