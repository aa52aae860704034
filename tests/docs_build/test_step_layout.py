"""Each step page shows the equation and the source lines that compute it, highlighted and
linked, before the notes that explain them (issue 19: the reader sees what is computed, and
where, before being told why)."""

from __future__ import annotations

import ast
import html
import re

import pytest
import yaml

from glassllm import STEPS
from glassllm.steps import scan_markers

from .conftest import LANGS, ROOT, text_of
from .test_review_fixes import FUSED, product_line


def statement(path, line: int) -> list[str]:
    """The lines of the statement that holds ``line``, read with ast, independently of the
    build: the smallest statement whose lines include it."""
    code = (ROOT / path).read_text(encoding="utf-8")
    spans = [(node.end_lineno - node.lineno, node.lineno, node.end_lineno)
             for node in ast.walk(ast.parse(code)) if isinstance(node, ast.stmt)
             and node.lineno <= line <= node.end_lineno]
    _, first, last = min(spans)
    return code.splitlines()[first - 1:last]


@pytest.mark.parametrize("lang", LANGS)
def test_equation_and_marked_source_come_before_the_notes(site, lang):
    markers = scan_markers()
    ui = yaml.safe_load((ROOT / "docs" / "_texts" / lang / "ui.yml").read_text(encoding="utf-8"))
    prefix = LANGS[lang][0]
    for step_id in STEPS:
        page = site.html(f"{prefix}steps/{step_id}/")
        article = re.search(r"<article.*?</article>", page, re.S).group(0)
        headings = [text_of(h).rstrip("¶").strip() for h in re.findall(r"<h2[^>]*>(.*?)</h2>", article, re.S)]
        assert headings[0] == ui["equation.title"], (step_id, headings)
        notes_at = article.index("<h2", article.index("<h2") + 4)  # the first note's heading
        before_notes = article[:notes_at]
        assert '<span class="katex' in before_notes or "<math" in before_notes, step_id
        excerpt = re.search(r'<div class="highlight gl-source gl-excerpt"[^>]*>(.*?)</div>',
                            before_notes, re.S)
        assert excerpt, step_id
        shown = [html.unescape(re.sub(r"<[^>]+>", "", ln)) for ln in excerpt.group(1).split("\n")]
        shown = [ln for ln in shown if ln.strip()]
        file, line = markers[step_id]["file"], markers[step_id]["line"]
        expected = statement(file, line)
        if step_id in FUSED:  # the excerpt starts at the fused product the line slices
            code = (ROOT / file).read_text(encoding="utf-8").splitlines()
            start = product_line("\n".join(code), FUSED[step_id])
            expected = code[start - 1:code.index(expected[0])] + expected
        assert shown == expected, step_id
        assert any(f"# @step {step_id}" in ln for ln in shown), step_id
        assert excerpt.group(1).count('class="gl-line gl-marker"') == len(shown)  # highlighted
        module = file[:-3]
        assert re.search(rf'href="[^"]*source/{re.escape(module)}/#L{line}"', before_notes), step_id
