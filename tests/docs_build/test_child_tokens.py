"""The engine's child reads the example's texts with the model's own tokenizer: the demo's
subword tokenizer (its tokenizer.json) for the demo, bytes for random weights. Its token
labels, token bytes, the prompt's split into words and merges, and the length checks (in
the model's tokens) are checked here against glassllm's reader and the tokenizers package."""

from __future__ import annotations

import pytest

from docs_build.data.example import load_example
from docs_build.engine.settings import ExampleSettings, settings_from_options
from docs_build.errors import DocsBuildError
from glassllm import DEMO_CHECKPOINT, load_tokenizer
from glassllm.steps import PACKAGE_DIR
from glassllm.tokenizer import bytes_label, token_label

from .conftest import ROOT

TOKENIZER = load_tokenizer(DEMO_CHECKPOINT)


def demo_settings(**example) -> ExampleSettings:
    return settings_from_options({"model": "demo", **example}, ROOT)


@pytest.fixture(scope="module")
def demo():
    # a prompt with a rare word, an accent and an emoji: some words stay in several tokens
    return load_example(demo_settings(prompt="The cat sat on the mat. Naïve 😀", tokens=3,
                                      loss_text="The cat sat on the mat."), PACKAGE_DIR)


def test_the_demo_example_is_read_with_the_demos_own_tokenizer(demo):
    run, settings = demo.run, demo.run.settings
    assert run.prompt_tokens == TOKENIZER.encode(settings.prompt)
    assert len(run.prompt_tokens) < len(settings.prompt.encode("utf-8"))  # subwords
    loss = TOKENIZER.encode(settings.loss_text)
    assert run.loss_tokens == loss[:-1] and run.loss_targets == loss[1:]
    # every token ID of the vocabulary: its chip label and its bytes
    vocab = run.config.vocab_size
    assert vocab == TOKENIZER.vocab_size and len(run.labels.labels) == vocab
    assert list(run.labels.labels) == TOKENIZER.labels(range(vocab))
    the = TOKENIZER.encode(" the")
    assert len(the) == 1 and run.labels(the[0]) == "␣the"
    assert run.labels.decode(run.prompt_tokens) == settings.prompt
    assert run.labels.decode(run.traced_tokens) == TOKENIZER.decode(run.traced_tokens)


def reference_merges() -> list[tuple[bytes, bytes]]:
    """tokenizer.json's merges as the bytes of each part (GPT-2's characters mapped back to
    bytes through the tokenizers package's own decoder, one token at a time)."""
    import json

    tokenizers = pytest.importorskip("tokenizers")
    decoder = tokenizers.decoders.ByteLevel()
    spec = json.loads((DEMO_CHECKPOINT / "tokenizer.json").read_text(encoding="utf-8"))
    out = []
    for merge in spec["model"]["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        out.append(tuple(decoder.decode([part]).encode("utf-8", "surrogateescape")
                         if "\ufffd" not in decoder.decode([part]) else None
                         for part in (left, right)))
    return out


def test_the_prompts_split_is_the_tokenizers_words_and_merges(demo):
    """Words as the tokenizers package's pre-tokenizer cuts the prompt; each word's merges,
    replayed in order on its bytes, are tokenizer.json's merges of those ranks and give the
    word's tokens, which are the tokenizers package's IDs."""
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer.from_file(str(DEMO_CHECKPOINT / "tokenizer.json"))
    split = demo.run.tokenization
    prompt = demo.run.settings.prompt
    assert split.text == prompt
    assert "".join(w.word for w in split.words) == prompt
    assert [i for w in split.words for i in w.ids] == reference.encode(prompt).ids \
        == demo.run.prompt_tokens
    offsets = [span for _, span in reference.pre_tokenizer.pre_tokenize_str(prompt)]
    assert len(offsets) == len(split.words)
    merges = reference_merges()
    for w in split.words:
        pieces = [bytes([b]) for b in w.word.encode("utf-8")]
        for m in w.merges:
            left, right = merges[m.rank]
            for part, label in ((left, m.left), (right, m.right)):
                assert part is None or bytes_label(part) == label  # None: part of a character
            joined = [p for p in zip(pieces, pieces[1:]) if bytes_label(p[0]) == m.left
                      and bytes_label(p[1]) == m.right]
            assert joined, (w.word, m)
            out, i, count = [], 0, 0
            while i < len(pieces):
                if i + 1 < len(pieces) and (bytes_label(pieces[i]), bytes_label(pieces[i + 1])) \
                        == (m.left, m.right):
                    out.append(pieces[i] + pieces[i + 1])
                    assert bytes_label(out[-1]) == m.joined
                    i, count = i + 2, count + 1
                else:
                    out.append(pieces[i])
                    i += 1
            assert count == m.count
            pieces = out
        assert pieces == TOKENIZER.token_bytes(w.ids), w.word
    assert any(len(w.ids) > 1 for w in split.words)  # "Naïve", the emoji: in pieces
    assert any(len(w.ids) == 1 and len(w.merges) > 1 for w in split.words)


def test_a_random_model_reads_bytes_and_labels_every_byte():
    example = load_example(ExampleSettings(), PACKAGE_DIR)
    run = example.run
    assert run.prompt_tokens == list(run.settings.prompt.encode("utf-8"))
    assert list(run.labels.labels) == [token_label(t) for t in range(256)]
    assert run.tokenization is None  # bytes: nothing merged


def test_lengths_are_counted_in_the_models_tokens():
    max_len, vocab = demo_settings().max_len, TOKENIZER.vocab_size
    # " the" is one token of 4 bytes: a prompt longer than max_len in bytes fits in tokens
    n = max_len // 2
    long_in_bytes = " the" * n
    assert len(long_in_bytes.encode()) > max_len and len(TOKENIZER.encode(long_in_bytes)) == n
    accepted = load_example(demo_settings(prompt=long_in_bytes, tokens=2), PACKAGE_DIR)
    assert len(accepted.run.prompt_tokens) == n
    with pytest.raises(DocsBuildError, match=rf"example.prompt \({max_len - 1} tokens\) \+ "
                                             rf"example.tokens \(2\) exceeds the model's max_len "
                                             rf"\({max_len}\)"):
        load_example(demo_settings(prompt=" the" * (max_len - 1), tokens=2), PACKAGE_DIR)
    with pytest.raises(DocsBuildError, match=r"example.loss_text needs at least 2 tokens \(it has 1\)"):
        load_example(demo_settings(loss_text=" the"), PACKAGE_DIR)
    with pytest.raises(DocsBuildError, match=rf"example.top_k must be in \[1, {vocab}\]"):
        load_example(demo_settings(top_k=vocab + 1), PACKAGE_DIR)
    # random weights read bytes: 11 bytes of prompt + 4 tokens > max_len 8
    with pytest.raises(DocsBuildError, match=r"example.prompt \(11 tokens\)"):
        load_example(ExampleSettings(max_len=8), PACKAGE_DIR)
