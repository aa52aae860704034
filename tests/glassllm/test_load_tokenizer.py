"""glassllm's pure-Python tokenizer reader against the tokenizers package (the reference), and
the byte tokenizer for a folder without tokenizer.json."""

import json
import random
import time

import pytest

from glassllm import DEMO_CHECKPOINT, load_tokenizer
from glassllm.bpe import (BYTE_CHAR, ByteTokenizer, BPETokenizer, tokenizer_from_json,
                          word_pattern)
from tests.conftest import require_or_skip

try:
    import tokenizers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
except ImportError as error:  # pragma: no cover - depends on the machine
    tokenizers = None
    IMPORT_ERROR = error


@pytest.fixture
def reference():
    require_or_skip(tokenizers is not None,
                    f"the tokenizers package is needed for the reference tests (pip install "
                    f"tokenizers; it comes with transformers): "
                    f"{IMPORT_ERROR if tokenizers is None else ''}",
                    "GLASSLLM_REQUIRE_REFERENCE")


TRAINING_TEXT = [
    "The cat sat on the mat. The dog didn't see it; they're both asleep, aren't they?",
    "It's 10:45 in the morning and we've got 3,141 reasons to stay — or 2,718 to leave.",
    "Once upon a time there was a girl named Alice who lived near the river.",
    "Élodie a mangé une crème brûlée à Paris; naïve coöperation, façade, jalapeño.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "Emoji: 😀😃😄 👍🏽 🇵🇹 👨‍👩‍👧 ❤️ and math: ∑ ∫ √ ≤ ≥ ≠ ∞.",
    "def f(x):\n\treturn x ** 2  # squares\n\n\nprint(f(12))   ",
    "Combining: e\u0301 a\u0308 n\u0303 — and Greek: αβγδ ΑΒΓΔ, Cyrillic: привет мир.",
] * 20

TEXTS = [
    "", " ", "  ", "\n", "\n\n", "\t", " \t\n ", "a", "A", "the", " the", "The cat sat",
    "Hello, world!", "Hello  world", "Hello   world   ", "trailing spaces   ",
    "   leading spaces", "line one\nline two\r\nline three\n", "tabs\tand\t\ttabs",
    "I'm sure you're right; it's what we've said, I'd think, and they'll agree.",
    "I'M SURE YOU'RE RIGHT", "'s 't 're 've 'm 'll 'd", "''s", "rock'n'roll", "don't",
    "1234567890", "3.14159 and 2,718,281 and 1e-10", "x²+y³=z⁴ ½ ¾ Ⅻ ٣٤٥ ४२",
    "!!! ??? ... --- *** ((())) [[]]", "a!b@c#d$e%f^g&h*i(j)k", " !? ", "...hello...",
    "Élodie, naïve café, crème brûlée, jalapeño, Ærøskøbing", "e\u0301t\u00e9 (NFD vs NFC)",
    "a\u0308\u0308\u0308 stacked marks", "東京は日本の首都です。", "北京是中国的首都", "서울",
    "😀", "😀😀😀", "👨‍👩‍👧‍👦 family", "🇵🇹🇧🇷 flags", "❤️‍🔥", "👍🏽",
    "Supercalifragilisticexpialidocious" * 3, "a" * 300, " " * 50, "\n" * 20, "ab" * 100,
    "word\u00a0nbsp\u3000ideographic\u2009thin\u2028line\u2029para\u0085nel",
    "\x1c\x1d\x1e\x1f separators", "\x00\x01\x7f control", "mixed 123abc abc123 12ab34",
    "   \n   \n", "end with newline\n", "end with tab\t", "ʼapostrophe modifier", "naïve’s",
    "\ufeffBOM", "\U0010ffff\U000e0001", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛", "Ωmega ωmega",
]

