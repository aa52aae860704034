"""The shipped demo checkpoint meets the figures of issue 18, recomputed here from traced runs of
glassllm's own forward, its card says what the model really does, and its training record
(the step-0 weights and the snapshots) is the run's own."""

import importlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, decode, encode, probes
from glassllm.checkpoint import config_to_hf
from tests.conftest import require_or_skip

ROOT = Path(__file__).resolve().parents[2]
RECORD = DEMO_CHECKPOINT / "record"
EVERYDAY_PROMPTS = ["My name is", "Once upon a time", "It was raining"]


def load_script(name="train_demo"):
    """A module of scripts/ (``train_demo``, ``demo_corpus``), imported once."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def model():
    return GlassLM.from_pretrained(DEMO_CHECKPOINT)


@pytest.fixture(scope="module")
def initial():
    return GlassLM.from_pretrained(RECORD / "step-0")


@pytest.fixture(scope="module")
def card():
    return json.loads((DEMO_CHECKPOINT / "training.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def snapshots():
    return json.loads((RECORD / "snapshots.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def report(model):
    return probes.head_report(model)


def test_checkpoint_is_small_enough_for_a_browser(model, card):
    # targets: at most 2M parameters and 8 MB of weights; what the package ships outside
    # record/ stays under 4 MB, the record (only the site needs it) under 3 MB more
    files = sorted(p.name for p in DEMO_CHECKPOINT.iterdir())
    assert files == ["config.json", "heldout.txt", "heldout_grammar.txt", "model.safetensors",
                     "record", "training.json"]
    assert sorted(p.name for p in RECORD.iterdir()) == ["snapshots.json", "step-0"]
    parameters = sum(w.size for w in model.state_dict().values())
    assert parameters <= 2_000_000 and parameters == card["model"]["parameters"]
    assert (DEMO_CHECKPOINT / "model.safetensors").stat().st_size <= 8_000_000
    assert sum(p.stat().st_size for p in DEMO_CHECKPOINT.iterdir() if p.is_file()) <= 4_000_000
    assert sum(p.stat().st_size for p in RECORD.rglob("*") if p.is_file()) <= 3_000_000
    c = model.config
    assert (c.vocab_size, c.n_layers, c.n_kv_heads < c.n_heads) == (256, 2, True)


def test_heldout_english_is_at_least_50_ordinary_sentences():
    lines = (DEMO_CHECKPOINT / probes.HELDOUT_ENGLISH_FILE).read_text("ascii").splitlines()
    assert len(lines) >= 50 and all(line.strip() == line and line for line in lines)
    for line in lines:  # a sentence: capital first, full stop (or ? !) last, words between
        assert line[0].isupper() and line[-1] in ".?!" and len(line.split()) >= 4, line


def test_heldout_english_loss_at_most_1_5_nats_per_byte(model, initial, card):
    # target: held-out English <= 1.5 nats per byte (uniform guessing: ln 256 = 5.55)
    losses = probes.heldout_losses(model, DEMO_CHECKPOINT)
    assert set(losses) == {"english", "grammar"}
    assert losses["english"] <= 1.5
    assert card["final"]["heldout_loss"] == pytest.approx(losses["english"], rel=1e-4)
    # the grammar figure is its own, labelled one: far below, since training saw the grammar
    assert card["final"]["heldout_grammar_loss"] == pytest.approx(losses["grammar"], rel=1e-4)
    assert losses["grammar"] < losses["english"]
    before = probes.heldout_losses(initial, DEMO_CHECKPOINT)
    assert card["final"]["random_heldout_loss"] == pytest.approx(before["english"], rel=1e-4)
    assert before["english"] == pytest.approx(np.log(256), abs=0.1)  # std 0.02: near uniform


def test_layer_0_has_a_previous_token_head_of_at_least_0_6(report, card):
    # target: a previous-token head in layer 0, mean attention to position i-1 >= 0.6
    layer, head, score = report.best_previous_token(layer=0)
    assert score >= 0.6
    assert card["final"]["previous_token"] == {"layer": layer, "head": head,
                                               "score": pytest.approx(score, rel=1e-4)}


def test_last_layer_has_an_induction_head_of_at_least_0_5(model, report, card):
    # target: an induction head in the last layer, mean attention to the token after the
    # earlier occurrence >= 0.5 on a random string written twice
    layer, head, score = report.best_induction(layer=-1)
    assert layer == model.config.n_layers - 1 and score >= 0.5
    assert card["final"]["induction"] == {"layer": layer, "head": head,
                                          "score": pytest.approx(score, rel=1e-4)}


def test_second_copy_loss_at_most_half_the_first(report, card):
    # target: loss on the second copy <= half the loss on the first
    assert report.copy_ratio <= 0.5
    assert card["final"]["copy_loss_first"] == pytest.approx(report.copy_first, rel=1e-4)
    assert card["final"]["copy_loss_second"] == pytest.approx(report.copy_second, rel=1e-4)
    assert card["final"]["copy_ratio"] == pytest.approx(report.copy_ratio, rel=1e-4)


def test_greedy_continuations_are_the_cards(model, card):
    continuations = card["final"]["continuations"]
    assert set(EVERYDAY_PROMPTS) <= set(continuations) and "The cat sat" in continuations
    for prompt, text in continuations.items():
        n = len(encode(text))
        assert decode([s.token for s in model.generate(encode(prompt), n, greedy=True)]) == text


@pytest.fixture(scope="module")
def corpus_words():
    """Every word of the training corpus's English sources (fetched by scripts/demo_corpus)."""
    corpus = load_script("demo_corpus")
    try:
        texts, _ = corpus.load_texts()
    except corpus.SourceError as error:
        require_or_skip(False, f"the corpus sources cannot be had here: {error}",
                        "GLASSLLM_REQUIRE_REFERENCE")
    return texts, {w for text in texts.values()
                   for w in re.findall(rb"[a-z]+", text.lower())}


