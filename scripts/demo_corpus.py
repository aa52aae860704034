"""The English sources of the demo model's corpus: Debian packages, fetched and read reproducibly.

    python scripts/demo_corpus.py            # fetch both packages into build/corpus, print the table

Each source is a Debian package pinned by version and by the sha256 of its ``.deb``:
``apt-get download NAME=VERSION`` fetches it (no root needed; run ``apt-get update`` once on a
fresh machine) and ``dpkg-deb -x`` unpacks it. A ``.deb`` already in the folder with the right
hash is used as it is, so a machine without apt can be given the two files by hand.

- WordNet 3.0 (``wordnet-base``, Princeton's WordNet licence: use, copy, modify and distribute
  with its copyright notice): the example sentences of its synsets (everyday English, one short
  sentence each) and its definitions (plain dictionary English).
- Jane Austen's six novels (``r-cran-janeaustenr``, the R package's MIT licence; the novels are
  in the public domain): narrative English, stored as R character vectors, one line each.

Read only when asked (``load_texts(extra=...)``, train_demo.py's ``corpus(name)`` source), so
the tokenizer and the runs' English are the two packages' above:

- the 720 Harvard sentences (``r-cran-stringr``'s data set ``sentences``; Debian licenses the
  package GPL-2): short everyday sentences written in 1969 for speech-quality tests.
- the English sentences of the Ding German-English dictionary (``dict-freedict-deu-eng``,
  GPL-3+): its example phrases' and sentence headwords' translations, modern everyday English.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = ROOT / "build" / "corpus"


@dataclass(frozen=True)
class DebianSource:
    package: str
    version: str
    sha256: str  # of the .deb file, as Debian's Packages index lists it
    license: str
    what: str

    @property
    def deb_name(self) -> str:
        # apt-get download names the file with the epoch's colon escaped
        return f"{self.package}_{self.version.replace(':', '%3a')}_all.deb"


WORDNET = DebianSource(
    "wordnet-base", "1:3.0-37",
    "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752",
    "WordNet 3.0 licence (Princeton University): use, copy, modify and distribute with the "
    "copyright notice kept", "WordNet 3.0, Princeton University")
AUSTEN = DebianSource(
    "r-cran-janeaustenr", "1.0.0-1",
    "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
    "MIT (the R package janeaustenr, Julia Silge); the novels are in the public domain",
    "Jane Austen's six novels (janeaustenr 1.0.0)")
HARVARD = DebianSource(
    "r-cran-stringr", "1.5.0-1",
    "f180d2e5f79b4aab871425898399d3bebbd6993262e692e166638a720879990e",
    "GPL-2 (the R package stringr as Debian licenses it); the sentences are the Harvard "
    "sentences of IEEE's 1969 Recommended Practice for Speech Quality Measurements",
    "the 720 Harvard sentences (stringr 1.5.0's data set `sentences`)")
DING = DebianSource(
    "dict-freedict-deu-eng", "2022.04.21-1",
    "52fa2ba6c73ebe84df0e4a7b8612a94a45e6026a157fc75f5ae36c4a1106e3db",
    "GPL-3+ (the Ding dictionary, Frank Richter 1995-2022 and Einhard Leichtfu\u00df 2020-2022, "
    "as Debian's copyright file for FreeDict's deu-eng licenses it)",
    "the English side of the Ding German-English dictionary 1.9 (FreeDict's deu-eng, 2022)")
SOURCES = (WORDNET, AUSTEN)  # the English of the tokenizer and of the runs' "english" rows


class SourceError(SystemExit):
    """A source cannot be had; the message says how to get it."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(source: DebianSource, cache: Path) -> Path:
    """The unpacked package folder, fetching and checking the ``.deb`` first if needed."""
    cache.mkdir(parents=True, exist_ok=True)
    deb = cache / source.deb_name
    if not deb.exists():
        try:
            result = subprocess.run(["apt-get", "download", f"{source.package}={source.version}"],
                                    cwd=cache, capture_output=True, text=True, timeout=600)
        except FileNotFoundError:
            result = None
        if result is None or result.returncode != 0 or not deb.exists():
            said = "" if result is None else (result.stderr or result.stdout).strip()[-400:]
            raise SourceError(
                f"cannot fetch the Debian package {source.package}={source.version} "
                f"({source.what}): {said or 'apt-get is not installed'}\n"
                f"Run `apt-get update` once and try again, or put {source.deb_name} (sha256 "
                f"{source.sha256}) into {cache}.")
    digest = sha256(deb.read_bytes())
    if digest != source.sha256:
        raise SourceError(f"{deb} has sha256 {digest}, not the pinned {source.sha256} of "
                          f"{source.package} {source.version}; delete it and run again")
    unpacked = cache / f"{source.package}_{source.version.replace(':', '_')}"
    if not (unpacked / ".unpacked").exists():
        try:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True,
                           capture_output=True, text=True, timeout=600)
        except (FileNotFoundError, subprocess.CalledProcessError) as error:
            raise SourceError(f"cannot unpack {deb} with dpkg-deb ({error}); on a machine "
                              f"without dpkg, unpack it by hand into {unpacked}") from error
        (unpacked / ".unpacked").write_text(source.sha256 + "\n")
    return unpacked