ALPHABET = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            + list(" " * 12 + "\n\n\t\r") + list(".,;:!?'\"-()[]{}/\\@#$%^&*_+=<>|~`")
            + ["'s", "'t", "'re", "'ll", " the", " and"]
            + list("éèêëàâäîïôöûüçñÉÀ") + list("東京日本語中国한국어") + ["😀", "👍🏽", "🇵🇹", "❤️"]
            + ["\u0301", "\u0308", "\u00a0", "\u3000", "\u2009", "\u0085", "\x1c", "\x0b",
               "²", "½", "٣", "Ⅻ"])


def random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        pieces = [rng.choice(ALPHABET) for _ in range(rng.randint(0, 60))]
        if rng.random() < 0.2:  # some arbitrary code points, surrogates aside
            pieces += [chr(rng.choice([rng.randint(0x80, 0xD7FF), rng.randint(0xE000, 0x10FFFF)]))
                       for _ in range(rng.randint(1, 5))]
            rng.shuffle(pieces)
        out.append("".join(pieces))
    return out


def train(vocab_size=600, add_prefix_space=False, use_regex=True, special=()):
    """A byte-level BPE trained with tokenizers, as scripts/train_tokenizer.py trains one."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space,
                                                 use_regex=use_regex)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    return tok


def ours(tok) -> BPETokenizer:
    return tokenizer_from_json(json.loads(tok.to_str()), "test")


def assert_same(tok, texts, round_trip=True):
    mine = ours(tok)
    for text in texts:
        ids = mine.encode(text)
        assert ids == tok.encode(text).ids, repr(text)
        assert mine.decode(ids) == tok.decode(ids, skip_special_tokens=False), repr(text)
        if round_trip:  # with add_prefix_space the decoded text keeps the added space
            assert mine.decode(ids) == text, repr(text)


# -- against tokenizers ----------------------------------------------------------------------

def code_points_to_check() -> list[int]:
    """Every code point of the BMP; beyond it, each range edge of the classes (and its
    neighbours) and a seeded sample: every code point takes minutes on a loaded machine."""
    from glassllm import bpe_classes
    edges = set()
    for ranges in (bpe_classes.LETTERS, bpe_classes.NUMBERS, bpe_classes.WHITE_SPACE):
        for part in ranges.split():
            for end in part.split("-"):
                edges.update(int(end, 16) + d for d in (-1, 0, 1))
    rng = random.Random(0)
    beyond = edges | {rng.randrange(0x10000, 0x110000) for _ in range(20_000)}
    codes = list(range(0x10000)) + sorted(c for c in beyond if 0x10000 <= c < 0x110000)
    return [c for c in codes if not 0xD800 <= c < 0xE000]


def test_word_classes_match_tokenizers(reference):
    """The pre-tokenizer's split (GPT-2's pattern) of code points beside a letter, a digit, a
    mark, a space and white space; the classes do not come from unicodedata, whose Unicode
    version differs from Oniguruma's (scripts/build_bpe_classes.py asks every code point)."""
    split = pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str
    pattern = word_pattern()
    codes = code_points_to_check()
    step = 8192
    for start in range(0, len(codes), step):
        chars = [chr(c) for c in codes[start:start + step]]
        text = "".join(f"a{c}1{c}!{c} {c}  {c}'s{c}\n" for c in chars)
        mine = ["".join(BYTE_CHAR[b] for b in w.encode("utf-8")) for w in pattern.findall(text)]
        assert mine == [w for w, _ in split(text)], f"code points {chars[0]!r}..{chars[-1]!r}"


def test_ids_equal_tokenizers_for_hand_picked_texts(reference):
    assert_same(train(), TEXTS)


def test_ids_equal_tokenizers_for_random_texts(reference):
    assert_same(train(), random_texts(400, seed=0))


@pytest.mark.parametrize("options", [dict(add_prefix_space=True), dict(use_regex=False),
                                     dict(vocab_size=300), dict(vocab_size=2000)])
def test_ids_equal_tokenizers_for_each_byte_level_option(reference, options):
    assert_same(train(**options), TEXTS + random_texts(100, seed=1),
                round_trip=not options.get("add_prefix_space"))