def test_greedy_continuations_of_everyday_prompts_read_as_english_words(card, corpus_words):
    # target: greedy continuations of "My name is", "Once upon a time", "It was raining" read
    # as English words: printable, and nearly every word one that the English sources use
    _, known = corpus_words
    for prompt in EVERYDAY_PROMPTS:
        text = card["final"]["continuations"][prompt]
        assert text.isascii() and text.replace("\n", " ").isprintable(), (prompt, text)
        words = re.findall(r"[A-Za-z]+", text)[:-1]  # the last may be cut off mid-word
        assert len(words) >= 4, (prompt, text)
        english = [w for w in words if w.lower().encode() in known]
        assert len(english) >= 0.8 * len(words), (prompt, text, set(words) - set(english))


def test_card_records_the_sources_it_was_trained_on(card, corpus_words):
    # the texts fetched now are byte for byte the ones training read (their sha256 and size)
    texts, _ = corpus_words
    sources = {s["name"]: s for s in card["corpus"]["sources"]}
    assert set(sources) == set(texts)
    for name, text in texts.items():
        assert sources[name]["bytes"] == len(text)
        assert sources[name]["sha256"] == load_script("demo_corpus").sha256(text)
        assert sources[name]["license"] and sources[name]["package"]
    assert set(card["corpus"]["mix"]) >= set(texts)
    assert sum(card["corpus"]["mix"].values()) == pytest.approx(1.0)
    assert sum(card["corpus"]["circuits_mix"].values()) == pytest.approx(1.0)


def test_heldout_sentences_share_no_long_word_run_with_the_corpus(card, corpus_words):
    # written apart from every source: no held-out sentence shares more than 5 words in a row
    # with the English sources (nor with the grammar, whose words are the script's own)
    texts, _ = corpus_words
    script = load_script()
    lines = (DEMO_CHECKPOINT / probes.HELDOUT_ENGLISH_FILE).read_text("ascii").splitlines()
    grammar = script.grammar_text(np.random.default_rng(12345), 200_000)
    n, run = script.longest_shared_word_run(lines, [*texts.values(), grammar])
    assert n <= 5, run
    assert card["corpus"]["heldout_longest_shared_word_run"]["words"] <= 5


