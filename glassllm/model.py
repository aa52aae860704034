"""GlassLM: a small Llama-style decoder whose every step can be recorded and edited.

Forward pass, one sequence of n tokens::

    embed -> [block] * L -> final_norm -> logits
    block: attn.norm -> q, k, v -> RoPE -> scores -> mask -> softmax -> context -> out
           -> attn.residual -> mlp.norm -> gate, up -> act -> down -> mlp.residual

Generation runs that pass on the prompt, then, with its KV cache, one pass per new token
that computes only the new position (see ``GlassLM.generate``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence, Sized
from dataclasses import dataclass
from itertools import islice
from numbers import Integral, Real
from typing import Iterator

import numpy as np

from ._heap import keep_freed_memory
from .text.bpe import ByteTokenizer, load_tokenizer
from .files.checkpoint import read_checkpoint, write_checkpoint
from .config import (Config, block_parameters, default_mlp_width, embedding_parameters,
                     parameter_count)
from .edits import Edits, edit, prepare
from .nn import (NOT_FINITE_LOGITS, BlockWeights, KVCache, Tensor, column_major,
                 cross_entropy, cross_entropy_and_backward, cross_entropy_backward,
                 embedding_backward, linear, linear_backward, rms_norm, rms_norm_backward,
                 rope_angles, softmax, softmax_backward, transformer_block,
                 transformer_block_backward)
from .text.tokenizer import UNORDERED, check_token_order
from .trace import Tracer, all_or_nothing, check_flag, record


@dataclass(frozen=True)
class GenerationStep:
    """One generated token, the distribution it was drawn from, and the step's own trace."""

    token: int
    probs: np.ndarray  # (V,)
    trace: Tracer | None