def test_added_and_special_tokens_are_cut_out_first(reference):
    tok = train(special=["<|endoftext|>", "<pad>"])
    tok.add_tokens(["hello world", "cat"])
    texts = ["<|endoftext|>", "a<|endoftext|>b", "<pad><pad>", "hello world!", "the cat sat",
             "concatenate <|endoftext|> hello worlds", "<|endoftext|"] + random_texts(50, 2)
    mine = ours(tok)
    for text in texts:
        assert mine.encode(text) == tok.encode(text).ids, repr(text)
        ids = tok.encode(text).ids
        assert mine.decode(ids) == tok.decode(ids, skip_special_tokens=False), repr(text)
    assert mine.vocab_size == tok.get_vocab_size(with_added_tokens=True)


def test_decode_equals_tokenizers_for_any_ids(reference):
    """Random ID lists too, whose bytes need not be UTF-8: both read them as U+FFFD."""
    tok = train()
    mine = ours(tok)
    rng = random.Random(3)
    for _ in range(300):
        ids = [rng.randrange(tok.get_vocab_size()) for _ in range(rng.randint(0, 12))]
        assert mine.decode(ids) == tok.decode(ids, skip_special_tokens=False), ids
    assert mine.strings(list(range(mine.vocab_size))) == [
        tok.decode([i], skip_special_tokens=False) for i in range(mine.vocab_size)]


def test_legacy_merges_as_strings_read_the_same(reference):
    tok = train()
    spec = json.loads(tok.to_str())
    spec["model"]["merges"] = [" ".join(pair) for pair in spec["model"]["merges"]]
    legacy = Tokenizer.from_str(json.dumps(spec))
    mine = tokenizer_from_json(spec, "legacy")
    for text in TEXTS:
        assert mine.encode(text) == legacy.encode(text).ids == tok.encode(text).ids


def test_ignore_merges_takes_a_whole_word_from_the_vocabulary(reference):
    spec = json.loads(train().to_str())
    spec["model"]["ignore_merges"] = True
    spec["model"]["vocab"]["Ġzyx"] = len(spec["model"]["vocab"])  # reachable by no merge
    tok = Tokenizer.from_str(json.dumps(spec))
    mine = tokenizer_from_json(spec, "ignore_merges")
    for text in TEXTS + [" zyx", "a zyx zyxw"]:
        assert mine.encode(text) == tok.encode(text).ids, repr(text)


