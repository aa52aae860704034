"""Placeholders of the step texts, filled from the example run and the head study.

A text under ``docs/_texts/<lang>/steps/<id>.md`` (and the model card's prose) may write
``{{ name }}`` for any name of ``FACTS``; the build replaces it with this build's value, so a
text never states a number, head or token by hand. An unknown name, or a ``{{`` that is not a
placeholder, stops the build naming the file and the closest names.

Numbers are written as the value tables write them (``text.numbers.format_value``: 4 significant
digits), so a reader finds the same figure in the table below the text; they are plain
digits, safe inside ``$...$`` math. Text values (prompt, tokens, generated text) are
Markdown-escaped, so write them in running text, not inside code spans or math.

"The traced step" is the generation step whose forward pass the step pages show; "the loss
run" scores ``example.loss_text``; "the untrained model" ("before training") has the weights
the checkpoint's training started from (``GlassLM(Config(..., seed))`` for the seed and
``--init glass`` its ``report.json`` records), else the random weights of
``Config(seed=example.seed)`` in the example model's shape; "the
probe" is the random byte
string of ``probe_length`` bytes written twice that ``glassllm.probes`` scores heads on.
Every layer-wise figure without a layer in its name is a mean over all layers.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import DocsBuildError
from ..text.markdown import md_escape
from ..text.numbers import format_value
from .design_facts import DESIGN_FACTS

FACTS_HOME = "docs_build/data/facts.py (FACTS)"


@dataclass(frozen=True)
class Fact:
    meaning: str
    compute: Callable  # (ExampleRun, HeadStudy) -> int | float | Text | None (unavailable)


class Text(str):
    """A fact that is words, not a number: Markdown-escaped when filled in."""


# -- helpers over the run's snapshots ---------------------------------------------------------

def _values(run, step_id: str) -> list[np.ndarray]:
    """The snapshot of ``step_id`` per layer (one item for a model-level step)."""
    return [s.value for s in run.snapshots[step_id]]


def _row_rms(x: np.ndarray) -> float:
    """Mean over positions of each row's root mean square (the size RMSNorm divides by)."""
    x = np.asarray(x, dtype=np.float64)
    return float(np.sqrt((x ** 2).mean(axis=-1)).mean())


def _row_norm_ratio(added: np.ndarray, total: np.ndarray) -> float:
    """Mean over positions of |added| / |stream before the add| (``total = stream + added``)."""
    added, total = np.asarray(added, np.float64), np.asarray(total, np.float64)
    return float((np.linalg.norm(added, axis=-1) / np.linalg.norm(total - added, axis=-1)).mean())


def _rope_change(run) -> float:
    """Largest relative change of a query or key vector's length made by RoPE."""
    worst = 0.0
    for before, after in (("attn.q", "attn.q_rope"), ("attn.k", "attn.k_rope")):
        for x, y in zip(_values(run, before), _values(run, after)):
            nx = np.linalg.norm(np.asarray(x, np.float64), axis=-1)
            ny = np.linalg.norm(np.asarray(y, np.float64), axis=-1)
            worst = max(worst, float((np.abs(ny - nx) / np.maximum(nx, 1e-30)).max()))
    return worst


def _probs(run) -> np.ndarray:
    return np.asarray(run.traced.probs, dtype=np.float64)


def _ranked(run) -> list[int]:
    probs = _probs(run)
    return sorted(range(len(probs)), key=lambda t: (-probs[t], t))


def _last_logits(run) -> np.ndarray:
    return np.asarray(_values(run, "logits")[0][-1], dtype=np.float64)