class GlassLM:
    """A Llama-style decoder in NumPy with deterministic random weights for ``config.seed``."""

    def __init__(self, config: Config) -> None:
        self._build(config, random=True)

    @classmethod
    def _to_be_loaded(cls, config: Config) -> "GlassLM":
        """A model of ``config`` whose weights are zeros, for ``from_pretrained`` to replace:
        no random draws, and no import of ``numpy.random`` (0.1-0.2 s of the site's start in
        WebAssembly)."""
        model = cls.__new__(cls)
        model._build(config, random=False)
        return model

    def _build(self, config: Config, random: bool) -> None:
        if not isinstance(config, Config):
            raise TypeError(f"GlassLM needs a glassllm.Config, got {type(config).__name__}")
        check_runnable(config)  # before any weight is allocated
        self.config = config
        c = config
        # a random model of the byte vocabulary reads bytes; any other needs token IDs
        self._tokenizer = ByteTokenizer() if c.vocab_size == 256 else None
        self._tokenizer_error = (None if self._tokenizer else
                                 f"this model's vocabulary has {c.vocab_size} tokens and no "
                                 f"tokenizer; give token IDs")
        rng = np.random.default_rng(c.seed) if random else None
        dh = c.head_dim

        def weight(out_features: int, in_features: int) -> Tensor:
            if rng is None:
                return np.zeros((out_features, in_features), dtype=np.float32)
            # variance 1/fan_in keeps activations near unit scale, so snapshots are readable
            std = 1.0 / np.sqrt(in_features)
            return (rng.standard_normal((out_features, in_features)) * std).astype(np.float32)

        ones = lambda: np.ones(c.d_model, dtype=np.float32)  # noqa: E731  (RMSNorm gains start at 1)
        self.embed_tokens: Tensor = (np.zeros((c.vocab_size, c.d_model), dtype=np.float32)
                                     if rng is None else
                                     rng.standard_normal((c.vocab_size, c.d_model)).astype(np.float32))
        self.layers: list[BlockWeights] = [
            BlockWeights(attn_norm=ones(), wq=weight(c.n_heads * dh, c.d_model),
                         wk=weight(c.n_kv_heads * dh, c.d_model),
                         wv=weight(c.n_kv_heads * dh, c.d_model),
                         wo=weight(c.d_model, c.n_heads * dh), mlp_norm=ones(),
                         w_gate=weight(c.d_ff, c.d_model), w_up=weight(c.d_ff, c.d_model),
                         w_down=weight(c.d_model, c.d_ff))
            for _ in range(c.n_layers)]
        self.norm: Tensor = ones()
        # tied: the output layer is the embedding matrix itself, as in LlamaForCausalLM
        self.lm_head: Tensor = (self.embed_tokens if c.tie_word_embeddings
                                else column_major(weight(c.vocab_size, c.d_model)))

    def __repr__(self) -> str:
        return f"GlassLM({self.config})"

    # -- parameters, under Hugging Face LlamaForCausalLM names ---------------------------

    _BLOCK_NAMES = {
        "input_layernorm.weight": "attn_norm", "self_attn.q_proj.weight": "wq",
        "self_attn.k_proj.weight": "wk", "self_attn.v_proj.weight": "wv",
        "self_attn.o_proj.weight": "wo", "post_attention_layernorm.weight": "mlp_norm",
        "mlp.gate_proj.weight": "w_gate", "mlp.up_proj.weight": "w_up",
        "mlp.down_proj.weight": "w_down",
    }

    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every parameter, named and shaped as in ``LlamaForCausalLM``.

        With tied embeddings there is no ``lm_head.weight``, as in Hugging Face's files.
        """
        return {name: value.copy() for name, value in self._parameters().items()}

    def _parameters(self) -> dict[str, Tensor]:
        state = {"model.embed_tokens.weight": self.embed_tokens}
        for i, block in enumerate(self.layers):
            for hf_name, attr in self._BLOCK_NAMES.items():
                state[f"model.layers.{i}.{hf_name}"] = getattr(block, attr)
        state["model.norm.weight"] = self.norm
        if not self.config.tie_word_embeddings:
            state["lm_head.weight"] = self.lm_head
        return state

    def load_state_dict(self, state: dict) -> None:
        """Replace every parameter; names and shapes must match ``state_dict()`` exactly."""
        expected = self._parameters()
        missing = sorted(set(expected) - set(state))
        unexpected = sorted(set(state) - set(expected))
        if missing or unexpected:
            raise ValueError(f"state dict does not match this Config: missing {missing}, "
                             f"unexpected {unexpected}")
        arrays = {}
        for name, ref in expected.items():
            array = np.array(state[name], dtype=np.float32)
            if array.shape != ref.shape:
                raise ValueError(f"{name} has shape {array.shape}, this Config needs {ref.shape}")
            if not np.isfinite(array).all():
                raise ValueError(f"{name} holds NaN or infinite values (after conversion to "
                                 f"float32); weights must be finite numbers")
            arrays[name] = array
        # all checked: only now replace, so a bad state dict changes nothing
        self.embed_tokens = arrays["model.embed_tokens.weight"]
        for i, block in enumerate(self.layers):
            for hf_name, attr in self._BLOCK_NAMES.items():
                setattr(block, attr, arrays[f"model.layers.{i}.{hf_name}"])
        self.norm = arrays["model.norm.weight"]
        self.lm_head = (column_major(arrays["lm_head.weight"]) if "lm_head.weight" in arrays
                        else self.embed_tokens)

    # -- checkpoints in Hugging Face's layout (glassllm/files/checkpoint.py) ----------------

    @classmethod
    def from_pretrained(cls, path) -> "GlassLM":
        """Load a local directory holding ``config.json`` and ``model.safetensors`` of a
        ``LlamaForCausalLM``; ``ValueError`` naming the key for what glassllm cannot run."""
        config, state = read_checkpoint(path)  # every check passed: nothing is half-loaded
        model = cls._to_be_loaded(config)
        model.load_state_dict(state)
        model._tokenizer, model._tokenizer_error = _folder_tokenizer(path, config)
        return model

    @property
    def tokenizer(self):
        """The model's tokenizer (``glassllm.load_tokenizer`` of its folder): ``encode``,
        ``decode``, ``strings``, ``vocab_size``. ``ValueError`` when it has none that glassllm
        reads (a vocabulary that is not bytes without ``tokenizer.json``, or a
        ``tokenizer.json`` it cannot reproduce): text is then never read as bytes."""
        if self._tokenizer is None:
            raise ValueError(self._tokenizer_error)
        return self._tokenizer

    def encode(self, text: str) -> list[int]:
        """``text`` as this model's token IDs (``self.tokenizer.encode``)."""
        return self.tokenizer.encode(text)

    def save_pretrained(self, path, dtype: str = "float32") -> None:
        """Write ``config.json`` and ``model.safetensors`` that ``transformers`` loads too.
        ``dtype="float16"`` stores the weights rounded to float16, half the bytes (the demo's
        are, for the site's download); they load as float32 again."""
        write_checkpoint(path, self.config, self._parameters(), dtype=dtype)

    # -- running -------------------------------------------------------------------------

    def forward(self, tokens: Sequence[int], trace: Tracer | None = None, *,
                edit=None) -> Tensor:
        """Next-token logits ``(n, V)`` for a sequence of token IDs.

        ``edit``: an ``Ablate`` or ``Patch`` of ``glassllm.edits``, or a list of them, applied
        in order where their steps are computed (the tracer records the edited values)."""
        _check_tracer(trace, self.config)
        ids = self._check_tokens(tokens, "tokens")
        edits = prepare(edit, self.config, "forward", len(ids))
        with all_or_nothing(trace):
            return self._forward(ids, trace, edits)[0]

    def _forward(self, ids: np.ndarray, trace: Tracer | None, edits: Edits | None = None,
                 cache: KVCache | None = None, keep: list | None = None) -> Tensor:
        """Logits ``(1, m, V)`` of the m tokens ``ids``; with a ``cache`` they follow the
        positions it holds, whose keys and values the attention reads, and join it.

        ``ids`` may also be a batch ``(b, m)`` (logits ``(b, m, V)``, no tracer). With
        ``keep`` (a list) the pass appends each block's ``BlockCache``, then the final
        stream and its norm ``(x, z)``: what ``_backward`` reads."""
        c = self.config
        start = 0 if cache is None else cache.length  # the position of ids[0]
        if edits is not None:
            edits = edits.at(start)
        x = self.embed_tokens[np.atleast_2d(ids)]  # @step embed  -> (1, m, d)
        x = edit(edits, "embed", x)
        record(trace, "embed", x)
        cos, sin = rope_angles(ids.shape[-1], c.head_dim, c.rope_theta, start)
        for layer, block in enumerate(self.layers):
            x = transformer_block(x, block, cos, sin, c.n_heads, c.n_kv_heads, c.norm_eps,
                                  trace, layer, edits, cache, keep)
        if cache is not None:
            cache.length += len(ids)
        z = rms_norm(x, self.norm, c.norm_eps)  # @step final_norm
        z = edit(edits, "final_norm", z)
        record(trace, "final_norm", z)
        logits = linear(z, self.lm_head)  # @step logits  -> (1, m, V)
        logits = edit(edits, "logits", logits)
        record(trace, "logits", logits)
        if keep is not None:
            keep.append((x, z))
        return logits

    def loss(self, tokens: Sequence[int], targets: Sequence[int],
             trace: Tracer | None = None, *, edit=None) -> float:
        """Mean cross-entropy of predicting ``targets[i]`` after ``tokens[:i+1]``.

        ``edit`` as in ``forward``; it may also edit ``loss`` and ``loss.grad``."""
        _check_tracer(trace, self.config)
        ids = self._check_tokens(tokens, "tokens")
        target_ids = self._check_tokens(targets, "targets")
        if len(target_ids) != len(ids):
            raise ValueError(f"targets has {len(target_ids)} tokens but tokens has {len(ids)}; "
                             f"give one target per position (usually tokens shifted by one)")
        edits = prepare(edit, self.config, "loss", len(ids))
        with all_or_nothing(trace):
            return self._loss(ids, target_ids, trace, edits)

    def _loss(self, ids: np.ndarray, target_ids: np.ndarray, trace: Tracer | None,
              edits: Edits | None) -> float:
        return self._cross_entropy(self._forward(ids, trace, edits)[0], target_ids, trace,
                                   edits)[0]

    def _cross_entropy(self, logits: Tensor, target_ids: np.ndarray, trace: Tracer | None,
                       edits: Edits | None) -> tuple[float, Tensor]:
        """The mean cross-entropy of the N rows of ``logits`` (N, V) predicting
        ``target_ids`` (N,), and its gradient ∂ℒ/∂ℓ (the ``loss.grad`` step)."""
        logits = check_finite_logits(logits)
        nll, probs = cross_entropy(logits, target_ids)  # (N,), (N, V)
        loss = nll.mean()  # @step loss
        loss = edit(edits, "loss", loss)
        record(trace, "loss", loss, batched=False)
        grad = cross_entropy_backward(probs, target_ids)  # @step loss.grad  -> (N, V)
        grad = edit(edits, "loss.grad", grad)
        record(trace, "loss.grad", grad, batched=False)
        return float(loss), grad

    def gradients(self, tokens, targets, *, trace: Tracer | None = None,
                  grad_trace: Tracer | None = None) -> tuple[float, dict[str, np.ndarray]]:
        """The mean cross-entropy of predicting ``targets`` and its gradient with respect to
        every parameter: ``(loss, grads)``, ``grads`` named and shaped as ``state_dict()``
        (float32; with tied embeddings the embedding's gradient sums its two uses).

        ``tokens`` and ``targets``: one sequence ``(n,)`` or a batch ``(b, n)`` of equal-length
        sequences; a batch's loss is the mean over all b·n predictions. The backward pass is
        written by hand in NumPy (``glassllm.nn``'s ``*_backward`` functions), and changes
        no weight.

        ``trace`` records the forward pass as ``loss`` does (18L + 5 records). ``grad_trace``
        receives, for each of those records, ∂loss/∂value with the same step ID, layer, head
        layout and shape, in the reverse order (the order backpropagation computes them):
        ``grad_trace.records[i]`` is the gradient of ``trace.records[-1 - i]``. So ∂loss/∂logits
        equals ``loss.grad``; ∂loss/∂loss = 1; ∂loss/∂(loss.grad) is 0, since the loss does
        not depend on it; ∂loss/∂(attn.mask) is 0 at the masked entries (constants −∞ that the
        softmax weighs exactly 0), as is ∂loss/∂(attn.scores) there. Both tracers record one
        sequence: either with a batch of more than one is a ``ValueError``.
        """
        for tracer in (trace, grad_trace):
            _check_tracer(tracer, self.config)
        ids = self._check_batch(tokens, "tokens")
        target_ids = self._check_batch(targets, "targets")
        if target_ids.shape != ids.shape:
            raise ValueError(f"targets has shape {target_ids.shape} but tokens has shape "
                             f"{ids.shape}; give one target per position (usually tokens "
                             f"shifted by one)")
        if len(ids) > 1 and (trace is not None or grad_trace is not None):
            raise ValueError(f"a Tracer records one sequence, but this batch has {len(ids)}; "
                             f"trace one sequence at a time (tokens of shape (n,) or (1, n))")
        if trace is not None and trace is grad_trace:
            raise ValueError("trace and grad_trace are the same Tracer; give two, one for the "
                             "values and one for their gradients")
        keep_freed_memory()  # a step frees ~100 MB that the next one needs (glassllm._heap)
        with all_or_nothing(trace), all_or_nothing(grad_trace):
            return self._gradients(ids, target_ids, trace, grad_trace)

    def _gradients(self, ids: np.ndarray, target_ids: np.ndarray, trace: Tracer | None,
                   grad_trace: Tracer | None) -> tuple[float, dict[str, np.ndarray]]:
        c = self.config
        b, n = ids.shape
        kept: list = []
        logits = self._forward(ids, trace, keep=kept)  # (b, n, V)
        x, z = kept.pop()  # the stream leaving the last block and its final norm, (b, n, d)
        if trace is None:  # the logits are not recorded: their buffer becomes the gradient
            # it refuses NaN or infinite logits as check_finite_logits does, in its own passes
            nll, grad = cross_entropy_and_backward(logits.reshape(b * n, -1), target_ids.reshape(-1))
            loss = float(nll.mean())
        else:
            loss, grad = self._cross_entropy(logits.reshape(b * n, -1), target_ids.reshape(-1),
                                             trace, None)
        # the backward pass, in the reverse order of the forward
        if grad_trace is not None:  # ℒ does not read loss.grad: its gradient is 0
            record(grad_trace, "loss.grad", np.zeros_like(grad), batched=False)
        record(grad_trace, "loss", np.float32(1), batched=False)  # ∂ℒ/∂ℒ
        dlogits = grad.reshape(b, n, -1)  # @grad loss.grad  (b, n, V): backpropagation starts here
        record(grad_trace, "logits", dlogits)
        dz, d_out = linear_backward(dlogits, z, self.lm_head)  # @grad logits
        record(grad_trace, "final_norm", dz)
        dx, d_norm = rms_norm_backward(dz, x, self.norm, c.norm_eps)  # @grad final_norm
        cos, sin = rope_angles(n, c.head_dim, c.rope_theta)
        block_grads = [{}] * c.n_layers
        for layer in reversed(range(c.n_layers)):
            dx, block_grads[layer] = transformer_block_backward(
                dx, self.layers[layer], kept[layer], cos, sin, c.n_kv_heads, c.norm_eps,
                grad_trace, layer)
        record(grad_trace, "embed", dx)
        # tied: the embedding matrix is also W_out, so its gradient starts as W_out's
        d_embed = d_out if c.tie_word_embeddings else np.zeros_like(self.embed_tokens)
        embedding_backward(d_embed, ids, dx)  # @grad embed
        return loss, self._named_gradients(d_embed, block_grads, d_norm, d_out)

    def _named_gradients(self, d_embed: Tensor, block_grads: list[dict], d_norm: Tensor,
                         d_out: Tensor) -> dict[str, np.ndarray]:
        """The gradients under ``state_dict()``'s names and shapes: the fused matrices'
        gradients come cut into the bands of their parts (row slices, views), as the
        backward functions of ``glassllm.nn`` give them."""
        grads = {"model.embed_tokens.weight": d_embed}
        for i, g in enumerate(block_grads):
            for hf_name, attr in self._BLOCK_NAMES.items():
                grads[f"model.layers.{i}.{hf_name}"] = g[attr]
        grads["model.norm.weight"] = d_norm
        if not self.config.tie_word_embeddings:
            grads["lm_head.weight"] = d_out
        return grads

    def generate(self, prompt: Sequence[int], n: int, greedy: bool = False,
                 temperature: float = 1.0, top_k: int | None = None, seed: int | None = None,
                 trace: bool = False, *, cache: bool = True,
                 edit=None) -> Iterator[GenerationStep]:
        """Yield ``n`` new tokens one at a time; reproducible for a given ``seed``.

        The first step runs the forward pass over the prompt. With ``cache=True`` (the
        default) it keeps each block's rotated keys and values (a ``KVCache`` of the
        ``len(prompt) + n - 1`` positions generation computes), and every later step computes
        only the new token's position, attending to all the cached ones; ``cache=False``
        runs the whole sequence again at every step. Both give the same tokens, with
        probabilities equal to float32 rounding.

        With ``trace=True`` every step carries a fresh ``Tracer`` holding its pass plus
        ``probs`` and ``sample``: the same 18L + 5 events either way. The first step's
        snapshots cover the n prompt positions, ``(n, d)``, ``(H, n, n)`` and so on; a cached
        step's cover the one new position at index p = n - 1 of the n tokens so far: every
        token axis has length 1, ``(1, d)``, ``(H, 1, d_h)``, ``(1, V)``, while the key axis
        of ``attn.scores``, ``attn.mask`` and ``attn.softmax`` has all n positions,
        ``(H, 1, n)``: one query row against every cached key. That row is the last
        position, which may see every key, so the causal mask masks nothing in it. The keys
        and values a cached step reads are the ``attn.k_rope`` and ``attn.v`` rows of the
        steps before it.

        ``edit`` as in ``forward``; it may also edit ``probs`` and ``sample``. Its positions
        count in the whole sequence; see ``glassllm.edits`` for what they mean with the cache.
        """
        greedy = check_flag("greedy", greedy)
        trace = check_flag("trace", trace, "; generate makes one Tracer per step and gives "
                                           "it as step.trace, so pass trace=True")
        cache = check_flag("cache", cache)
        ids = self._check_tokens(prompt, "prompt")
        if isinstance(n, bool) or not isinstance(n, Integral) or n < 0:
            raise ValueError(f"n (tokens to generate) must be a non-negative integer, got {n!r}")
        if len(ids) + n > self.config.max_len:
            raise ValueError(f"prompt ({len(ids)} tokens) + n ({n}) exceeds max_len "
                             f"({self.config.max_len}); shorten the prompt or generate fewer")
        if not greedy and (isinstance(temperature, bool) or not isinstance(temperature, Real)
                           or not 0 < temperature < math.inf):
            raise ValueError(f"temperature must be a positive finite number, got "
                             f"{temperature!r}; use greedy=True for the most likely token")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, Integral)
                                  or not 1 <= top_k <= self.config.vocab_size):
            raise ValueError(f"top_k must be None or an integer in [1, "
                             f"{self.config.vocab_size}], got {top_k!r}")
        if seed is not None and (isinstance(seed, (bool, np.bool_))
                                 or not isinstance(seed, Integral) or seed < 0):
            raise ValueError(f"seed must be None or a non-negative integer, got {seed!r}")
        # the positions the passes compute: the prompt, then every new token but the last
        positions = len(ids) + int(n) - 1
        edits = prepare(edit, self.config, "generation", max(positions, 0), cached=cache)
        return self._generate(ids, int(n), greedy, float(temperature),
                              None if top_k is None else int(top_k),
                              np.random.default_rng(None if seed is None else int(seed)), trace,
                              edits, cache)

    def _generate(self, ids: np.ndarray, n: int, greedy: bool, temperature: float,
                  top_k: int | None, rng: np.random.Generator, trace: bool,
                  edits: Edits | None = None, cache: bool = True) -> Iterator[GenerationStep]:
        c = self.config
        # room for the positions the steps compute: the prompt, then each new token but the last
        cache = KVCache(c.n_layers, c.n_kv_heads, len(ids) + n - 1, c.head_dim) if cache else None
        for _ in range(n):
            tracer = Tracer() if trace else None
            # with a cache only the positions it lacks: the prompt, then the newest token
            new = ids if cache is None else ids[cache.length:]
            logits = self._forward(new, tracer, edits, cache)[0, -1]  # (V,)
            probs = next_token_distribution(logits, 1.0 if greedy else temperature, top_k)  # @step probs
            if edits is not None:
                probs = check_distribution(edit(edits, "probs", probs))
            record(tracer, "probs", probs, batched=False)
            token = int(np.argmax(probs)) if greedy else sample_token(probs, rng)  # @step sample
            if edits is not None:
                token = int(edit(edits, "sample", np.array(token)))
            record(tracer, "sample", np.array(token), batched=False)
            ids = np.append(ids, token)
            yield GenerationStep(token=token, probs=probs, trace=tracer)

    def _check_batch(self, tokens, what: str) -> np.ndarray:
        """One sequence ``(n,)`` or a batch ``(b, n)`` of token IDs as an int64 ``(b, n)``
        array, each sequence checked as ``_check_tokens`` does."""
        check_token_order(tokens, what)
        if isinstance(tokens, np.ndarray):
            if tokens.ndim not in (1, 2):
                raise ValueError(f"{what} has shape {tokens.shape}; give one sequence (n,) or "
                                 f"a batch (b, n) of token IDs")
            array = np.atleast_2d(tokens)
            if (array.dtype.kind in "iu" and array.size and array.shape[1] <= self.config.max_len
                    and array.min() >= 0 and array.max() < self.config.vocab_size):
                return array.astype(np.int64)  # the usual case, checked at once
            rows = list(array)
        elif (isinstance(tokens, Sequence) and len(tokens)
              and isinstance(tokens[0], (Sequence, np.ndarray, *UNORDERED))
              and not isinstance(tokens[0], (str, bytes))):
            rows = list(tokens)
        else:
            return self._check_tokens(tokens, what)[None]
        if not rows:
            raise ValueError(f"{what} holds no sequence; give at least one")
        checked = []
        for i, row in enumerate(rows):
            checked.append(self._check_tokens(row, f"{what}[{i}]"))
            if len(checked[i]) != len(checked[0]):
                raise ValueError(f"{what}[{i}] has {len(checked[i])} tokens but {what}[0] has "
                                 f"{len(checked[0])}; the sequences of a batch must have one "
                                 f"length")
        return np.stack(checked)

    def _check_tokens(self, tokens, what: str) -> np.ndarray:
        check_token_order(tokens, what)
        if isinstance(tokens, (str, bytes)):
            raise ValueError(f"{what} must be a sequence of token IDs, not text; "
                             f"use model.encode(text) to turn text into the model's tokens")
        max_len, vocab = self.config.max_len, self.config.vocab_size
        try:
            # one token past max_len is enough to refuse: an endless iterator is not drained
            items = list(islice(tokens.tolist() if isinstance(tokens, np.ndarray) else tokens,
                                max_len + 1))
        except TypeError:
            raise ValueError(f"{what} must be a sequence of token IDs, got "
                             f"{type(tokens).__name__}") from None
        if not items:
            raise ValueError(f"{what} is empty; give at least one token")
        if len(items) > max_len:
            count = (f"{len(tokens)} tokens, more than" if isinstance(tokens, Sized)
                     else "more tokens than")
            raise ValueError(f"{what} has {count} max_len ({max_len}); "
                             f"shorten it or raise Config.max_len")
        for position, token in enumerate(items):
            if isinstance(token, (bool, np.bool_)) or not isinstance(token, Integral):
                raise ValueError(f"{what}[{position}] is {token!r} ({type(token).__name__}); "
                                 f"token IDs must be integers (glassllm.encode turns text into IDs)")
            # compared as Python ints, before any fixed-width array could overflow
            if not 0 <= int(token) < vocab:
                raise ValueError(f"{what} holds token {int(token)} at position {position}, "
                                 f"outside [0, {vocab}); token IDs must be below vocab_size")
        return np.array(items, dtype=np.int64)