def test_the_project_script_trains_what_tokenizers_reads(reference, tmp_path):
    """scripts/train_tokenizer.py on a small corpus: deterministic, and read by both."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import train_tokenizer
    first = train_tokenizer.train(TRAINING_TEXT, vocab_size=500)
    again = train_tokenizer.train(TRAINING_TEXT, vocab_size=500)
    assert first == again
    (tmp_path / "tokenizer.json").write_text(first)
    mine = load_tokenizer(tmp_path)
    tok = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert mine.vocab_size == tok.get_vocab_size() == 500
    for text in TEXTS:
        assert mine.encode(text) == tok.encode(text).ids


# -- on its own --------------------------------------------------------------------------------

def tiny_spec(merges=(("t", "h"), ("th", "e"), ("Ġ", "the")), **changes) -> dict:
    """A hand-written tokenizer.json: every byte, then one token per merge (by default three,
    making 'th', 'the', 'Ġthe'); ``changes`` replace top-level parts."""
    vocab = {char: i for i, char in enumerate(BYTE_CHAR.values())}
    for left, right in merges:
        vocab[left + right] = len(vocab)
    spec = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": True, "use_regex": True},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": [[left, right] for left, right in merges]}}
    spec.update(changes)
    return spec


def test_hand_computed_merges():
    tok = tokenizer_from_json(tiny_spec())
    byte = {char: i for i, char in enumerate(BYTE_CHAR.values())}
    the, space_the = 257, 258
    assert tok.encode("the the") == [the, space_the]
    assert tok.encode("then  the") == [the, byte["n"], byte["Ġ"], space_the]
    assert tok.encode("é") == [byte[BYTE_CHAR[0xC3]], byte[BYTE_CHAR[0xA9]]]
    assert tok.strings(tok.encode("the the")) == ["the", " the"]
    assert tok.strings([byte[BYTE_CHAR[0xC3]]]) == ["\ufffd"]  # half of é
    assert tok.decode(tok.encode("the théâtre 😀")) == "the théâtre 😀"
    assert tok.vocab_size == 259
    assert tok.encode("") == []


@pytest.mark.parametrize("change, named", [
    (dict(normalizer={"type": "NFKC"}), "normalizer"),
    (dict(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer"),
    (dict(pre_tokenizer={"type": "Metaspace", "replacement": "▁"}), "pre_tokenizer"),
    (dict(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\d"}, "behavior": "Isolated"},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}), "pre_tokenizer"),
    (dict(decoder={"type": "WordPiece"}), "decoder"),
    (dict(decoder=None), "decoder"),
    (dict(post_processor={"type": "TemplateProcessing"}), "post_processor"),
    (dict(truncation={"max_length": 8}), "truncation"),
    (dict(padding={"strategy": "BatchLongest"}), "padding"),
])
def test_unsupported_parts_are_named(change, named):
    with pytest.raises(ValueError, match=named):
        tokenizer_from_json(tiny_spec(**change))


@pytest.mark.parametrize("key, value", [("dropout", 0.1), ("continuing_subword_prefix", "##"),
                                        ("end_of_word_suffix", "</w>"), ("type", "WordPiece")])
def test_unsupported_model_settings_are_named(key, value):
    spec = tiny_spec()
    spec["model"][key] = value
    with pytest.raises(ValueError, match="model"):
        tokenizer_from_json(spec)


def test_a_vocabulary_missing_bytes_is_refused():
    spec = tiny_spec()
    del spec["model"]["vocab"]["Ā"]
    with pytest.raises(ValueError, match="missing bytes"):
        tokenizer_from_json(spec)


def test_added_token_options_it_cannot_reproduce_are_named():
    spec = tiny_spec(added_tokens=[{"id": 259, "content": "<s>", "single_word": False,
                                    "lstrip": True, "rstrip": False, "normalized": False,
                                    "special": True}])
    with pytest.raises(ValueError, match="lstrip"):
        tokenizer_from_json(spec)


def test_bad_input_is_refused_clearly():
    tok = tokenizer_from_json(tiny_spec())
    with pytest.raises(TypeError, match="str"):
        tok.encode(b"bytes")
    with pytest.raises(ValueError, match="surrogate"):
        tok.encode("a\ud800b")
    with pytest.raises(ValueError, match=r"ids\[1\]"):
        tok.decode([1, 259])
    with pytest.raises(ValueError, match=r"ids\[0\]"):
        tok.decode([True])


def test_a_paragraph_encodes_in_milliseconds():
    tok = tokenizer_from_json(tiny_spec())
    paragraph = ("It is a truth universally acknowledged, that a single man in possession of a "
                 "good fortune, must be in want of a wife. ") * 8
    tok.encode("warm up: the pattern compiles once")
    start = time.perf_counter()
    ids = tok.encode(paragraph)
    assert time.perf_counter() - start < 0.1  # a few ms natively; Pyodide is slower
    assert tok.decode(ids) == paragraph


def test_a_folder_without_tokenizer_json_gets_the_byte_tokenizer(tmp_path):
    (tmp_path / "bytes").mkdir()
    (tmp_path / "bytes" / "config.json").write_text("{}")  # a folder without tokenizer.json
    for folder in (tmp_path / "bytes", tmp_path):
        tok = load_tokenizer(folder)
        assert isinstance(tok, ByteTokenizer) and tok.vocab_size == 256
        text = "The cat sat — é 😀"
        assert tok.encode(text) == list(text.encode("utf-8"))
        assert tok.decode(tok.encode(text)) == text
        assert tok.strings(tok.encode("a é")) == ["a", " ", "\ufffd", "\ufffd"]


def test_a_folder_with_tokenizer_json_gets_the_bpe_reader(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps(tiny_spec()))
    tok = load_tokenizer(tmp_path)
    assert isinstance(tok, BPETokenizer) and tok.encode("the") == [257]


def test_a_bad_folder_or_file_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        load_tokenizer(tmp_path / "missing")
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        load_tokenizer(tmp_path)
    (tmp_path / "tokenizer.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        load_tokenizer(tmp_path)


def test_a_template_post_processor_adds_its_special_tokens(reference):
    """As Llama's tokenizers add BOS: TemplateProcessing's single template."""
    from tokenizers import processors
    tok = train(special=["<s>", "</s>"])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", tok.token_to_id("<s>")),
                                              ("</s>", tok.token_to_id("</s>"))])
    mine = ours(tok)
    for text in TEXTS[:30] + random_texts(30, 4):
        assert mine.encode(text) == tok.encode(text).ids, repr(text)
    tok.post_processor = processors.Sequence([processors.ByteLevel(), tok.post_processor])
    assert ours(tok).encode("the cat") == tok.encode("the cat").ids


# -- a model knows its tokenizer -------------------------------------------------------------

def bpe_checkpoint(folder, spec=None):
    from glassllm import Config, GlassLM
    spec = spec or tiny_spec()
    GlassLM(Config(vocab_size=259, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=32,
                   max_len=32)).save_pretrained(folder)
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    return folder


def test_a_model_from_a_folder_knows_its_tokenizer(tmp_path):
    from glassllm import GlassLM
    demo = GlassLM.from_pretrained(DEMO_CHECKPOINT)  # the demo is a subword model
    assert isinstance(demo.tokenizer, BPETokenizer) and demo.tokenizer.vocab_size == 2048
    assert demo.encode("the the") == load_tokenizer(DEMO_CHECKPOINT).encode("the the")
    model = GlassLM.from_pretrained(bpe_checkpoint(tmp_path))
    assert isinstance(model.tokenizer, BPETokenizer)
    assert model.encode("the the") == [257, 258]


def test_text_is_never_read_as_bytes_by_a_model_that_has_no_byte_tokenizer(tmp_path):
    from glassllm import Config, GlassLM, circuits
    random_model = GlassLM(Config(vocab_size=300, d_model=16, n_layers=1, n_heads=2,
                                  n_kv_heads=1, d_ff=32, max_len=32))
    with pytest.raises(ValueError, match="no tokenizer; give token IDs"):
        circuits.logit_lens(random_model, "the cat")
    folder = bpe_checkpoint(tmp_path / "no-json")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match="no tokenizer.json"):
        GlassLM.from_pretrained(folder).encode("the cat")
    folder = bpe_checkpoint(tmp_path / "nfkc", tiny_spec(normalizer={"type": "NFKC"}))
    model = GlassLM.from_pretrained(folder)  # the weights still load
    with pytest.raises(ValueError, match="normalizer"):
        model.tokenizer


def test_probes_read_text_with_the_models_tokenizer(tmp_path):
    """Held-out loss of a subword model: summed token loss over the bytes they stand for."""
    import numpy as np
    from glassllm import GlassLM, circuits, probes
    from glassllm.nn import log_softmax
    model = GlassLM.from_pretrained(bpe_checkpoint(tmp_path))
    text = "the theme of the thesis"
    ids = model.encode(text)
    assert len(ids) < len(text.encode())  # 'the' and ' the' are one token each
    logits = np.asarray(model.forward(ids[:-1]))
    nll = -log_softmax(logits)[np.arange(len(ids) - 1), ids[1:]]
    by_hand = float(nll.sum()) / len(text.encode()[len("the"):])  # the first token's bytes
    assert probes.heldout_loss(model, text.encode(), 32) == pytest.approx(by_hand, rel=1e-5)
    assert circuits.logit_lens(model, text) == circuits.logit_lens(model, ids)
    with pytest.raises(ValueError, match="not UTF-8"):
        probes.heldout_loss(model, b"\xff\xfe the", 32)


# -- how the pages show tokens, and how a text was split ---------------------------------------

def test_hand_computed_explain_labels_and_bytes():
    """explain: each word with the merges applied, in order (rank, count), and its tokens;
    labels: each token as a chip shows it, a space as ␣; token_bytes: each token's bytes."""
    tok = tokenizer_from_json(tiny_spec())
    byte = {char: i for i, char in enumerate(BYTE_CHAR.values())}
    words = tok.explain("the then é")
    assert [w.word for w in words] == ["the", " then", " é"]
    assert [(m.left, m.right, m.joined, m.rank, m.count) for m in words[0].merges] == [
        ("t", "h", "th", 0, 1), ("th", "e", "the", 1, 1)]
    assert [(m.left, m.right, m.joined, m.rank) for m in words[1].merges] == [
        ("t", "h", "th", 0), ("th", "e", "the", 1), ("␣", "the", "␣the", 2)]
    assert words[1].ids == (258, byte["n"])
    assert words[2].merges == () and tok.labels(words[2].ids) == ["␣", "\\xc3", "\\xa9"]
    assert [i for w in words for i in w.ids] == tok.encode("the then é")
    assert tok.labels([257, 258, byte["Ċ"], byte["ĉ"]]) == ["the", "␣the", "⏎", "\\x09"]
    assert tok.token_bytes([258, byte[BYTE_CHAR[0xC3]]]) == [b" the", b"\xc3"]
    twice = tokenizer_from_json(tiny_spec(merges=(("a", "a"),))).explain("aaaa")
    assert [(m.left, m.right, m.count) for m in twice[0].merges] == [("a", "a", 2)]


