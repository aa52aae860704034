"""The Portuguese texts say in Portuguese what they can: the issue found 'build', 'forward',
'Scores' and 'Gate/up/down' left in English. Code, math, link targets and placeholders keep
their names, and a gloss in italics (*forward*, *gate*) names the English term once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([*(ROOT / "docs" / "_texts" / "pt").rglob("*.md"), *(ROOT / "docs" / "_texts" / "pt").glob("*.yml"),
                *(ROOT / "docs" / "pt").glob("*.md")])
# what keeps an English name: code, math, link targets, placeholders, JSON keys, tags
KEPT = re.compile(r"`[^`]*`|\$[^$\n]*\$|\]\([^)]*\)|\{\{[^}]*\}\}|\{[^}\s]*\}|\"[a-zA-Z_]+\":|<[^>]+>")
ENGLISH = re.compile(r"(?<![\w./{-])(builds?|forwards?|scores?|gates?|up|down)\b(?![_.]\w)", re.I)


def prose_lines(path: Path):
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("#") and path.suffix == ".yml":
            continue
        if path.suffix == ".yml":
            line = line.partition(":")[2]  # the key is a name, the value is the text
        yield number, KEPT.sub(" ", line)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_english_term_where_portuguese_has_one(path):
    found = [(n, m.group(0)) for n, line in prose_lines(path) for m in ENGLISH.finditer(line)
             if not line[max(0, m.start() - 1):m.start()] == "*"]  # *forward*: the gloss
    assert not found, found
