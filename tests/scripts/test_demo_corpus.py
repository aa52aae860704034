"""scripts/demo_corpus.py: the demo's English sources are read right, and a source that cannot
be had is a clear error saying how to get it."""

import hashlib
import struct

import pytest

from tests.conftest import load_script

corpus = load_script("demo_corpus")


def r_serialized(strings, version=3):
    """A character vector in R's XDR serialization, written out by hand from R Internals."""
    out = b"X\n" + struct.pack(">3i", version, 0x040201, 0x030500)
    if version == 3:
        out += struct.pack(">i", 5) + b"UTF-8"
    out += struct.pack(">2i", 16, len(strings))  # STRSXP, no attributes
    for s in strings:
        if s is None:
            out += struct.pack(">2i", 9, -1)  # NA_STRING
        else:
            data = s.encode("utf-8")
            out += struct.pack(">2i", 0x40009, len(data)) + data  # CHARSXP, UTF-8 flag
    return out


@pytest.mark.parametrize("version", [2, 3])
def test_r_character_vector_reads_each_string(version):
    strings = ["EMMA", "", "By Jane Austen", None, "Emma Woodhouse, handsome, clever, and rich"]
    assert corpus._r_character_vector(r_serialized(strings, version)) == [
        "EMMA", "", "By Jane Austen", "", "Emma Woodhouse, handsome, clever, and rich"]


def test_r_reader_refuses_what_is_not_a_character_vector():
    with pytest.raises(ValueError, match="not R's XDR"):
        corpus._r_character_vector(b"RDX2\n" + bytes(20))
    integers = b"X\n" + struct.pack(">3i", 2, 0, 0) + struct.pack(">2i", 13, 1) + bytes(4)
    with pytest.raises(ValueError, match="type 13"):
        corpus._r_character_vector(integers)


def lazy_load_file(objects):
    """An R lazy-load data file (Rdata.rdb): each object's serialization as a 4-byte
    big-endian length and a zlib stream of it, one after the other."""
    import zlib
    return b"".join(struct.pack(">I", len(raw)) + zlib.compress(raw) for raw in objects)


def test_the_harvard_sentences_are_the_vector_that_starts_with_the_first(tmp_path):
    folder = tmp_path / "usr/lib/R/site-library/stringr/data"
    folder.mkdir(parents=True)
    sentences = [corpus.HARVARD_FIRST] + [f"Sentence  number {i} is short." for i in range(719)]
    integers = b"X\n" + struct.pack(">3i", 2, 0, 0) + struct.pack(">2i", 13, 1) + bytes(4)
    (folder / "Rdata.rdb").write_bytes(lazy_load_file(
        [r_serialized(["apple", "banana"]), integers, r_serialized(sentences)]))
    read = corpus.harvard_sentences(tmp_path)
    assert len(read) == 720 and read[0] == corpus.HARVARD_FIRST
    assert read[1] == "Sentence number 0 is short."  # runs of spaces made one
    (folder / "Rdata.rdb").write_bytes(lazy_load_file([r_serialized(sentences[:700])]))
    with pytest.raises(ValueError, match="720 sentences"):
        corpus.harvard_sentences(tmp_path)


DING_TEXT = """\
Regen /rˈeːɡən/ <masc, n, sg>
 [meteo.] rain <n>, rainfall <n>
      "im Regen radeln müssen"  - have to cycle in the rain
      "Es regnete jeden Tag"  - It rained every day., It rained day in, day out.
      "jdm. einen Namen geben"  - Give sb. a name.
      "Die Verkäufe stagnieren."  - Computer sales have levelled out/plateaued.
      "Ganz schön kalt"  - It is [Br.] rather cold today!
      "Es ist kaum zu glauben"  - It is very hard to believe / It beggars belief.
Die Veranstaltung fiel buchstäblich ins Wasser. /diː fɛrˈanʃtˌaltʊŋ/
The event was rained off/out.
 see: {Regen}
Wie geht's? /viː ɡeːts/
 [ugs.] How are you doing?
Bis bald! /bɪs balt/
 see: {bald}
      "Es regnete jeden Tag"  - It rained every day.
      "Café"  - We met at the café.
"""


def test_ding_english_keeps_the_sentences_of_the_dictionary(tmp_path):
    assert corpus.ding_english(DING_TEXT) == [
        "It rained every day.",              # two alternatives, each a sentence
        "It rained day in, day out.",
        "Computer sales have levelled out.",  # of slashed words the first
        "It is rather cold today!",           # the label removed
        "The event was rained off.",          # a sentence headword's English
        "How are you doing?"]                 # deduplicated; sb., " / " and non-ASCII dropped
    import gzip
    dictd = tmp_path / corpus.DING_DICT
    dictd.parent.mkdir(parents=True)
    dictd.write_bytes(gzip.compress(DING_TEXT.encode("utf-8")))
    assert corpus.ding_sentences(tmp_path) == corpus.ding_english(DING_TEXT)


