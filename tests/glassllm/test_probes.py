"""glassllm.probes on models whose weights are built so that every score is known."""

import math

import numpy as np
import pytest

from glassllm import Config, GlassLM, probes
from glassllm.nn import rope_angles

LENGTH = 8


def config(**overrides):
    fields = dict(vocab_size=256, d_model=32, n_layers=2, n_heads=2, n_kv_heads=1,
                  max_len=2 * LENGTH, seed=3)
    fields.update(overrides)
    return Config(**fields)


def positional_model(offsets, scale=100.0):
    """Layer l's heads attend from i to exactly i - offsets[l] (or to 0 when i < offset).

    Every token has the same embedding and no block writes to the stream, so each layer
    sees the same vector at every position: the queries and keys differ only by RoPE.
    A key made from the query rotated by the angles of ``offset`` positions makes the score
    sum_p |q_p|^2 cos((offset - (i - j)) theta_p), largest exactly when i - j = offset.
    """
    c = config(n_layers=len(offsets))
    model = GlassLM(c)
    dh, d = c.head_dim, c.d_model
    state = model.state_dict()
    state["model.embed_tokens.weight"] = np.ones((c.vocab_size, d), np.float32)
    half = dh // 2
    query = np.full(dh, math.sqrt(scale * math.sqrt(dh) / half), np.float32)
    for layer, offset in enumerate(offsets):
        cos, sin = rope_angles(offset + 1, dh, c.rope_theta)
        key = query * cos[offset] + np.concatenate([-query[half:], query[:half]]) * sin[offset]
        # h = RMSNorm(ones) = ones, so W = column / d maps it to that column
        prefix = f"model.layers.{layer}."
        row = np.full((1, d), 1 / d, np.float32)
        state[prefix + "self_attn.q_proj.weight"] = np.tile(query, c.n_heads)[:, None] * row
        state[prefix + "self_attn.k_proj.weight"] = np.tile(key, c.n_kv_heads)[:, None] * row
        state[prefix + "self_attn.o_proj.weight"] = np.zeros((d, d), np.float32)
        state[prefix + "mlp.down_proj.weight"] = np.zeros((d, c.d_ff), np.float32)
    model.load_state_dict(state)
    return model


def uniform_model(**overrides):
    """Zero queries and keys: each position attends equally to itself and all before it;
    a zero head makes every next-token distribution uniform."""
    model = GlassLM(config(**overrides))
    state = model.state_dict()
    for name in state:
        if name.endswith(("q_proj.weight", "k_proj.weight")) or name == "lm_head.weight":
            state[name] = np.zeros_like(state[name])
    model.load_state_dict(state)
    return model


def test_repeated_random_tokens_are_distinct_printable_bytes_written_twice():
    tokens = probes.repeated_random_tokens(24, seed=5)
    assert len(tokens) == 48 and tokens[:24] == tokens[24:]
    assert len(set(tokens[:24])) == 24
    assert all(32 <= t <= 126 for t in tokens)
    assert tokens == probes.repeated_random_tokens(24, seed=5)
    assert tokens != probes.repeated_random_tokens(24, seed=6)


def test_previous_token_head_built_to_attend_one_back_scores_one():
    model = positional_model([1, LENGTH - 1])
    tokens = probes.repeated_random_tokens(LENGTH)
    previous = probes.previous_token_scores(model, tokens)
    assert previous.shape == (2, 2) and previous.dtype == np.float32
    np.testing.assert_array_less(0.99, previous[0])   # layer 0 looks one back
    # layer 1 looks length-1 back; from positions i >= length-1 it never looks one back
    weights = probes.attention_weights(model, tokens)
    np.testing.assert_array_less(weights[1, :, np.arange(LENGTH, 2 * LENGTH),
                                         np.arange(LENGTH - 1, 2 * LENGTH - 1)], 0.01)


