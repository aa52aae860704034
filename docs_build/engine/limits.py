"""Where the copying circuit holds and where it fails, measured on the example model in the
engine's child (cached with the example run): the loss on a second copy against the first

- of random strings of several lengths (``COPY_LENGTHS``: the probe's kind of string, shorter
  and longer than the strings of the demo's copying data),
- of English sentences written twice (the held-out sentences short enough to fit twice, and
  their openings of at most ``ENGLISH_CUT`` bytes, as short as the strings it copies well),
- of made-up names met again in a short English story (``NAME_STORY``, one name per story).

Each result is JSON-ready: means in nats per byte, and the ratio second / first (near 0: the
model copies; near 1: the repeat does not help it). Runs in the child with the engine's
package on ``sys.path``; imports nothing of the build.
"""

from __future__ import annotations

import numpy as np

COPY_LENGTHS = (16, 24, 40, 50, 60)  # bytes of the random string written twice
COPY_SEEDS = 5  # strings per length
# A story that meets one made-up name four times: the name's bytes after its first byte are
# scored at its first occurrence and at the later ones.
NAME_STORY = ("{name} lived in a house by the river. One day {name} went to the town. "
              "The baker knew {name} and gave {name} some bread.")
NAME_SEEDS = 8
_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"


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
    """Random strings of each length written twice: the loss on each copy after its first
    byte (``probes.copy_losses``), averaged over ``COPY_SEEDS`` strings."""
    out = []
    for length in COPY_LENGTHS:
        if 2 * length > max_len:
            continue
        pairs = [probes.copy_losses(model, probes.repeated_random_tokens(length, seed), length)
                 for seed in range(COPY_SEEDS)]
        out.append({"length": length, "strings": COPY_SEEDS,
                    **_pair([p[0] for p in pairs], [p[1] for p in pairs])})
    return out


ENGLISH_CUT = 32  # bytes: the held-out sentences' openings, as long as well-copied strings


def _opening(sentence: str, cut: int) -> str:
    """The sentence's first words, at most ``cut`` bytes (whole words)."""
    words, out = sentence.split(), ""
    for w in words:
        longer = f"{out} {w}" if out else w
        if len(longer.encode()) > cut:
            break
        out = longer
    return out


def english_twice(model, heldout: bytes | None, max_len: int,
                  cut: int | None = None) -> dict | None:
    """Each held-out sentence (or, with ``cut``, its first words up to ``cut`` bytes) that
    fits twice (with a space between) in ``max_len``: the loss on its bytes after the first,
    in the first copy and in the second."""
    if not heldout:
        return None
    sentences = [line.strip() for line in heldout.decode("utf-8", "replace").splitlines()]
    if cut is not None:
        sentences = [_opening(s, cut) for s in sentences]
    sentences = [s for s in sentences
                 if len(s.encode()) >= 8 and 2 * len(s.encode()) + 1 <= max_len]
    first, second = [], []
    for s in sentences:
        b = list(s.encode())
        n = len(b)
        nll = _nll(model, b + [32] + b)  # nll[j] predicts byte j+1
        first.append(nll[0:n - 1].mean())
        second.append(nll[n + 1:2 * n].mean())
    if not sentences:
        return None
    return {"sentences": len(sentences), "bytes": int(np.mean([len(s.encode()) for s in sentences])),
            **_pair(first, second)}


def made_up_name(seed: int) -> str:
    """A pronounceable made-up name of three syllables, from ``seed``."""
    rng = np.random.default_rng(1000 + seed)
    return "".join(rng.choice(list(_CONSONANTS)) + rng.choice(list(_VOWELS))
                   for _ in range(3)).capitalize()


def names_met_again(model, max_len: int) -> dict | None:
    """``NAME_STORY`` with ``NAME_SEEDS`` made-up names: the loss on each occurrence's bytes
    after its first byte, at the first occurrence and at the later ones."""
    first, later, names = [], [], []
    for seed in range(NAME_SEEDS):
        name = made_up_name(seed)
        text = NAME_STORY.format(name=name).encode()
        if len(text) > max_len:
            return None
        nll = _nll(model, list(text))
        starts = [k for k in range(len(text)) if text.startswith(name.encode(), k)]
        spans = [nll[s:s + len(name) - 1].mean() for s in starts]  # predicts bytes s+1 ...
        first.append(spans[0])
        later.append(np.mean(spans[1:]))
        names.append(name)
    return {"names": names, "story": NAME_STORY, "occurrences": NAME_STORY.count("{name}"),
            **_pair(first, later)}


def measure_limits(model, probes, heldout: bytes | None) -> dict:
    max_len = model.config.max_len
    return {"copy": copy_by_length(model, probes, max_len),
            "english": english_twice(model, heldout, max_len),
            "english_short": english_twice(model, heldout, max_len, ENGLISH_CUT),
            "names": names_met_again(model, max_len)}


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