# -- WordNet ------------------------------------------------------------------------------

WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
_QUOTED = re.compile(r'"([^"]*)"')


def _printable(text: str) -> bool:
    return text.isascii() and text.isprintable()


def _as_sentence(text: str) -> str:
    """Capitalised and ending in a full stop unless it ends in other punctuation, as the
    held-out sentences are (WordNet writes its examples in lower case, unpunctuated)."""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def wordnet_texts(folder: Path) -> tuple[list[str], list[str]]:
    """(example sentences, definitions) of every synset, deduplicated in file order.

    A synset's line ends with ``| gloss``: definitions separated by ``;``, example sentences
    in double quotes. Kept: printable ASCII of at least 4 words.
    """
    examples: dict[str, None] = {}
    definitions: dict[str, None] = {}
    for name in WORDNET_FILES:
        for line in (folder / "usr/share/wordnet" / name).read_text("latin-1").splitlines():
            if line.startswith("  ") or " | " not in line:  # the licence header
                continue
            gloss = line.split(" | ", 1)[1].strip()
            for sentence in _QUOTED.findall(gloss):
                sentence = " ".join(sentence.split())
                if len(sentence.split()) >= 4 and _printable(sentence):
                    examples.setdefault(_as_sentence(sentence))
            for part in _QUOTED.sub("", gloss).split(";"):
                part = " ".join(part.split()).strip(" ,:")
                if len(part.split()) >= 4 and _printable(part):
                    definitions.setdefault(part[0].upper() + part[1:] + ".")
    return list(examples), list(definitions)


# -- Jane Austen (R's serialization of character vectors) ---------------------------------

AUSTEN_BOOKS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma",
                "northangerabbey", "persuasion")


def _r_character_vector(raw: bytes) -> list[str]:
    """The strings of one R character vector serialized in R's XDR format (version 2 or 3).

    The layout is in R Internals, "Serialization Formats": a header, then the vector's flags
    (type 16, STRSXP), its length, and per element a CHARSXP: flags, byte length, bytes.
    (The PyPI package rdata reads any R object, but needs pandas and xarray for it.)
    """
    if raw[:2] != b"X\n":
        raise ValueError("not R's XDR serialization")
    version, _, _ = struct.unpack_from(">3i", raw, 2)
    at = 14
    if version == 3:
        (n,) = struct.unpack_from(">i", raw, at)
        at += 4 + n  # the native encoding's name
    flags, length = struct.unpack_from(">2i", raw, at)
    if flags & 0xFF != 16:
        raise ValueError(f"expected a character vector (type 16), got type {flags & 0xFF}")
    at += 8
    strings = []
    for _ in range(length):
        _, n = struct.unpack_from(">2i", raw, at)
        at += 8
        strings.append("" if n < 0 else raw[at:at + n].decode("utf-8"))
        at += max(n, 0)
    return strings


def _r_lazy_objects(path: Path) -> list[bytes]:
    """The R serializations in an R package's lazy-load data file ``Rdata.rdb``: its objects
    one after the other, each a 4-byte big-endian length followed by a zlib stream."""
    blob, objects = path.read_bytes(), []
    while blob:
        (size,) = struct.unpack_from(">I", blob)
        stream = zlib.decompressobj()
        raw = stream.decompress(blob[4:])
        if len(raw) != size:
            raise ValueError(f"{path.name}: a blob's length does not match its header")
        objects.append(raw)
        blob = stream.unused_data
    return objects