def test_induction_head_built_to_attend_length_minus_one_back_scores_one():
    model = positional_model([1, LENGTH - 1])
    tokens = probes.repeated_random_tokens(LENGTH)
    induction = probes.induction_scores(model, tokens, LENGTH)
    np.testing.assert_array_less(0.99, induction[1])
    np.testing.assert_array_less(induction[0], 0.01)
    report = probes.head_report(model, length=LENGTH, seeds=(0, 1))
    assert report.best_previous_token()[:2] == (0, 0) and report.best_previous_token()[2] > 0.99
    assert report.best_induction()[0] == 1 and report.best_induction()[2] > 0.99
    assert report.best_induction(layer=None)[0] == 1
    assert report.tokens == probes.repeated_random_tokens(LENGTH, 0)


def test_uniform_attention_gives_the_exact_chance_scores():
    model = uniform_model()
    tokens = probes.repeated_random_tokens(LENGTH)
    n = 2 * LENGTH
    chance_previous = np.mean([1 / (i + 1) for i in range(1, n)])
    chance_induction = np.mean([1 / (i + 1) for i in range(LENGTH, n)])
    np.testing.assert_allclose(probes.previous_token_scores(model, tokens), chance_previous,
                               rtol=1e-5)
    np.testing.assert_allclose(probes.induction_scores(model, tokens, LENGTH), chance_induction,
                               rtol=1e-5)


def test_copy_and_heldout_losses_of_a_uniform_predictor_are_log_vocab():
    model = uniform_model()
    tokens = probes.repeated_random_tokens(LENGTH)
    first, second = probes.copy_losses(model, tokens, LENGTH)
    assert first == pytest.approx(math.log(256), rel=1e-5)
    assert second == pytest.approx(math.log(256), rel=1e-5)
    assert probes.heldout_loss(model, b"The cat sat on the mat.", 5) == pytest.approx(
        math.log(256), rel=1e-5)


def test_copy_losses_leave_out_each_copys_unpredictable_first_token():
    model = GlassLM(config())
    tokens = probes.repeated_random_tokens(LENGTH, seed=2)
    logits = model.forward(tokens[:-1])
    nll = [-(logits[i, tokens[i + 1]] - np.log(np.exp(logits[i]).sum()))
           for i in range(2 * LENGTH - 1)]
    first, second = probes.copy_losses(model, tokens, LENGTH)
    assert first == pytest.approx(np.mean(nll[:LENGTH - 1]), rel=1e-5)
    assert second == pytest.approx(np.mean(nll[LENGTH:]), rel=1e-5)


def test_heldout_loss_predicts_every_byte_but_the_first_once():
    model = GlassLM(config(max_len=16))
    text = b"Once upon a time there was a cat."  # 33 bytes: windows 16, 16, 0+1 tail
    data = list(text)
    expected = []
    for start in range(0, len(data) - 1, 16):
        chunk = data[start:start + 17]
        expected.append((model.loss(chunk[:-1], chunk[1:]), len(chunk) - 1))
    mean = sum(loss * count for loss, count in expected) / sum(c for _, c in expected)
    assert sum(c for _, c in expected) == len(data) - 1
    assert probes.heldout_loss(model, text, 16) == pytest.approx(mean, rel=1e-5)


def test_heldout_losses_read_each_heldout_text_beside_a_checkpoint(tmp_path):
    model = GlassLM(config(max_len=16))
    english, grammar = b"It was raining when we left school.\n", b"The cat sat on the mat.\n"
    (tmp_path / "heldout.txt").write_bytes(english)
    assert probes.heldout_losses(model, tmp_path) == {
        "english": pytest.approx(probes.heldout_loss(model, english, 16), rel=1e-6)}
    (tmp_path / "heldout_grammar.txt").write_bytes(grammar)
    assert probes.heldout_losses(model, tmp_path) == {
        "english": pytest.approx(probes.heldout_loss(model, english, 16), rel=1e-6),
        "grammar": pytest.approx(probes.heldout_loss(model, grammar, 16), rel=1e-6)}
    with pytest.raises(ValueError, match="is not a folder"):
        probes.heldout_losses(model, tmp_path / "heldout.txt")


def test_random_model_scores_near_chance():
    model = GlassLM(Config(vocab_size=256, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                           max_len=128, seed=0))
    report = probes.head_report(model)
    # uniform attention over 48 positions would give 0.075 and 0.029
    assert report.previous_token.max() < 0.3
    assert report.induction.max() < 0.15
    assert 0.8 < report.copy_ratio < 1.25
    assert report.copy_first > math.log(256) - 0.5  # no better than guessing among 256 bytes


