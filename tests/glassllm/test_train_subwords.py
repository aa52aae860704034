"""Training with a tokenizer.json and with a batch source (glassllm.train, glassllm.batches),
and scripts/train_demo.py's report: the checkpoint knows its tokenizer, transformers reads
the folder with the same IDs and logits, a resume with another tokenizer or other batches is
refused, a batch source resumes to the same bits, and the report's numbers equal a
computation by hand from the forward logits."""

import importlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from glassllm import GlassLM, probes
from glassllm.__main__ import _blas_threads, main
from glassllm.batches import (Mix, TokenizerFile, chains, read_tokenizer, span_copy, text_rows,
                              text_tokens, twice)
from glassllm.bpe import BPETokenizer
from glassllm.train import STATE_NAME, TrainOptions, train
from tests.conftest import require_or_skip
from tests.glassllm.test_load_tokenizer import tiny_spec
from tests.glassllm.test_train import assert_same_bits, weights

ROOT = Path(__file__).resolve().parents[2]
TEXT = ("The cat sat on the mat. The dog sat on the log. Then the cat saw the dog. " * 12
        + "A fox ran to the box; a hen ran to the pen, and then they sat.\n" * 8)
TINY = TrainOptions(d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, context=24, steps=10,
                    batch_size=3, warmup=2, snapshot_every=4, tie_word_embeddings=True)
TINY_ARGS = ["--d-model", "32", "--layers", "2", "--heads", "4", "--kv-heads", "2",
             "--context", "24", "--steps", "10", "--batch", "3", "--warmup", "2",
             "--snapshot-every", "4", "--tie"]


def handmade_tokenizer(folder: Path, merges) -> Path:
    """A byte-level BPE tokenizer.json written by hand: the 256 byte characters, then one
    token per merge, in Hugging Face's format (no tokenizers package needed), in a folder."""
    spec = tiny_spec(merges)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    return folder / "tokenizer.json"


MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("a", "t"), ("Ġ", "s"), ("Ġs", "at"),
          ("Ġ", "c"), ("Ġc", "at"), ("o", "g"), ("Ġ", "d"), ("Ġd", "og"), ("T", "he")]


@pytest.fixture
def tok(tmp_path) -> TokenizerFile:
    return read_tokenizer(handmade_tokenizer(tmp_path / "tok", MERGES))


@pytest.fixture
def text_file(tmp_path) -> Path:
    path = tmp_path / "text.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


class Stop(Exception):
    pass


def stop_at(step):
    def progress(p):
        if p.step == step:
            raise Stop
    return progress


# -- a tokenizer --------------------------------------------------------------------------------

def test_a_run_with_a_tokenizer_gives_a_folder_that_reads_text_as_it_was_trained(tok, tmp_path):
    tokens = text_tokens(TEXT.encode(), tok)
    assert tokens.dtype == np.int32 and tokens.tolist() == tok.tokenizer.encode(TEXT)
    assert len(tokens) < len(TEXT) * 0.7  # the merges apply
    run = train(tokens, tmp_path / "m", TINY, tokenizer=tok.path.parent)
    model = GlassLM.from_pretrained(tmp_path / "m")
    assert model.config.vocab_size == tok.vocab_size == 256 + len(MERGES)
    assert isinstance(model.tokenizer, BPETokenizer)
    text = "The cat sat on the log."
    assert model.encode(text) == tok.tokenizer.encode(text)
    assert (tmp_path / "m" / "tokenizer.json").read_bytes() == tok.text
    assert run.model.encode(" the dog") == tok.tokenizer.encode(" the dog")
    state = json.loads((tmp_path / "m" / STATE_NAME).read_text())
    assert state["tokenizer"]["sha256"] == tok.sha256
    assert state["options"]["vocab_size"] == tok.vocab_size