def austen_novels(folder: Path) -> dict[str, list[str]]:
    """Each novel's lines, by title, from the package's lazy-load data file ``Rdata.rdb``.

    That file is the six character vectors one after the other (``_r_lazy_objects``).
    """
    novels: dict[str, list[str]] = {}
    for raw in _r_lazy_objects(folder / "usr/lib/R/site-library/janeaustenr/data/Rdata.rdb"):
        lines = _r_character_vector(raw)
        novels[next(line for line in lines if line.strip())] = lines
    if len(novels) != len(AUSTEN_BOOKS):
        raise ValueError(f"expected {len(AUSTEN_BOOKS)} novels in janeaustenr, found "
                         f"{sorted(novels)}")
    return novels


_HEADING = re.compile(r"^(VOLUME|CHAPTER|Chapter)\b|^[A-Z0-9 .,:;'-]+$")


def austen_paragraphs(folder: Path) -> list[str]:
    """The novels' paragraphs, each on one line: lines unwrapped, runs of spaces made one (as
    the held-out sentences are written), titles and chapter headings left out, ``_emphasis_``
    marks removed."""
    paragraphs: list[str] = []
    for lines in austen_novels(folder).values():
        current: list[str] = []
        for line in lines + [""]:
            line = line.strip()
            if not line or _HEADING.match(line) or line.startswith("By Jane Austen"):
                if current:
                    paragraphs.append(" ".join(" ".join(current).replace("_", "").split()))
                current = []
            else:
                current.append(line)
    return [p for p in paragraphs if _printable(p)]


# -- the Harvard sentences (a character vector of stringr's lazy-load data) ----------------

HARVARD_FIRST = "The birch canoe slid on the smooth planks."


def _r_lazy_vectors(path: Path) -> list[list[str]]:
    """Every character vector of an R package's lazy-load data file (objects of other types
    are skipped)."""
    vectors = []
    for raw in _r_lazy_objects(path):
        try:
            vectors.append(_r_character_vector(raw))
        except ValueError:
            pass
    return vectors


def harvard_sentences(folder: Path) -> list[str]:
    """The 720 Harvard sentences: short everyday sentences written for speech tests ("The
    birch canoe slid on the smooth planks."), the English the held-out texts are closest to."""
    path = folder / "usr/lib/R/site-library/stringr/data/Rdata.rdb"
    found = [v for v in _r_lazy_vectors(path) if v and v[0] == HARVARD_FIRST]
    if len(found) != 1 or len(found[0]) != 720:
        raise ValueError(f"{path}: expected one vector of 720 sentences starting "
                         f"{HARVARD_FIRST!r}")
    return [" ".join(s.split()) for s in found[0] if _printable(s)]


# -- Ding's English sentences (the example sentences of a German-English dictionary) ---------

DING_DICT = "usr/share/dictd/freedict-deu-eng.dict.dz"
# in the dictd text: '      "Es regnete jeden Tag"  - It rained every day., It rained day in, day out.'
_DING_EXAMPLE = re.compile(r'^ *"[^"]+"  - (.+)$')
# a German sentence as a headword, its phonetics after it; the next line is its English
_DING_SENTENCE_HEADWORD = re.compile(r'^\S.*[.?!] /[^/]*/$')
_DING_LABEL = re.compile(r"\s*\[[^\]]*\]")                  # [fig.], [Br.], [techn.]
_DING_ALTERNATIVES = re.compile(r"(?<=[.?!]), (?=[A-Z])")   # "Sentence one., Sentence two."
_DING_SLASHED = re.compile(r"\b([\w'-]+)(?:/[\w'-]+)+")      # "levelled out/plateaued"
_DING_NOTATION = (" / ", "sb.", "sth.", "|")                 # a dictionary phrase, not a sentence


