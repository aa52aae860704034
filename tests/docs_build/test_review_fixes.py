"""The teacher's review corrections (issue 30, item 5) on the built site: the q/k/v and gate/up
pages show and link the fused product their line slices; the replay says why its token count
differs from the catalog's; the model page explains the code's (1, m, d) against the pages'
(n, d) once."""

from __future__ import annotations

import re
from pathlib import Path

from docs_build.html.fused import fused_product
from docs_build.html.source_code import statement_at
from glassllm.steps import scan_markers

from .conftest import LANGS, text_of

ROOT = Path(__file__).resolve().parents[2]
FUSED = {"attn.q": "qkv", "attn.k": "qkv", "attn.v": "qkv", "mlp.gate": "gate_up",
         "mlp.up": "gate_up"}


def product_line(code: str, name: str) -> int:
    """The line that computes ``name`` by one matrix product, found by its text."""
    return next(k for k, line in enumerate(code.split("\n"), start=1)
                if line.strip().startswith(f"{name} = linear("))


def test_the_fused_steps_and_only_they_slice_a_product():
    for step_id, place in scan_markers().items():
        code = (ROOT / place["file"]).read_text(encoding="utf-8")
        found = fused_product(code, *statement_at(code, place["line"]))
        if step_id in FUSED:
            assert found == (FUSED[step_id], product_line(code, FUSED[step_id])), step_id
        else:
            assert found is None, step_id


def test_fused_step_pages_show_and_link_the_product(site):
    places = scan_markers()
    for code_, (prefix, _) in LANGS.items():
        for step_id, name in FUSED.items():
            place = places[step_id]
            line = product_line((ROOT / place["file"]).read_text(encoding="utf-8"), name)
            page = site.html(f"{prefix}steps/{step_id}/")
            excerpt = re.search(r'<div class="highlight gl-source gl-excerpt".*?</div>', page, re.S).group(0)
            assert f'data-line="{line}"' in excerpt and f'data-line="{place["line"]}"' in excerpt
            links = re.findall(rf'href="([^"]*#L{line})"', page)
            assert any(site.path_of(site.resolve(f"{prefix}steps/{step_id}/", h)).is_file()
                       for h in links), (code_, step_id)
            assert name in text_of(page), (code_, step_id)
        out = site.html(f"{prefix}steps/attn.out/")
        assert "qkv" not in text_of(out) and "gate_up" not in text_of(out)


def test_the_replay_says_why_it_has_more_tokens_than_the_catalog(site):
    for code_, (prefix, _) in LANGS.items():
        catalog = text_of(site.html(f"{prefix}steps/"))
        example = int(re.search(r"\((\d+) tokens", catalog).group(1))
        replay = text_of(site.html(f"{prefix}replay/"))
        counts = re.findall(r"(\d+) tokens", replay)
        if any(int(c) != example for c in counts):
            assert "example.tokens" in replay and str(example) in replay, code_


def test_the_model_page_explains_the_batch_axis_once():
    for page in ("docs/model.md", "docs/pt/model.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert text.count("$(1, m, d)$") == 1 and "$(n, d)$" in text, page