def test_a_vocab_size_that_is_not_the_tokenizers_is_refused(tok, tmp_path):
    tokens = text_tokens(TEXT.encode(), tok)
    with pytest.raises(ValueError, match="vocab_size is 300 but the model's vocabulary is that "
                                         "of .*268 tokens; leave vocab_size out"):
        train(tokens, tmp_path / "m", replace(TINY, vocab_size=300), tokenizer=tok)
    with pytest.raises(ValueError, match="byte tokens"):
        train(text_tokens(TEXT.encode()), tmp_path / "m", replace(TINY, vocab_size=300))
    with pytest.raises(ValueError, match="tokens hold IDs outside"):
        train(tokens, tmp_path / "m", TINY)  # subword IDs are not bytes
    assert not (tmp_path / "m").exists()


def test_a_resume_with_another_tokenizer_or_none_is_refused(tok, tmp_path):
    tokens = text_tokens(TEXT.encode(), tok)
    with pytest.raises(Stop):
        train(tokens, tmp_path / "m", TINY, tokenizer=tok, on_progress=stop_at(5))
    other = read_tokenizer(handmade_tokenizer(tmp_path / "other", MERGES[:-1] + [("o", "x")]))
    with pytest.raises(ValueError, match=r"holds a run trained with another tokenizer \(sha256 "
                                         rf"{tok.sha256}, 268 tokens\) than .*other"):
        train(text_tokens(TEXT.encode(), other), tmp_path / "m", TINY, tokenizer=other)
    with pytest.raises(ValueError, match="holds a run trained with a tokenizer"):
        train(text_tokens(TEXT.encode()), tmp_path / "m", TINY)
    straight = train(tokens, tmp_path / "straight", TINY, tokenizer=tok)
    resumed = train(tokens, tmp_path / "m", TINY, tokenizer=tok)
    assert resumed.resumed_from == 4 and resumed.losses == straight.losses
    assert_same_bits(weights(tmp_path / "m"), weights(tmp_path / "straight"))


