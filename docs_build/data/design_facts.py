"""Placeholders about the model's design, from its config: what each of Llama's choices costs or
saves in this model against GPT-2's (the comparison page, the lecture path, the model card).
``facts.py`` adds them to ``FACTS``; each is (meaning, compute(run, study))."""

from __future__ import annotations

import math


def default_mlp_width(d: int) -> int:
    """``glassllm.config``'s rule: 8/3 of d rounded up to a multiple of 8."""
    return 8 * math.ceil(8 * d / 3 / 8)


def _c(run):
    return run.config


def _norms(c) -> int:
    """RMSNorms of the model: two per block and the final one."""
    return 2 * c.n_layers + 1


def _attention_params(c) -> int:
    return c.d_model * c.head_dim * (2 * c.n_heads + 2 * c.n_kv_heads)


def params_total(c) -> int:
    """Every weight of the model: embeddings, output matrix unless tied, blocks, final norm."""
    block = 2 * c.d_model + _attention_params(c) + 3 * c.d_model * c.d_ff
    out = 0 if c.tie_word_embeddings else c.vocab_size * c.d_model
    return c.vocab_size * c.d_model + out + c.n_layers * block + c.d_model


DESIGN_FACTS = {
    "params_total": ("every weight of the model", lambda r, s: params_total(_c(r))),
    "embed_params": ("weights of the embedding matrix E (V·d)",
                     lambda r, s: _c(r).vocab_size * _c(r).d_model),
    "output_params": ("weights of W_out of its own (0 when tied to E)",
                      lambda r, s: 0 if _c(r).tie_word_embeddings
                      else _c(r).vocab_size * _c(r).d_model),
    "embed_share": ("share of the model's weights in E and W_out together (untied), or in E",
                    lambda r, s: (1 if _c(r).tie_word_embeddings else 2) * _c(r).vocab_size
                    * _c(r).d_model / params_total(_c(r))),
    "norm_count": ("RMSNorms in the model (two per block, one final)", lambda r, s: _norms(_c(r))),
    "layernorm_extra": ("weights LayerNorm's biases would add to this model's norms (d per norm)",
                        lambda r, s: _norms(_c(r)) * _c(r).d_model),
    "swiglu_params": ("weights of one SwiGLU MLP (3·d·f)",
                      lambda r, s: 3 * _c(r).d_model * _c(r).d_ff),
    "gelu_params": ("weights of one GPT-2 style MLP of width 4d (2·d·4d, no biases)",
                    lambda r, s: 8 * _c(r).d_model ** 2),
    "gelu_width": ("GPT-2's MLP width for this d (4d)", lambda r, s: 4 * _c(r).d_model),
    "mlp_ratio": ("f / d: the MLP's width against the stream's",
                  lambda r, s: _c(r).d_ff / _c(r).d_model),
    "rule_d_ff": ("8d/3 rounded up to a multiple of 8 (glassllm.config's default width)",
                  lambda r, s: default_mlp_width(_c(r).d_model)),
    "eight_thirds": ("8d/3 exactly", lambda r, s: 8 * _c(r).d_model / 3),
    "position_params": ("weights a learned position table would add (max_len·d)",
                        lambda r, s: _c(r).max_len * _c(r).d_model),
    "kv_params_saved": ("key and value weights grouped-query attention saves per block "
                        "against one key/value head per query head",
                        lambda r, s: 2 * (_c(r).n_heads - _c(r).n_kv_heads) * _c(r).head_dim
                        * _c(r).d_model),
    "kv_cache_per_token": ("numbers the KV cache holds per position, over all layers",
                           lambda r, s: 2 * _c(r).n_layers * _c(r).n_kv_heads * _c(r).head_dim),
    "mha_cache_per_token": ("the same with one key/value head per query head",
                            lambda r, s: 2 * _c(r).n_layers * _c(r).n_heads * _c(r).head_dim),
    "loss_text_bytes": ("bytes (= tokens) of the loss text",
                        lambda r, s: len(r.loss_tokens) + 1),
}