def check_runnable(config: Config, memory: int | None = None) -> None:
    """Refuse a Config whose weights this machine's memory (or ``memory`` bytes) cannot
    hold, naming its biggest size, and one whose RoPE angles float32 cannot hold."""
    count = parameter_count(config)
    memory = physical_memory() if memory is None else memory
    if memory is not None and 4 * count > memory:
        c = config
        # the part that holds most of the weights, and in it the size that multiplies most
        if embedding_parameters(c) >= c.n_layers * block_parameters(c):
            name = "vocab_size" if c.vocab_size >= c.d_model else "d_model"
        else:
            sizes = {"n_layers": c.n_layers, "d_model": c.d_model, "d_ff": c.d_ff}
            name = max(sizes, key=sizes.get)
            if name == "d_ff" and c.d_ff == default_mlp_width(c.d_model):
                name = "d_model"  # d_ff follows d_model unless given
        raise ValueError(f"a GlassLM of this Config has {count:,} parameters, "
                         f"{4 * count / 1e9:,.4g} GB of float32 weights, more than this "
                         f"machine's {memory / 1e9:,.4g} GB of memory; lower Config.{name} "
                         f"({getattr(c, name):,})")
    with np.errstate(all="ignore"):  # the angles grow with the position: the last is largest
        last = rope_angles(1, config.head_dim, config.rope_theta, config.max_len - 1)
    if not all(np.isfinite(part).all() for part in last):
        raise ValueError(f"Config.rope_theta is {config.rope_theta!r}: so small a base makes "
                         f"RoPE's angles overflow float32 (position / rope_theta ** "
                         f"((head_dim - 2) / head_dim) for positions up to "
                         f"{config.max_len - 1}); raise Config.rope_theta")