def _position_losses(run) -> np.ndarray:
    """Next-byte loss at each position of the loss run (from its logits)."""
    logits = np.asarray([r.value for r in run.loss_trace.records if r.id == "logits"][0],
                        dtype=np.float64)
    logits = logits - logits.max(axis=-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return -logp[np.arange(len(run.loss_targets)), run.loss_targets]


def _prompt_previous_token_score(run, study) -> float:
    """The best previous-token head's mean attention from i to i-1 on the traced prompt."""
    weights = _prompt_weights(run, study.best_previous_token)
    n = weights.shape[0]
    return float(np.mean([weights[i, i - 1] for i in range(1, n)])) if n > 1 else math.nan


def _prompt_weights(run, best) -> np.ndarray:
    return _values(run, "attn.softmax")[best.layer][best.head]  # (n, n)


def _last_row_weight_on_previous(run, study) -> float:
    weights = _prompt_weights(run, study.best_previous_token)
    n = weights.shape[0]
    return float(weights[n - 1, n - 2]) if n > 1 else math.nan


def _induction_focus(run, study) -> int:
    """The key position the best induction head weighs most from the prompt's last token."""
    return int(np.argmax(_prompt_weights(run, study.best_induction)[-1]))


def _probe_targets(study, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(query rows, the key each should attend to) on the probe for a head kind."""
    n, length = 2 * study.length, study.length
    if kind == "prev":
        rows = np.arange(1, n)
        return rows, rows - 1
    rows = np.arange(length, n)
    return rows, rows - length + 1


def _argmax_rows(study, kind: str) -> int:
    """How many of the probe's rows (``_probe_targets``) have their largest (visible) score at
    the key the head's kind attends to: for the best head of that kind, in attn.mask (the
    masked scores). A count beside ``_scored_rows``, so a text says "47 of the 47 rows"."""
    best = study.best_previous_token if kind == "prev" else study.best_induction
    masked = study.probe_trace.get("attn.mask", layer=best.layer, head=best.head).value
    rows, keys = _probe_targets(study, kind)
    return int(np.sum(np.argmax(masked[rows], axis=-1) == keys))


def _scored_rows(study, kind: str) -> int:
    """How many rows of the probe ``_argmax_rows`` looks at."""
    return len(_probe_targets(study, kind)[0])


def _context_cosine(run, trace, report, kind: str, study) -> float:
    """Mean cosine similarity between the best head's context row i and the value row of the
    key its kind attends to: near 1 when the head copies that token's value."""
    layer, head, _ = report.best_previous_token() if kind == "prev" else report.best_induction()
    group = run.config.n_heads // run.config.n_kv_heads
    context = np.asarray(trace.get("attn.context", layer=layer, head=head).value, np.float64)
    value = np.asarray(trace.get("attn.v", layer=layer, head=head // group).value, np.float64)
    rows, keys = _probe_targets(study, kind)
    a, b = context[rows], value[keys]
    cos = (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-30)
    return float(cos.mean())


def _uniform_previous_token(study) -> float:
    """The previous-token score of a head that spreads its attention evenly over the past."""
    n = 2 * study.length
    return float(np.mean([1 / (i + 1) for i in range(1, n)]))


def _uniform_induction(study) -> float:
    n = 2 * study.length
    return float(np.mean([1 / (i + 1) for i in range(study.length, n)]))


def _best_untrained(study, kind: str) -> float:
    report = study.untrained
    return float((report.best_previous_token() if kind == "prev" else report.best_induction())[2])


def _untrained_embed_rms(run) -> float:
    return _row_rms(np.asarray(run.untrained_embed_tokens)[run.traced_tokens])


def _untrained_probs(run) -> np.ndarray:
    """The untrained model's next-token probabilities on the traced step's tokens."""
    return np.asarray(run.untrained_next_probs, dtype=np.float64)


def _logit_hits(run) -> int:
    """Rows i < n-1 of the traced step's logits whose largest entry is the token at i+1."""
    logits, tokens = _values(run, "logits")[0], run.traced_tokens
    return sum(int(np.argmax(logits[i])) == tokens[i + 1] for i in range(len(tokens) - 1))


def _heldout(attr: str):
    return lambda run, study: None if study.heldout is None else getattr(study.heldout, attr)


# -- the placeholders, by group (the one list: texts may use exactly these) -------------------

def _target_facts(name: str, likely: str, pick) -> dict[str, Fact]:
    """The byte of the loss text the model found least (argmax of the loss) or most likely."""
    position = lambda r: int(pick(_position_losses(r)))  # noqa: E731
    return {
        f"{name}_target": Fact(f"the byte of the loss text the model found {likely} likely",
                               lambda r, s: Text(r.labels(r.loss_targets[position(r)]))),
        f"{name}_target_loss": Fact("its loss",
                                    lambda r, s: float(_position_losses(r)[position(r)])),
        f"{name}_position": Fact("its position in the loss run (0 = first; the row of loss.grad)",
                                 lambda r, s: position(r)),
    }


FACTS: dict[str, Fact] = {
    # the model
    "model_name": Fact("example.model as mkdocs.yml gives it: demo, random or a path",
                       lambda r, s: Text(r.settings.model)),
    "d_model": Fact("width of the residual stream", lambda r, s: r.config.d_model),
    "n_layers": Fact("number of transformer blocks", lambda r, s: r.config.n_layers),
    "n_heads": Fact("query heads per block", lambda r, s: r.config.n_heads),
    "n_kv_heads": Fact("key/value heads per block", lambda r, s: r.config.n_kv_heads),
    "group_size": Fact("query heads sharing one key/value head",
                       lambda r, s: r.config.n_heads // r.config.n_kv_heads),
    "head_dim": Fact("width of one head", lambda r, s: r.config.head_dim),
    "d_ff": Fact("width of the MLP's hidden layer", lambda r, s: r.config.d_ff),
    "vocab_size": Fact("tokens in the vocabulary (the model's tokenizer's)", lambda r, s: r.config.vocab_size),
    "max_len": Fact("longest sequence the model reads", lambda r, s: r.config.max_len),
    # the generation the forward steps show
    "prompt": Fact("the example prompt", lambda r, s: Text(r.labels.text(r.prompt_tokens))),
    "prompt_len": Fact("tokens in the prompt", lambda r, s: len(r.prompt_tokens)),
    "traced_step": Fact("which generated token (1 = first) the forward steps' pages show",
                        lambda r, s: r.settings.traced_step + 1),
    "traced_len": Fact("tokens the traced step read (the rows of its tables)",
                       lambda r, s: len(r.traced_tokens)),
    "traced_text": Fact("the tokens the traced step read, as text (the prompt, then any tokens "
                        "generated before it)", lambda r, s: Text(r.labels.text(r.traced_tokens))),
    "generated_text": Fact("the tokens the example generated, as text",
                           lambda r, s: Text(r.labels.text(r.generated_tokens))),
    "chosen_token": Fact("the token the traced step chose (sample)",
                         lambda r, s: Text(r.labels(r.traced.token))),
    "chosen_token_id": Fact("its token ID", lambda r, s: r.traced.token),
    "chosen_prob": Fact("its probability (probs)",
                        lambda r, s: float(_probs(r)[r.traced.token])),
    "chosen_rank": Fact("its rank among all tokens by probability: how many are more likely "
                        "(0 = the most likely, as the logit lens counts)",
                        lambda r, s: _ranked(r).index(r.traced.token)),
    "top_token": Fact("the most likely next token at the traced step",
                      lambda r, s: Text(r.labels(_ranked(r)[0]))),
    "top_prob": Fact("its probability", lambda r, s: float(_probs(r)[_ranked(r)[0]])),
    "second_token": Fact("the second most likely token",
                         lambda r, s: Text(r.labels(_ranked(r)[1]))),
    "second_prob": Fact("its probability", lambda r, s: float(_probs(r)[_ranked(r)[1]])),
    "uniform_prob": Fact("the probability of every token under a uniform guess (1/V)",
                         lambda r, s: 1 / r.config.vocab_size),
    "probs_median": Fact("the median entry of the next-token distribution",
                         lambda r, s: float(np.median(_probs(r)))),
    "untrained_top_prob": Fact("the untrained model's largest next-token probability on the "
                               "same tokens", lambda r, s: float(_untrained_probs(r).max())),
    "probs_entropy": Fact("entropy of the next-token distribution, in nats",
                          lambda r, s: float(-sum(p * math.log(p) for p in _probs(r) if p > 0))),
    "top_logit": Fact("the largest logit at the last position of the traced step",
                      lambda r, s: float(_last_logits(r).max())),
    "logit_gap": Fact("the largest logit minus the second largest",
                      lambda r, s: float(np.diff(np.sort(_last_logits(r))[-2:])[0])),
    "logits_known": Fact("rows of the traced step's logits whose next token is in the "
                         "sequence (n - 1)", lambda r, s: len(r.traced_tokens) - 1),
    "logits_hits": Fact("of those rows, how many have their largest logit at that next token",
                        lambda r, s: _logit_hits(r)),
    # the loss run
    "loss_text": Fact("the text the loss run scores",
                      lambda r, s: Text(r.labels.text(r.loss_tokens + r.loss_targets[-1:]))),
    "loss_positions": Fact("positions the loss averages over", lambda r, s: len(r.loss_tokens)),
    "loss": Fact("the loss of the loss run, in nats per token", lambda r, s: r.loss),
    "loss_perplexity": Fact("exp(loss): how many bytes the model is as unsure as a uniform "
                            "choice among", lambda r, s: math.exp(r.loss)),
    "uniform_loss": Fact("the loss of a uniform guess, ln V", lambda r, s: math.log(r.config.vocab_size)),
    "untrained_loss": Fact("the untrained model's loss on the same text",
                           lambda r, s: s.untrained_loss),
    "target_prob_mean": Fact("mean probability the model gave the correct next byte",
                             lambda r, s: float(np.exp(-_position_losses(r)).mean())),
    **_target_facts("hardest", "least", np.argmax),
    **_target_facts("easiest", "most", np.argmin),
    # sizes along the residual stream (traced step)
    "embed_rms": Fact("mean row RMS of the embeddings", lambda r, s: _row_rms(_values(r, "embed")[0])),
    "untrained_embed_rms": Fact("the same before training (the initial weights)",
                                lambda r, s: _untrained_embed_rms(r)),
    "embed_growth": Fact("how many times larger training made the embedding rows (RMS ratio)",
                         lambda r, s: _row_rms(_values(r, "embed")[0]) / _untrained_embed_rms(r)),
    "untrained_norm_scale": Fact("the factor layer 0's RMSNorm multiplied the rows by before "
                                 "training (1 / their RMS)", lambda r, s: 1 / _untrained_embed_rms(r)),
    "attn_gain_min": Fact("the smallest entry of layer 0's attention RMSNorm gain",
                          lambda r, s: float(np.min(r.model.layers[0].attn_norm))),
    "attn_gain_max": Fact("the largest entry of layer 0's attention RMSNorm gain",
                          lambda r, s: float(np.max(r.model.layers[0].attn_norm))),
    "attn_norm_rms": Fact("mean row RMS after the first block's attention RMSNorm",
                          lambda r, s: _row_rms(_values(r, "attn.norm")[0])),
    "final_norm_input_rms": Fact("mean row RMS of the residual stream entering the final norm",
                                 lambda r, s: _row_rms(_values(r, "mlp.residual")[-1])),
    "final_norm_rms": Fact("mean row RMS after the final norm",
                           lambda r, s: _row_rms(_values(r, "final_norm")[0])),
    "rope_norm_change": Fact("largest relative change of a query/key length made by RoPE "
                             "(rotation keeps lengths: rounding only)", lambda r, s: _rope_change(r)),
    "masked_per_head": Fact("entries the causal mask hides in one head's square, n(n-1)/2",
                            lambda r, s: len(r.traced_tokens) * (len(r.traced_tokens) - 1) // 2),
    "masked_share": Fact("share of the attention square the causal mask hides",
                         lambda r, s: (len(r.traced_tokens) - 1) / (2 * len(r.traced_tokens))),
    "attn_out_ratio": Fact("attention output length / residual stream length, mean over "
                           "positions and layers", lambda r, s: float(np.mean([
                               _row_norm_ratio(o, t) for o, t in
                               zip(_values(r, "attn.out"), _values(r, "attn.residual"))]))),
    "mlp_out_ratio": Fact("MLP output length / residual stream length, mean over positions "
                          "and layers", lambda r, s: float(np.mean([
                              _row_norm_ratio(o, t) for o, t in
                              zip(_values(r, "mlp.down"), _values(r, "mlp.residual"))]))),
    "gate_negative_share": Fact("share of MLP gate pre-activations below zero (SiLU nearly "
                                "closes them)", lambda r, s: float(np.mean(
                                    [np.mean(g < 0) for g in _values(r, "mlp.gate")]))),
    # heads, scored on the probe by glassllm.probes (mean over its probe seeds)
    "probe_length": Fact("bytes of the probe's random string (the probe is twice as long)",
                         lambda r, s: s.length),
    "probe_text": Fact("the probe's random string (seed 0)",
                       lambda r, s: Text(r.labels.text(s.probe_tokens[:s.length]))),
    "prev_layer": Fact("layer of the best previous-token head", lambda r, s: s.best_previous_token.layer),
    "prev_head": Fact("that head's number", lambda r, s: s.best_previous_token.head),
    "prev_score": Fact("its previous-token score: mean attention from i to i-1",
                       lambda r, s: s.best_previous_token.score),
    "prev_prompt_score": Fact("the same head's mean attention from i to i-1 on the prompt",
                              _prompt_previous_token_score),
    "prev_last_weight": Fact("its attention weight from the prompt's last token to the one "
                             "before it", _last_row_weight_on_previous),
    "prev_argmax_rows": Fact("rows of the probe where that head's largest masked score is the "
                             "previous token's", lambda r, s: _argmax_rows(s, "prev")),
    "prev_scored_rows": Fact("rows of the probe that count (every row but the first)",
                             lambda r, s: _scored_rows(s, "prev")),
    "prev_context_cosine": Fact("cosine similarity of that head's context row i and value row "
                                "i-1 on the probe (1: an exact copy)",
                                lambda r, s: _context_cosine(r, s.probe_trace, s.report, "prev", s)),
    "untrained_prev_context_cosine": Fact(
        "the same for the untrained model's best previous-token head",
        lambda r, s: _context_cosine(r, s.untrained_probe_trace, s.untrained, "prev", s)),
    "untrained_prev_score": Fact("the untrained model's best previous-token score",
                                 lambda r, s: _best_untrained(s, "prev")),
    "uniform_prev_score": Fact("the previous-token score of a head attending evenly to the past",
                               lambda r, s: _uniform_previous_token(s)),
    "induction_layer": Fact("layer of the best induction head", lambda r, s: s.best_induction.layer),
    "induction_head": Fact("that head's number", lambda r, s: s.best_induction.head),
    "induction_score": Fact("its induction score: mean attention from the second copy to the "
                            "token after the earlier occurrence", lambda r, s: s.best_induction.score),
    "induction_offset": Fact("how far left of the diagonal the induction head's stripe runs "
                             "on the probe's second copy (probe_length - 1)",
                             lambda r, s: s.length - 1),
    "induction_argmax_rows": Fact("rows of the second copy where that head's largest masked "
                                  "score is at the token to copy",
                                  lambda r, s: _argmax_rows(s, "induction")),
    "induction_scored_rows": Fact("rows of the probe's second copy",
                                  lambda r, s: _scored_rows(s, "induction")),
    "induction_context_cosine": Fact(
        "cosine similarity of that head's context row i (second copy) and the value row of the "
        "token to copy", lambda r, s: _context_cosine(r, s.probe_trace, s.report, "induction", s)),
    "untrained_induction_context_cosine": Fact(
        "the same for the untrained model's best induction head",
        lambda r, s: _context_cosine(r, s.untrained_probe_trace, s.untrained, "induction", s)),
    "induction_focus_token": Fact("the prompt token the induction head weighs most from the "
                                  "prompt's last token", lambda r, s: Text(r.labels(
                                      r.traced_tokens[_induction_focus(r, s)]))),
    "induction_focus_position": Fact("its position (0 = first token)",
                                     lambda r, s: _induction_focus(r, s)),
    "induction_focus_weight": Fact("the weight it gets", lambda r, s: float(
        _prompt_weights(r, s.best_induction)[-1, _induction_focus(r, s)])),
    "untrained_induction_score": Fact("the untrained model's best induction score",
                                      lambda r, s: _best_untrained(s, "induction")),
    "uniform_induction_score": Fact("the induction score of a head attending evenly to the past",
                                    lambda r, s: _uniform_induction(s)),
    "copy_loss_first": Fact("mean loss on the probe's first copy (unpredictable bytes)",
                            lambda r, s: s.report.copy_first),
    "copy_loss_second": Fact("mean loss on its second copy (predictable by copying)",
                             lambda r, s: s.report.copy_second),
    "copy_ratio": Fact("second-copy loss / first-copy loss", lambda r, s: s.report.copy_ratio),
    "untrained_copy_ratio": Fact("the same ratio for the untrained model",
                                 lambda r, s: s.untrained.copy_ratio),
    # held-out text (heldout.txt of the checkpoint, else of the demo checkpoint)
    "heldout_loss": Fact("mean loss per byte on the held-out text", _heldout("loss")),
    "untrained_heldout_loss": Fact("the untrained model's loss on the same text",
                                   _heldout("untrained_loss")),
    "heldout_bytes": Fact("bytes of held-out text", _heldout("n_bytes")),
    # the design against GPT-2's, from the config (data/design_facts.py)
    **{name: Fact(meaning, compute) for name, (meaning, compute) in DESIGN_FACTS.items()},
}


class Figure(str):
    """A fact that is a number: its English text, and the value it was written from, so that
    ``fill`` writes it with another language's decimal mark."""

    value: np.floating

    def __new__(cls, value: np.floating) -> "Figure":
        figure = super().__new__(cls, format_value(value))
        figure.value = value
        return figure

    def written(self, decimal: str) -> str:
        return format_value(self.value, decimal)


def format_fact(value) -> str:
    """A fact's value as text inside Markdown (a number as a ``Figure``)."""
    if isinstance(value, Text):
        return md_escape(str(value))
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("a fact is a number or a Text, not a bool")
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return Figure(np.float32(value))


def compute_facts(run, study) -> dict[str, str | None]:
    """Every placeholder's text for this build; ``None`` where the build lacks the input."""
    out = {}
    for name, fact in FACTS.items():
        value = fact.compute(run, study)
        out[name] = None if value is None else format_fact(value)
    return out


_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def fill(text: str, facts: dict[str, str | None], where: str, decimal: str = ".") -> str:
    """``text`` with every ``{{ name }}`` replaced; ``where`` names the file for errors;
    ``decimal``: the text's language's decimal mark, for the facts that are numbers."""
    problems = []

    def replace(match: re.Match) -> str:
        name = match.group(1).strip()
        if not _NAME.fullmatch(name) or name not in facts:
            close = difflib.get_close_matches(name, facts, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            problems.append(f"unknown placeholder {{{{ {name} }}}}{hint}")
            return ""
        if facts[name] is None:
            problems.append(f"{{{{ {name} }}}} has no value in this build: "
                            f"{FACTS[name].meaning} needs input the build lacks (for held-out "
                            f"figures, a heldout.txt beside the checkpoint)")
            return ""
        value = facts[name]
        return value.written(decimal) if isinstance(value, Figure) else value

    filled = _PLACEHOLDER.sub(replace, text)
    if "{{" in _PLACEHOLDER.sub("", text):
        problems.append("a '{{' without a closing '}}'")
    if problems:
        raise DocsBuildError(f"{where}: {'; '.join(problems)}; the placeholders and their "
                             f"meaning are listed in {FACTS_HOME}")
    return filled