def test_curve_records_training_and_ends_at_the_final_figures(card):
    curve = card["curve"]
    assert curve[0]["step"] == 0 and curve[-1]["step"] == card["training"]["steps"]
    assert [p["step"] for p in curve] == sorted(p["step"] for p in curve)
    assert curve[-1]["heldout_loss"] == pytest.approx(card["final"]["heldout_loss"], rel=1e-5)
    assert curve[-1]["induction"] == pytest.approx(card["final"]["induction"]["score"], rel=1e-5)
    assert curve[0]["induction"] < 0.2  # it was learned, not there from the start
    switch = card["training"]["switch_step"]
    assert [p["phase"] for p in curve] == ["circuits" if p["step"] <= switch else "english"
                                          for p in curve]


def test_step_0_weights_are_the_training_runs_initial_weights(model, initial, card):
    assert initial.config == model.config
    weights = initial.state_dict()
    matrices = [w for name, w in weights.items() if w.ndim == 2]
    assert np.std(np.concatenate([m.ravel() for m in matrices])) == pytest.approx(
        card["training"]["init_std"], rel=0.05)
    assert all(np.all(w == 1) for name, w in weights.items() if w.ndim == 1)  # RMSNorm gains
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as error:  # pragma: no cover - depends on the machine
        require_or_skip(False, f"torch is needed: {error}", "GLASSLLM_REQUIRE_REFERENCE")
    # the shipped checkpoint was trained in PyTorch by the script's earlier version, which
    # seeded torch and built transformers' Llama with initializer_range = init_std
    torch.manual_seed(card["training"]["seed"])
    twin = LlamaForCausalLM(LlamaConfig(**config_to_hf(model.config),
                                        initializer_range=card["training"]["init_std"],
                                        attn_implementation="sdpa")).state_dict()
    for name, w in weights.items():
        np.testing.assert_array_equal(w, twin[name].numpy(), err_msg=name)


def test_snapshots_show_the_heads_forming(model, card, snapshots):
    index = card["record"]
    steps = [s["step"] for s in snapshots["snapshots"]]
    assert steps == index["steps"] == [p["step"] for p in card["curve"]]
    assert snapshots["featured"] == index["featured"]
    featured = {"previous_token": card["final"]["previous_token"],
                "induction": card["final"]["induction"]}
    assert index["featured"] == featured
    # the rule: the first snapshot from which the head's score stays >= the target
    for kind, threshold in (("previous_token", 0.6), ("induction", 0.5)):
        head = featured[kind]
        series = [s[f"{kind}_scores"][head["layer"]][head["head"]] for s in snapshots["snapshots"]]
        formed = index["formed_at"][kind]
        assert formed is not None and formed > 0
        i = steps.index(formed)
        assert all(v >= threshold for v in series[i:]) and series[i - 1] < threshold
        assert series[0] < 0.2  # absent at step 0


def test_snapshot_attention_is_the_featured_heads_on_the_probe(model, snapshots, card):
    probe = snapshots["probe"]["tokens"]
    assert probe == probes.repeated_random_tokens(24, 0)
    final_attention = probes.attention_weights(model, probe)  # (L, H, n, n)
    for kind, head in snapshots["featured"].items():
        for s in snapshots["snapshots"]:
            a = np.array(s["attention"][kind])
            assert a.shape == (48, 48)
            np.testing.assert_allclose(a.sum(-1), 1.0, atol=0.03)  # rows, rounded to 3 places
            assert np.all(a[np.triu_indices(48, 1)] == 0)  # causal
        last = np.array(snapshots["snapshots"][-1]["attention"][kind])
        np.testing.assert_allclose(last, final_attention[head["layer"], head["head"]],
                                   atol=2e-3)


def test_logits_equal_hugging_face_loading_the_same_folder(model, initial):
    try:
        import torch
        from transformers import LlamaForCausalLM
    except ImportError as error:  # pragma: no cover - depends on the machine
        require_or_skip(False, f"torch and transformers are needed: {error}",
                        "GLASSLLM_REQUIRE_REFERENCE")
    tokens = encode("Once upon a time there was a cat.") + probes.repeated_random_tokens(24)
    for folder, glass in ((DEMO_CHECKPOINT, model), (RECORD / "step-0", initial)):
        twin = LlamaForCausalLM.from_pretrained(folder).eval()
        with torch.no_grad():
            expected = twin(torch.tensor([tokens])).logits[0].numpy()
        np.testing.assert_allclose(glass.forward(tokens), expected, atol=1e-4, rtol=0)