def physical_memory() -> int | None:
    """This machine's memory in bytes, where the system says (None elsewhere)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _check_tracer(trace, config: Config) -> None:
    if trace is not None and not isinstance(trace, Tracer):
        raise ValueError(f"trace must be a glassllm.Tracer or None, got {trace!r}; pass "
                         f"trace=Tracer() and read its records afterwards")
    # a filter naming blocks or heads this model lacks would silently record nothing
    for asked, count, name, field in ((getattr(trace, "layers", None), config.n_layers,
                                       "layers", "n_layers"),
                                      (getattr(trace, "heads", None), config.n_heads,
                                       "heads", "n_heads")):
        if asked and max(asked) >= count:
            raise ValueError(f"the Tracer asks for {name} {sorted(asked)}, but this model has "
                             f"{count} {name} (0..{count - 1}, Config.{field})")


def check_finite_logits(logits: Tensor) -> Tensor:
    """Refuse NaN/inf logits: a softmax of them is NaN, and sampling from NaN is silent garbage.
    A NaN or inf makes the sum of squares NaN or inf (one BLAS dot product, cheaper than an
    array of flags); only then is every entry looked at, which also tells apart finite logits
    whose squares overflow."""
    flat = logits.ravel(order="K")  # no copy for a C- or Fortran-contiguous array
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.dot(flat, flat)):
            return logits
    bad = ~np.isfinite(logits)
    if bad.any():
        where = np.argwhere(bad)[0].tolist()
        # nn's message (the training step's fused loss raises it too), and where they are
        raise ValueError(f"{NOT_FINITE_LOGITS} ({int(bad.sum())} of them, the first at index "
                         f"{where})")
    return logits


def next_token_distribution(logits: Tensor, temperature: float, top_k: int | None) -> Tensor:
    """softmax(logits / T), keeping only the ``top_k`` largest logits when given.

    The max is subtracted before dividing by T, in float64, so every scaled logit is <= 0
    and none overflows: as T -> 0 this gives the limit, the one-hot of the argmax (tied
    maxima share it), instead of inf - inf = NaN.
    """
    logits = check_finite_logits(logits)
    if top_k is not None and top_k < logits.shape[-1]:
        cutoff = np.sort(logits)[-top_k]
        logits = np.where(logits < cutoff, np.float32(-np.inf), logits)
    wide = logits.astype(np.float64)
    with np.errstate(over="ignore"):  # a tiny T sends the logits below the max to -inf: p = 0
        scaled = (wide - wide.max()) / temperature  # (V,), all <= 0; the max is exactly 0
    return softmax(scaled).astype(np.float32)


def next_token_distribution_backward(probs: Tensor, dprobs: Tensor, temperature: float) -> Tensor:
    """∂L/∂ℓ from ∂L/∂p for p = softmax(top_k(ℓ) / T): the softmax's Jacobian-vector product,
    divided by T. A logit that top_k drops has p = 0, so it gets 0: the cut-off itself is
    piecewise constant in ℓ (it moves only where two logits tie). Generation never runs a
    backward pass; this is the rule the ``probs`` step's page states, computed."""
    dlogits = softmax_backward(dprobs, probs)  # @grad probs
    dlogits /= np.float32(temperature)
    return dlogits