def test_the_byte_tokenizers_labels_are_token_label():
    from glassllm.tokenizer import token_label

    tok = ByteTokenizer()
    assert tok.labels(range(256)) == [token_label(t) for t in range(256)]
    assert tok.token_bytes([0, 65, 255]) == [b"\x00", b"A", b"\xff"]
    with pytest.raises(ValueError, match="byte tokens"):
        tok.token_bytes([256])


def test_explain_is_the_tokenizers_split_on_the_demo(reference):
    """On the demo's tokenizer.json and many texts: explain's words are the tokenizers
    package's pre-tokenized words, their IDs together its IDs, and each word's merges,
    replayed in order on its bytes with tokenizer.json's merges of those ranks, give its
    tokens; labels are the tokens' strings with a space as ␣."""
    mine = load_tokenizer(DEMO_CHECKPOINT)
    theirs = Tokenizer.from_file(str(DEMO_CHECKPOINT / "tokenizer.json"))
    spec = json.loads((DEMO_CHECKPOINT / "tokenizer.json").read_text(encoding="utf-8"))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in spec["model"]["merges"]]
    vocab = spec["model"]["vocab"]
    for text in TEXTS:
        words = mine.explain(text)
        assert [i for w in words for i in w.ids] == theirs.encode(text).ids, repr(text)
        split = [w for w, _ in theirs.pre_tokenizer.pre_tokenize_str(text)]
        assert ["".join(BYTE_CHAR[b] for b in w.word.encode("utf-8")) for w in words] == split
        for w in words:
            pieces = list("".join(BYTE_CHAR[b] for b in w.word.encode("utf-8")))
            for m in w.merges:
                left, right = merges[m.rank]
                out, i = [], 0
                while i < len(pieces):
                    if pieces[i:i + 2] == [left, right]:
                        out.append(left + right)
                        i += 2
                    else:
                        out.append(pieces[i])
                        i += 1
                assert len(pieces) - len(out) == m.count, (text, m)
                pieces = out
            assert [vocab[p] for p in pieces] == list(w.ids), repr(w.word)
    ids = list(range(mine.vocab_size))
    strings = theirs.decode_batch([[i] for i in ids], skip_special_tokens=False)
    for label, string in zip(mine.labels(ids), strings):
        if "\ufffd" not in string and string.isprintable() or string.strip(" ") == "":
            assert label == string.replace(" ", "␣"), (label, string)