def test_the_command_line_trains_with_a_tokenizer_and_refuses_another(tok, text_file, tmp_path,
                                                                      capsys):
    out = tmp_path / "m"
    # a run of the same options, stopped after its step-4 snapshot, at the command line's one
    # BLAS thread (--threads 1): OpenBLAS's sums can round differently with two threads (seen on
    # an AMD EPYC), and a run resumes to the same bits at the same thread count
    with pytest.raises(Stop), _blas_threads(1):
        train(text_tokens(TEXT.encode(), tok), out, TINY, tokenizer=tok.path.parent,
              sources=[str(text_file)], on_progress=stop_at(6))
    capsys.readouterr()
    other = handmade_tokenizer(tmp_path / "other", MERGES[:-1] + [("o", "x")])
    for extra, message in (
            (["--tokenizer", str(other)], "holds a run trained with another tokenizer"),
            ([], "holds a run trained with a tokenizer"),
            (["--tokenizer", str(tok.path), "--vocab-size", "300"],
             "--vocab-size is 300 but the model's vocabulary is that of")):
        with pytest.raises(SystemExit) as stop:
            main(["train", str(text_file), "--out", str(out), *TINY_ARGS, *extra])
        assert stop.value.code == 2
        assert message in capsys.readouterr().err
    # --resume takes the run's own tokenizer, from the folder
    assert main(["train", "--resume", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "resuming" in err and "tokens of" in err and "bytes per token" in err
    straight = tmp_path / "straight"
    assert main(["train", str(text_file), "--out", str(straight), "--tokenizer", str(tok.path),
                 *TINY_ARGS]) == 0
    assert "read" in capsys.readouterr().err
    assert_same_bits(weights(out), weights(straight))
    assert GlassLM.from_pretrained(straight).tokenizer.encode("The cat") == \
        tok.tokenizer.encode("The cat")


# -- a batch source -----------------------------------------------------------------------------

def mix(tokens, batch_size=3, length=25) -> Mix:
    alphabet = np.arange(40, 60)
    return Mix([(3, {"copy": 1.0}), (4, {"copy": 0.3, "chains": 0.2, "text": 0.3,
                                         "twice": 0.2})],
               {"copy": span_copy(alphabet, (3, 6), 4), "chains": chains(alphabet, 3),
                "text": text_rows(tokens), "twice": twice(text_rows(tokens), (3, 8), 5)},
               batch_size=batch_size, length=length)


def test_a_batch_source_is_deterministic_and_resumes_to_the_same_bits(tmp_path):
    tokens = text_tokens(TEXT.encode())
    a = [mix(tokens)(s, rng) for rng in [np.random.default_rng(5)] for s in range(10)]
    b = [mix(tokens)(s, rng) for rng in [np.random.default_rng(5)] for s in range(10)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    recipe = {"phases": "copy then all"}
    straight = train(None, tmp_path / "straight", TINY, batches=mix(tokens), batches_id=recipe)
    with pytest.raises(Stop):
        train(None, tmp_path / "m", TINY, batches=mix(tokens), batches_id=recipe,
              on_progress=stop_at(7))
    with pytest.raises(ValueError, match="holds a run trained on other batches"):
        train(None, tmp_path / "m", TINY, batches=mix(tokens), batches_id={"phases": "other"})
    resumed = train(None, tmp_path / "m", TINY, batches=mix(tokens), batches_id=recipe)
    assert resumed.resumed_from == 4 and resumed.losses == straight.losses
    assert_same_bits(weights(tmp_path / "m"), weights(tmp_path / "straight"))
    other = train(None, tmp_path / "seed", replace(TINY, seed=1), batches=mix(tokens),
                  batches_id=recipe)
    assert other.losses != straight.losses


def test_a_batch_source_that_misbehaves_is_named(tmp_path):
    with pytest.raises(ValueError, match="give batches_id with batches="):
        train(None, tmp_path / "a", TINY, batches=lambda step, rng: None)
    with pytest.raises(ValueError, match=r"rows of step 0 have shape \(2, 25\); the run needs "
                                         r"\(batch_size, context \+ 1\) = \(3, 25\)"):
        train(None, tmp_path / "b", TINY, batches=lambda step, rng: np.zeros((2, 25), int),
              batches_id="x")
    with pytest.raises(ValueError, match=r"hold token 256, outside the vocabulary \[0, 256\)"):
        train(None, tmp_path / "c", TINY, batches=lambda step, rng: np.full((3, 25), 256),
              batches_id="x")
    with pytest.raises(ValueError, match="phase 1 names \\['nope'\\], which are not sources"):
        Mix([(2, {"a": 1}), (2, {"nope": 1})], {"a": text_rows(np.arange(99))}, batch_size=1,
            length=5)
    with pytest.raises(ValueError, match="phase 0's weights are all 0"):
        Mix([(2, {"a": 0})], {"a": text_rows(np.arange(99))}, batch_size=1, length=5)


def test_the_row_sources_make_what_they_say():
    rng = np.random.default_rng(0)
    alphabet = np.arange(100, 130)
    copy = span_copy(alphabet, (3, 10), 8)
    for _ in range(20):
        row = copy(rng, 40)
        assert set(row.tolist()) <= set(alphabet.tolist())
        # a span of distinct tokens repeated to the end, after a prefix without its tokens
        period = next(p for p in range(3, 11) if np.array_equal(row[-p:], row[-2 * p:-p]))
        span = row[-period:]
        assert len(set(span.tolist())) == period
        start = next(i for i in range(len(row)) if set(row[i:].tolist()) <= set(span.tolist()))
        assert start <= 8 and all(np.array_equal(row[i:i + period], row[start:start + period])
                                  for i in range(start, len(row) - period + 1, period))
    chain = chains(alphabet, 1)(rng, 30)
    perm = {}
    for x, y in zip(chain[:-2], chain[2:]):
        assert perm.setdefault(int(x), int(y)) == y
    base = np.arange(1000, 1050)
    doubled = twice(lambda r, n: base[:n].copy(), (5, 5), 3)
    for _ in range(10):
        row = doubled(rng, 50)
        changed = np.flatnonzero(row != base)
        source = row[changed[0]:changed[0] + 5] if len(changed) else None
        assert len(changed) == 5 and source is not None
        assert any(np.array_equal(base[i:i + 5], source) for i in range(0, changed[0] - 4))


# -- the report of scripts/train_demo.py ------------------------------------------------

@pytest.fixture(scope="module")
def demo_script():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        yield importlib.import_module("train_demo")
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def nll_by_hand(model: GlassLM, tokens: list[int]) -> np.ndarray:
    logits = model.forward(tokens[:-1]).astype(np.float64)
    top = logits.max(axis=1, keepdims=True)
    log_z = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
    return log_z - logits[np.arange(len(tokens) - 1), tokens[1:]]


def test_the_reports_numbers_equal_a_computation_by_hand(demo_script, tok, tmp_path):
    train(text_tokens(TEXT.encode(), tok), tmp_path / "m",
          replace(TINY, steps=30, lr=1e-2, context=64), tokenizer=tok)
    model = GlassLM.from_pretrained(tmp_path / "m")
    english = ["The cat sat on the mat.", "A hen ran to the log."]
    stories = [{"name": "Zorblat", "story": "Once a dog met Zorblat at the pen. Then Zorblat sat."}]
    report = demo_script.measure(model, english, stories, tmp_path / "m")
    t = tok.tokenizer
    # English written twice: sentence, newline, sentence; each copy's tokens after its first
    first, second, attention = [], [], []
    for line in english:
        a, nl = t.encode(line), t.encode("\n")
        seq = a + nl + a
        assert t.encode(line + "\n" + line) == seq
        nll = nll_by_hand(model, seq)
        m = len(a)
        first += [nll[i - 1] for i in range(1, m)]               # predicting a[1:], copy one
        second += [nll[m + 1 + i - 1] for i in range(1, m)]      # ... copy two
        weights = probes.attention_weights(model, seq[:-1])      # (L, H, n, n)
        attention += [weights[1, :, m + 1 + j, j + 1] for j in range(m - 1)]
    got = report["english_twice"]
    assert got["ratio"] == pytest.approx(np.mean(second) / np.mean(first), rel=1e-5)
    scores = np.mean(attention, axis=0)
    assert got["induction"]["head"] == int(np.argmax(scores))
    assert got["induction"]["score"] == pytest.approx(scores.max(), abs=1e-6)
    # the name: its tokens after the first, at the first mention and at the second
    tokens, name = t.encode(stories[0]["story"]), t.encode(" Zorblat")
    starts = [i for i in range(len(tokens)) if tokens[i:i + len(name)] == name]
    assert len(starts) == 2
    nll = nll_by_hand(model, tokens)
    at = [np.mean([nll[s + k - 1] for k in range(1, len(name))]) for s in starts]
    assert report["names"]["ratio"] == pytest.approx(at[1] / at[0], rel=1e-5)
    # held-out English in nats per byte: summed token loss over the bytes predicted
    text = "\n".join(english)
    ids = t.encode(text)
    assert len(ids) <= model.config.max_len + 1  # one window
    predicted_bytes = len(text.encode()) - len(t.decode(ids[:1]).encode())
    expected = nll_by_hand(model, ids).sum() / predicted_bytes
    assert report["heldout_english_nats_per_byte"] == pytest.approx(expected, rel=1e-5)
    assert report["parameters"] == sum(v.size for v in model.state_dict().values())
    assert report["weights_bytes"] == (tmp_path / "m" / "model.safetensors").stat().st_size
    marks = demo_script.criteria(report)
    assert marks["parameters <= 2,000,000"]["met"]
    assert not marks["held-out English <= 1.25 nats/byte"]["met"]  # 30 steps learn little


def test_the_heldout_texts_are_fit_to_measure_with(demo_script):
    english, stories = demo_script.read_heldout()
    assert len(english) >= 30 and len(stories) >= 12
    rng = np.random.default_rng(0)
    drawn = {demo_script.made_up_name(rng) for _ in range(2000)}
    for item in stories:
        assert item["story"].count(" " + item["name"]) >= 2, item["name"]
        assert not item["story"].startswith(item["name"])
        assert item["name"] not in drawn
    # no held-out name can be drawn by the training stories: check_heldout's rule holds
    demo_script.check_heldout(english, stories, [b"An unrelated corpus line."])
    assert "Tamiro" not in "".join(s["story"] for s in stories)


def test_the_everyday_recipe_file_is_the_default_ending_in_everyday_sentences(demo_script):
    # the shipped run E1 read it: --phases scripts/heldout/phases_everyday.json
    phases = demo_script.read_phases(str(demo_script.HELDOUT / "phases_everyday.json"))
    assert phases == demo_script.DEFAULT_PHASES
    assert demo_script.corpus_names(phases) == ["ding_sentences", "harvard_sentences"]
    assert phases[-1]["mix"]["corpus('ding_sentences')"] == 40


def test_repeat_reads_a_source_k_times_and_says_so(demo_script):
    streams = {"examples": b"A dog ran.\nIt rained.\n", "austen": b"Emma smiled."}
    table = [{"name": "examples", "bytes": 22}, {"name": "austen", "bytes": 12}]
    more, rows = demo_script.repeated(streams, table, ["examples=3"])
    assert more == {"examples": b"A dog ran.\nIt rained.\n" * 3, "austen": b"Emma smiled."}
    assert [row["times"] for row in rows] == [3, 1] and rows[0]["bytes"] == 22
    # a source without a final newline is not glued to its own next copy
    assert demo_script.repeated(streams, table, ["austen=2"])[0]["austen"] == (
        b"Emma smiled.\nEmma smiled.\n")
    for bad in ("nope=2", "examples=0", "examples=x", "examples"):
        with pytest.raises(SystemExit, match="--repeat"):
            demo_script.repeated(streams, table, [bad])


def test_the_token_sources_alphabet_is_the_ranked_texts_most_frequent_tokens(demo_script, tok):
    # the English read (4 x token 5) and the corpus read once (token 7 first): span_copy's
    # 4 tokens are the once-read corpus's 4 most frequent
    english = np.array([5] * 40 + [7] * 30 + [9] * 20 + list(range(10, 20)) * 2)
    ranked = np.array([7] * 40 + [9] * 30 + [11] * 20 + [12] * 10 + [5] * 5)
    phases = [{"mix": {"span_copy(4, [2, 3], 2)": 1}}]
    rng = np.random.default_rng(0)

    def drawn(source):
        return set(np.unique(np.concatenate([source(rng, 40) for _ in range(20)])).tolist())
    key = "span_copy(4, [2, 3], 2)"
    assert drawn(demo_script.make_sources(phases, english, tok.tokenizer, 0, ranked)[key]) == {
        7, 9, 11, 12}
    assert drawn(demo_script.make_sources(phases, english, tok.tokenizer, 0)[key]) == {5, 7, 9, 10}


def test_a_corpus_source_reads_its_own_text_alone(demo_script, tok, text_file, tmp_path):
    phases = [{"mix": {"english": 1}}, {"mix": {"corpus('harvard_sentences')": 1, "english": 1,
                                                "corpus('harvard_sentences') ": 1}}]
    assert demo_script.corpus_names(phases) == ["harvard_sentences"]
    english, alone = np.arange(10, 60), np.array([7, 8, 9] * 20)
    sources = demo_script.make_sources(phases[1:], english, tok.tokenizer, 0,
                                       texts={"harvard_sentences": alone})
    rng = np.random.default_rng(0)
    rows = np.stack([sources["corpus('harvard_sentences')"](rng, 12) for _ in range(5)])
    assert set(rows.ravel().tolist()) == {7, 8, 9}  # windows of that text, none of the English
    with pytest.raises(ValueError, match="one text's name"):
        demo_script.corpus_names([{"mix": {"corpus(3)": 1}}])
    with pytest.raises(ValueError, match="no text 'nope'"):
        demo_script.make_sources([{"mix": {"corpus('nope')": 1}}], english, tok.tokenizer, 0,
                                 texts={"harvard_sentences": alone})
    # with --text, a text is a file the run reads; another name is refused before training
    with pytest.raises(SystemExit, match="corpus\\('nope'\\): no such text"):
        demo_script.main(["--out", str(tmp_path / "x"), "--tokenizer", str(tok.path), "--text",
                          str(text_file), "--phases", '[[5, {"corpus(\'nope\')": 1}]]'])
    assert not (tmp_path / "x").exists()


def leaves(tree, path="") -> dict:
    """The numbers of a JSON tree by their path (``english_twice/ratio``, ``.../scores/0/1``)."""
    if isinstance(tree, dict):
        return {k: v for key, value in tree.items()
                for k, v in leaves(value, f"{path}/{key}").items()}
    if isinstance(tree, list):
        return {k: v for i, item in enumerate(tree) for k, v in leaves(item, f"{path}/{i}").items()}
    return {path: tree}


def test_a_short_run_of_the_script_writes_the_checkpoint_and_its_report(demo_script, tok,
                                                                        text_file, tmp_path,
                                                                        capsys):
    out = tmp_path / "demo"
    phases = [{"steps": 6, "context": 16, "lr": 1e-2, "warmup": 2,
               "mix": {"span_copy(20, [3, 6], 4)": 0.7, "chains(20)": 0.3}},
              {"steps": 14, "min_lr": 1e-3,
               "mix": {"english": 0.4, "twice([3, 8], 6)": 0.1, "names_story": 0.2,
                       "span_copy(268, [3, 10], 4)": 0.1, "random_twice(268, [3, 6], 4, 2)": 0.1,
                       "repeated_spans([3, 8], 5, 4)": 0.1}}]
    args = ["--out", str(out), "--tokenizer", str(tok.path), "--text", str(text_file),
            "--phases", json.dumps(phases), "--d-model", "32", "--d-ff", "64", "--context",
            "320", "--batch", "2", "--warmup", "5", "--snapshot-every", "10"]
    assert demo_script.main(args) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["phases"] == phases and report["training"]["steps"] == 20
    assert set(report["criteria"]) == set(demo_script.CRITERIA)
    model = GlassLM.from_pretrained(out)
    assert (model.config.n_heads, model.config.n_kv_heads) == (2, 1)  # the defaults: GQA 2:1
    assert not model.config.tie_word_embeddings
    assert model.tokenizer.encode("The cat") == tok.tokenizer.encode("The cat")
    english, stories = demo_script.read_heldout()
    assert (out / probes.HELDOUT_ENGLISH_FILE).read_text().splitlines() == english
    # the weights kept in float16 by default, and the report measured on them as kept
    from safetensors.numpy import load_file
    stored = load_file(out / "model.safetensors")
    assert {v.dtype for v in stored.values()} == {np.dtype(np.float16)}
    assert report["training"]["weights_dtype"] == "float16"
    again = json.loads(json.dumps(demo_script.measure(model, english, stories, out)))
    ours, theirs = leaves(again), leaves(report["measures"])
    assert list(ours) == list(theirs)
    assert list(ours.values()) == pytest.approx(list(theirs.values()), rel=1e-6)  # BLAS threads
    assert "| held-out English <= 1.25 nats/byte |" in (out / "report.md").read_text()
    state = json.loads((out / STATE_NAME).read_text())
    assert state["data"]["batches"] == {"phases": phases} and state["finished"]
    # each phase its own rows and schedule (the options' context, lr and warm-up by default),
    # glassllm's own initial weights, AdamW as the trials had it
    assert state["options"]["phases"] == [
        {"steps": 6, "context": 16, "lr": 1e-2, "warmup": 2, "min_lr": None, "restart": True},
        {"steps": 14, "context": 320, "lr": 3e-3, "warmup": 5, "min_lr": 1e-3, "restart": True}]
    assert (state["options"]["init"], state["options"]["beta2"],
            state["options"]["weight_decay"]) == ("glass", 0.999, 0.0)
    with pytest.raises(SystemExit, match="unknown kind 'nope'"):
        demo_script.main(["--out", str(tmp_path / "x"), "--tokenizer", str(tok.path), "--text",
                          str(text_file), "--phases", '[[5, {"nope(3)": 1}]]'])


def test_the_weights_kept_are_the_ones_measured_and_an_overflow_keeps_the_float32_file(
        demo_script, tmp_path):
    from glassllm import Config
    model = GlassLM(Config(vocab_size=40, d_model=16, n_layers=1, n_heads=2, n_kv_heads=2,
                           max_len=8, d_ff=32))
    model.save_pretrained(tmp_path)
    assert demo_script.stored_as(model, tmp_path, "float32") is model  # nothing re-read
    kept = demo_script.stored_as(model, tmp_path, "float16")
    wide = model.state_dict()["lm_head.weight"]
    assert np.array_equal(kept.state_dict()["lm_head.weight"],
                          wide.astype(np.float16).astype(np.float32))
    model.save_pretrained(tmp_path)
    before = (tmp_path / "model.safetensors").read_bytes()
    model.lm_head[0, 0] = 1e5  # beyond float16's 65504
    with pytest.raises(SystemExit, match=r"lm_head\.weight.*--weights float32"):
        demo_script.stored_as(model, tmp_path, "float16")
    assert (tmp_path / "model.safetensors").read_bytes() == before


# -- transformers reads the folder as glassllm does --------------------------------------------

@pytest.mark.reference
def test_transformers_reads_a_folder_trained_with_a_tokenizer_as_glassllm_does(tmp_path):
    try:
        import torch
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        from transformers import AutoTokenizer, LlamaForCausalLM
    except ImportError as error:  # pragma: no cover - depends on the machine
        require_or_skip(False, f"torch, tokenizers and transformers are needed: {error}",
                        "GLASSLLM_REQUIRE_REFERENCE")
    reference = Tokenizer(models.BPE())
    reference.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    reference.decoder = decoders.ByteLevel()
    reference.train_from_iterator(TEXT.splitlines(), trainers.BpeTrainer(
        vocab_size=300, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    (tmp_path / "tok").mkdir()
    reference.save(str(tmp_path / "tok" / "tokenizer.json"))
    tok = read_tokenizer(tmp_path / "tok")
    out = tmp_path / "m"
    train(text_tokens(TEXT.encode(), tok), out, TINY, tokenizer=tok)
    model = GlassLM.from_pretrained(out)
    theirs = AutoTokenizer.from_pretrained(out)
    twin = LlamaForCausalLM.from_pretrained(out).eval()
    for text in ["The cat sat on the mat.", " the dog  ran\n\nto a fox!", "Zorblat, café 😀"]:
        ids = model.tokenizer.encode(text)
        assert theirs(text)["input_ids"] == ids == reference.encode(text).ids
        assert theirs.decode(ids) == model.tokenizer.decode(ids) == text
    ids = model.tokenizer.encode("The cat sat on the mat. The dog sat on the log.")
    with torch.no_grad():
        expected = twin(torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(model.forward(ids), expected, atol=1e-4, rtol=0)