def test_an_unknown_extra_text_is_refused_before_anything_is_fetched(tmp_path):
    with pytest.raises(ValueError, match="harvard_sentences"):
        corpus.load_texts(tmp_path / "cache", extra=("moby_dick",))
    assert not (tmp_path / "cache").exists()


def test_wordnet_examples_and_definitions_come_from_the_glosses(tmp_path):
    folder = tmp_path / "usr/share/wordnet"
    folder.mkdir(parents=True)
    lines = [
        "  1 This software and database is being provided to you, the LICENSEE",
        '02084071 05 n 01 dog 0 001 @ 02083346 n 0000 | a member of the genus Canis that has '
        'been domesticated by man; "the dog barked all night"; "dogs"',
        '01234567 00 v 01 run 0 001 @ 02083346 v 0000 | move fast by using the legs; "he ran '
        'to the station"; "the dog barked all night"',
    ]
    (folder / "data.noun").write_text("\n".join(lines[:2]) + "\n", encoding="latin-1")
    (folder / "data.verb").write_text(lines[2] + "\n", encoding="latin-1")
    for name in ("data.adj", "data.adv"):
        (folder / name).write_text("")
    examples, definitions = corpus.wordnet_texts(tmp_path)
    # >= 4 words, capitalised and ended, each once; "dogs" is too short
    assert examples == ["The dog barked all night.", "He ran to the station."]
    assert definitions == ["A member of the genus Canis that has been domesticated by man.",
                           "Move fast by using the legs."]


def test_a_cached_deb_with_the_wrong_hash_is_refused(tmp_path):
    (tmp_path / corpus.WORDNET.deb_name).write_bytes(b"not the package")
    digest = hashlib.sha256(b"not the package").hexdigest()
    with pytest.raises(corpus.SourceError) as error:
        corpus.fetch(corpus.WORDNET, tmp_path)
    assert digest in str(error.value) and corpus.WORDNET.sha256 in str(error.value)
    assert "delete it" in str(error.value)


def test_without_apt_get_the_error_says_how_to_get_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no apt-get on the PATH
    with pytest.raises(corpus.SourceError) as error:
        corpus.fetch(corpus.AUSTEN, tmp_path / "cache")
    message = str(error.value)
    assert "apt-get update" in message and corpus.AUSTEN.deb_name in message
    assert corpus.AUSTEN.sha256 in message and str(tmp_path / "cache") in message
    assert not list((tmp_path / "cache").iterdir())  # nothing half-fetched


def test_real_sources_read_as_english(tmp_path):
    try:
        texts, table = corpus.load_texts()
    except corpus.SourceError as error:
        from tests.conftest import require_or_skip
        require_or_skip(False, f"the corpus sources cannot be had here: {error}",
                        "GLASSLLM_REQUIRE_REFERENCE")
    assert [row["name"] for row in table] == list(texts) == [
        "wordnet_examples", "wordnet_definitions", "austen"]
    for row in table:
        text = texts[row["name"]]
        assert row["bytes"] == len(text) > 1_000_000
        assert row["sha256"] == hashlib.sha256(text).hexdigest()
        assert text.isascii() and text.endswith(b"\n")
    austen = texts["austen"].decode("ascii")
    assert "It is a truth universally acknowledged" in austen  # Pride and Prejudice opens
    assert "CHAPTER" not in austen and "_" not in austen
    assert all(line == " ".join(line.split()) for line in austen.splitlines())  # unwrapped
    assert len(set(texts["wordnet_examples"].splitlines())) == len(
        texts["wordnet_examples"].splitlines())
    # the extra text is read only when asked, after the three
    with_extra, table = corpus.load_texts(extra=("harvard_sentences",))
    assert list(with_extra) == list(texts) + ["harvard_sentences"]
    assert all(with_extra[name] == texts[name] for name in texts)
    harvard = with_extra["harvard_sentences"].decode("ascii").splitlines()
    assert len(harvard) == 720 and harvard[0] == corpus.HARVARD_FIRST
    assert table[-1]["package"] == "r-cran-stringr" and table[-1]["lines"] == 720
    with_ding, table = corpus.load_texts(extra=("ding_sentences",))
    ding = with_ding["ding_sentences"].decode("ascii").splitlines()
    assert table[-1]["package"] == "dict-freedict-deu-eng" and len(ding) > 15_000
    assert "I had just got off to sleep when my dogs started barking." in ding
    assert len(set(ding)) == len(ding) and not any("sb." in line for line in ding)
