"""Run the Python examples of the hand-written docs pages, so they can never rot.

Every ```python fenced block of a page runs, in page order, in one namespace per page (later
blocks use names defined by earlier ones, as a reader would in one session). A block preceded
by the line ``<!-- no-run -->`` is skipped; keep those rare.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
PAGES = [
    "index.md", "tracer.md", "model.md", "markers.md",
    "pt/index.md", "pt/tracer.md", "pt/model.md", "pt/markers.md",
]
NO_RUN = "<!-- no-run -->"
FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the block's first code line
    code: str
    run: bool


def python_blocks(page: str) -> list[Block]:
    """The fenced Python blocks of ``page``, dedented (blocks may sit inside admonitions)."""
    lines = (DOCS_DIR / page).read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE_OPEN.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].strip().split(" ")[0].lstrip(".").lower()
        closing = re.compile(rf"^{re.escape(indent)}{fence[0]}{{{len(fence)},}}[ \t]*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        if end == len(lines):
            raise AssertionError(f"{page}:{i + 1}: code fence is never closed")
        if language in ("python", "py"):
            previous = next((line.strip() for line in reversed(lines[:i]) if line.strip()), "")
            code = textwrap.dedent("\n".join(lines[i + 1:end]))
            blocks.append(Block(page, i + 2, code, run=previous != NO_RUN))
        i = end + 1
    return blocks


def test_the_pages_exist_and_have_runnable_examples():
    for page in PAGES:
        assert (DOCS_DIR / page).is_file(), f"docs/{page} is missing"
        blocks = python_blocks(page)
        assert any(block.run for block in blocks), f"docs/{page} has no runnable python block"


def test_english_and_portuguese_pages_run_the_same_number_of_blocks():
    # the two languages teach the same examples; a block dropped in one is a lost example
    for page in PAGES:
        if page.startswith("pt/"):
            continue
        en = [b.run for b in python_blocks(page)]
        pt = [b.run for b in python_blocks(f"pt/{page}")]
        assert en == pt, f"docs/{page} and docs/pt/{page} differ in their python blocks"


@pytest.mark.parametrize("page", PAGES)
def test_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    namespace: dict = {"__name__": f"docs_example_{page.replace('/', '_')}"}
    for block in python_blocks(page):
        if not block.run:
            continue
        # pad with blank lines so a traceback points at the page's own line numbers
        source = "\n" * (block.line - 1) + block.code
        exec(compile(source, str(DOCS_DIR / page), "exec"), namespace)