def test_a_byte_model_s_probe_alphabet_is_the_printable_bytes():
    assert probes.probe_alphabet(GlassLM(config())).tolist() == list(range(32, 127))
    assert probes.head_report(GlassLM(config()), length=4).tokens == \
        probes.repeated_random_tokens(4, 0)


def test_a_model_without_a_tokenizer_draws_its_probe_from_its_whole_vocabulary():
    model = GlassLM(config(vocab_size=300))
    alphabet = probes.probe_alphabet(model)
    assert alphabet.tolist() == list(range(300))
    tokens = probes.repeated_random_tokens(LENGTH, 1, alphabet)
    assert tokens[:LENGTH] == tokens[LENGTH:] and len(set(tokens)) == LENGTH
    assert probes.head_report(model, length=4).tokens == probes.repeated_random_tokens(4, 0, alphabet)


def test_a_subword_model_s_probe_alphabet_is_its_word_tokens():
    """The demo's tokenizer: every token that decodes to a space and two or more lowercase
    letters, and no other, found here by decoding the whole vocabulary."""
    from glassllm import DEMO_CHECKPOINT, load_tokenizer

    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    tokenizer = load_tokenizer(DEMO_CHECKPOINT)
    words = [t for t in range(tokenizer.vocab_size) if (lambda text: text[:1] == " "
             and len(text) >= 3 and all("a" <= ch <= "z" for ch in text[1:]))(tokenizer.decode([t]))]
    assert probes.probe_alphabet(model).tolist() == words


def test_two_models_are_probed_on_the_same_tokens_with_one_alphabet():
    trained, other = GlassLM(config(vocab_size=300)), GlassLM(config(vocab_size=300, seed=9))
    alphabet = np.arange(100, 200)
    a = probes.head_report(trained, length=4, alphabet=alphabet)
    b = probes.head_report(other, length=4, alphabet=alphabet)
    assert a.tokens == b.tokens == probes.repeated_random_tokens(4, 0, alphabet)
    assert all(100 <= t < 200 for t in a.tokens)


@pytest.mark.parametrize("call, message", [
    (lambda m: probes.repeated_random_tokens(4, 0, [5, 5, 6]), "distinct"),
    (lambda m: probes.repeated_random_tokens(4, 0, [1]), "at least 2"),
    (lambda m: probes.repeated_random_tokens(4, 0, [1.5, 2.5]), "token IDs"),
    (lambda m: probes.repeated_random_tokens(4, 0, [1, 2, 3]), "length must be in"),
    (lambda m: probes.head_report(m, length=4, alphabet=[300, 301, 302, 303]), "outside"),
    (lambda m: probes.repeated_random_tokens(1), "length must be in"),
    (lambda m: probes.repeated_random_tokens(96), "length must be in"),
    (lambda m: probes.repeated_random_tokens(4.0), "length must be an integer"),
    (lambda m: probes.repeated_random_tokens(4, seed=-1), "seed must be at least 0"),
    (lambda m: probes.previous_token_scores(m, [5]), "at least 2 tokens"),
    (lambda m: probes.previous_token_scores("model", [5, 6]), "must be a glassllm.GlassLM"),
    (lambda m: probes.induction_scores(m, [1, 2, 3, 1, 2, 4], 3), "must repeat the first"),
    (lambda m: probes.induction_scores(m, [1, 2, 1, 2], 3), "written twice"),
    (lambda m: probes.copy_losses(m, [1, 2, 1, 2], True), "length must be an integer"),
    (lambda m: probes.heldout_loss(m, "text", 8), "text must be bytes"),
    (lambda m: probes.heldout_loss(m, b"a", 8), "at least 2 bytes"),
    (lambda m: probes.heldout_loss(m, b"abc", 17), "window must be in"),
    (lambda m: probes.head_report(m, length=9), "exceeds the model's max_len"),
    (lambda m: probes.head_report(m, length=4, seeds=()), "seeds is empty"),
    (lambda m: probes.head_report(m, length=4).best_induction(layer=2), "layer must be None"),
])
def test_bad_arguments_say_what_to_do(call, message):
    with pytest.raises(ValueError, match=message):
        call(GlassLM(config()))