def ding_english(text: str) -> list[str]:
    """The English sentences of the Ding dictionary's dictd text, deduplicated in file order:
    the translations of its example phrases and of its sentence headwords. Each kept sentence
    is capitalised, ends in . ? or !, has at least 3 words and is printable ASCII; labels in
    brackets are removed, alternatives ("It rained every day., It rained day in, day out.")
    become sentences of their own, and of words written with slashes the first is kept."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        example = _DING_EXAMPLE.match(line)
        if example:
            found.append(example.group(1))
        elif _DING_SENTENCE_HEADWORD.match(line) and i + 1 < len(lines):
            following = lines[i + 1]
            if following and (not following[0].isspace() or following.startswith(" [")):
                found.append(following)
    kept, seen = [], set()
    for item in found:
        for sentence in _DING_ALTERNATIVES.split(_DING_LABEL.sub("", item).strip()):
            sentence = " ".join(sentence.split())
            if any(mark in sentence for mark in _DING_NOTATION):
                continue
            sentence = _DING_SLASHED.sub(r"\1", sentence)
            if (sentence[:1].isupper() and sentence[-1:] in ".?!" and len(sentence.split()) >= 3
                    and _printable(sentence) and sentence not in seen):
                seen.add(sentence)
                kept.append(sentence)
    return kept


def ding_sentences(folder: Path) -> list[str]:
    """Everyday modern English, mostly British: "I had just got off to sleep when my dogs
    started barking." (``ding_english`` of the dictionary in the unpacked package)."""
    path = folder / DING_DICT
    return ding_english(gzip.decompress(path.read_bytes()).decode("utf-8"))


# -- the texts training reads -------------------------------------------------------------

TEXTS = {"wordnet_examples": "WordNet 3.0's example sentences (text between double quotes in the "
                             "glosses of data.noun/verb/adj/adv), >= 4 words, printable ASCII, "
                             "capitalised, a full stop added where none ends it, deduplicated, "
                             "one per line",
         "wordnet_definitions": "WordNet 3.0's definitions (the glosses without their examples, "
                                "split at ';'), >= 4 words, one per line",
         "austen": "the six novels of Jane Austen, paragraphs unwrapped onto one line, runs of "
                   "spaces made one, headings and _emphasis_ marks removed"}
# name: (package, reader, what); read only when asked (load_texts(extra=...))
EXTRA_TEXTS = {"harvard_sentences": (HARVARD, harvard_sentences,
                                     "the 720 Harvard sentences of stringr's data set "
                                     "`sentences`, runs of spaces made one, one per line"),
               "ding_sentences": (DING, ding_sentences,
                                  "the English of the Ding dictionary's example phrases and "
                                  "sentence headwords (the dictd text of FreeDict's deu-eng): "
                                  "labels in brackets removed, alternatives split, of slashed "
                                  "words the first, phrases with sb./sth. dropped; capitalised, "
                                  "ending in . ? or !, >= 3 words, printable ASCII, "
                                  "deduplicated, one per line")}


def load_texts(cache: Path = DEFAULT_CACHE, extra: tuple[str, ...] = ()
               ) -> tuple[dict[str, bytes], list[dict]]:
    """Each English source as one stream of bytes (one sentence or paragraph per line), and a
    table of what was used: package, version, licence, the .deb's and each text's sha256.
    ``extra``: names of ``EXTRA_TEXTS`` to read too, after the three of ``SOURCES``."""
    unknown = sorted(set(extra) - set(EXTRA_TEXTS))
    if unknown:
        raise ValueError(f"unknown corpus texts {unknown}; the extra texts are "
                         f"{', '.join(EXTRA_TEXTS)}")
    wordnet, austen = fetch(WORDNET, cache), fetch(AUSTEN, cache)
    examples, definitions = wordnet_texts(wordnet)
    texts = {"wordnet_examples": examples, "wordnet_definitions": definitions,
             "austen": austen_paragraphs(austen)}
    origin = {"wordnet_examples": WORDNET, "wordnet_definitions": WORDNET, "austen": AUSTEN}
    what = dict(TEXTS)
    for name in extra:
        source, read, what[name] = EXTRA_TEXTS[name]
        texts[name], origin[name] = read(fetch(source, cache)), source
    streams = {name: ("\n".join(lines) + "\n").encode("ascii") for name, lines in texts.items()}
    table = [{"name": name, "text": what[name], "package": origin[name].package,
              "version": origin[name].version, "deb_sha256": origin[name].sha256,
              "license": origin[name].license, "source": origin[name].what,
              "lines": len(texts[name]), "bytes": len(stream), "sha256": sha256(stream)}
             for name, stream in streams.items()]
    return streams, table


def main() -> int:
    streams, table = load_texts()
    for row in table:
        print(f"{row['name']:20} {row['bytes']:>9,} bytes  {row['lines']:>7,} lines  "
              f"{row['sha256'][:16]}  {row['package']} {row['version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