def check_distribution(probs: Tensor) -> Tensor:
    """Refuse edited probabilities that nothing can be sampled from."""
    if not (np.isfinite(probs).all() and (probs >= 0).all() and probs.sum() > 0):
        raise ValueError("the edited probabilities are not a distribution (negative, not "
                         "finite, or all zero); an edit of 'probs' must leave some probability")
    return probs


def sample_backward(probs: Tensor) -> Tensor:
    """∂t_n/∂p for the ``sample`` step: zero. The sampled token is an integer, a discrete
    choice: for the same random draw a small change of p leaves it unchanged (except where
    the draw sits exactly on a boundary of the cumulative distribution, or greedy's maximum
    ties), so no gradient passes back through it. Training never samples: its loss reads
    the known next token. (REINFORCE or Gumbel-softmax learn through a sample by
    differentiating other functions, not this one.)"""
    return np.zeros_like(probs)  # @grad sample


def sample_token(probs: Tensor, rng: np.random.Generator) -> int:
    """Inverse-CDF sampling: stable for float32 probabilities that sum to 1 only roughly."""
    cdf = np.cumsum(probs, dtype=np.float64)
    index = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return min(index, len(probs) - 1)


def _folder_tokenizer(path, config: Config):
    """(tokenizer, None) for a checkpoint folder, or (None, why there is none)."""
    try:
        tokenizer = load_tokenizer(path)
    except ValueError as err:
        return None, f"the checkpoint's tokenizer cannot be used: {err}"
    if isinstance(tokenizer, ByteTokenizer) and config.vocab_size != tokenizer.vocab_size:
        return None, (f"{path} has no tokenizer.json and its vocabulary has "
                      f"{config.vocab_size} tokens, not the 256 bytes; add the model's "
                      f"tokenizer.json to the folder, or give token IDs")
    if tokenizer.vocab_size > config.vocab_size:
        return None, (f"{path}/tokenizer.json has {tokenizer.vocab_size} tokens but the model "
                      f"only {config.vocab_size}; give the folder the model's own tokenizer")
    return tokenizer, None
