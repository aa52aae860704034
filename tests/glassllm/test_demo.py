"""The shipped demo checkpoint meets the figures of issue 7, item 2, recomputed here from
traced runs of glassllm's own forward, and its card says what the model really does."""

import dataclasses
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, decode, encode, probes
from tests.conftest import require_or_skip

ROOT = Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("train_demo", ROOT / "scripts" / "train_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def model():
    return GlassLM.from_pretrained(DEMO_CHECKPOINT)


@pytest.fixture(scope="module")
def card():
    return json.loads((DEMO_CHECKPOINT / "training.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def heldout():
    return (DEMO_CHECKPOINT / "heldout.txt").read_bytes()


@pytest.fixture(scope="module")
def report(model):
    return probes.head_report(model)


def test_checkpoint_is_the_documented_small_model_within_one_megabyte(model):
    files = sorted(p.name for p in DEMO_CHECKPOINT.iterdir())
    assert files == ["config.json", "heldout.txt", "model.safetensors", "training.json"]
    assert sum(p.stat().st_size for p in DEMO_CHECKPOINT.iterdir()) <= 1_000_000
    c = model.config
    assert (c.vocab_size, c.n_layers, c.n_kv_heads < c.n_heads) == (256, 2, True)


def test_heldout_loss_at_most_1_6_nats_per_byte(model, card, heldout):
    # target: held-out loss <= 1.6 nats per byte (the random model: about 6)
    loss = probes.heldout_loss(model, heldout, model.config.max_len)
    assert loss <= 1.6
    assert card["final"]["heldout_loss"] == pytest.approx(loss, rel=1e-4)
    random_model = GlassLM(dataclasses.replace(model.config, seed=card["training"]["seed"]))
    random_loss = probes.heldout_loss(random_model, heldout, model.config.max_len)
    assert card["final"]["random_heldout_loss"] == pytest.approx(random_loss, rel=1e-4)
    assert random_loss > 5


def test_layer_0_has_a_previous_token_head_of_at_least_0_6(report, card):
    # target: a previous-token head in layer 0, mean attention to position i-1 >= 0.6
    layer, head, score = report.best_previous_token(layer=0)
    assert score >= 0.6
    assert card["final"]["previous_token"] == {"layer": layer, "head": head,
                                               "score": pytest.approx(score, rel=1e-4)}


def test_layer_1_has_an_induction_head_of_at_least_0_5(report, card):
    # target: an induction head in layer 1, mean attention to the token after the earlier
    # occurrence >= 0.5 on a random string written twice
    layer, head, score = report.best_induction(layer=1)
    assert score >= 0.5
    assert card["final"]["induction"] == {"layer": layer, "head": head,
                                          "score": pytest.approx(score, rel=1e-4)}


def test_second_copy_loss_at_most_half_the_first(report, card):
    # target: loss on the second copy <= half the loss on the first
    assert report.copy_ratio <= 0.5
    assert card["final"]["copy_loss_first"] == pytest.approx(report.copy_first, rel=1e-4)
    assert card["final"]["copy_loss_second"] == pytest.approx(report.copy_second, rel=1e-4)
    assert card["final"]["copy_ratio"] == pytest.approx(report.copy_ratio, rel=1e-4)


def test_greedy_continuations_are_readable_and_are_the_cards(model, card):
    # target: greedy continuations of the site's prompts are readable text (printable,
    # mostly real words)
    script = load_script()
    known = {w.lower() for words in (script.ANIMALS, script.THINGS, script.PLACES,
                                     script.ADJECTIVES, script.FEELINGS, script.FOODS,
                                     script.REAL_NAMES) for w in words}
    known |= {w.lower() for t in (*script.OPENINGS, *script.SENTENCES, *script.ENDINGS,
                                  *script.TIMES) for w in re.findall(r"[A-Za-z]+", t)}
    continuations = card["final"]["continuations"]
    assert "The cat sat" in continuations and len(continuations) >= 3
    for prompt, text in continuations.items():
        n = len(encode(text))
        assert decode([s.token for s in model.generate(encode(prompt), n, greedy=True)]) == text
        assert text.isascii() and text.replace("\n", " ").isprintable()  # stories end a line
        words = re.findall(r"[A-Za-z]+", text)[:-1]  # the last may be cut off mid-word
        assert len(words) >= 4
        assert sum(w.lower() in known for w in words) >= 0.8 * len(words), (prompt, text)


def test_curve_records_training_and_ends_at_the_final_figures(card):
    curve = card["curve"]
    assert curve[0]["step"] == 0 and curve[-1]["step"] == card["training"]["steps"]
    assert [p["step"] for p in curve] == sorted(p["step"] for p in curve)
    assert curve[-1]["heldout_loss"] == pytest.approx(card["final"]["heldout_loss"], rel=1e-5)
    assert curve[-1]["induction"] == pytest.approx(card["final"]["induction"]["score"], rel=1e-5)
    assert curve[0]["induction"] < 0.2  # it was learned, not there from the start


def test_logits_equal_hugging_face_loading_the_same_folder(model):
    try:
        import torch
        from transformers import LlamaForCausalLM
    except ImportError as error:  # pragma: no cover - depends on the machine
        require_or_skip(False, f"torch and transformers are needed: {error}",
                        "GLASSLLM_REQUIRE_REFERENCE")
    twin = LlamaForCausalLM.from_pretrained(DEMO_CHECKPOINT).eval()
    tokens = encode("Once upon a time there was a cat.") + probes.repeated_random_tokens(24)
    with torch.no_grad():
        expected = twin(torch.tensor([tokens])).logits[0].numpy()
    np.testing.assert_allclose(model.forward(tokens), expected, atol=1e-4, rtol=0)
