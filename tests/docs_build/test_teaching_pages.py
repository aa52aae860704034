"""The pages for teachers (docs_build/pages/prose_pages.py): the Llama vs GPT-2 comparison, point
by point, each point linked to the step pages it changes, with the demo's numbers from its
config (recomputed here from the model's weight arrays and glassllm's own rule); the lecture
path with both plans; both in both languages and in the navigation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_build.data.design_facts import default_mlp_width
from docs_build.errors import DocsBuildError
from docs_build.pages.prose_pages import keep_blocks
from glassllm import GlassLM
from glassllm.config import default_mlp_width as engine_rule

from .conftest import LANGS, text_of
from .test_exercises import params_of

ROOT = Path(__file__).resolve().parents[2]
# each point of the comparison, in order: the step pages its section links
POINTS = (
    ("steps/attn.norm/", "steps/mlp.norm/", "steps/final_norm/"),  # LayerNorm -> RMSNorm
    ("steps/mlp.gate/", "steps/mlp.up/", "steps/mlp.act/", "steps/mlp.down/"),  # SwiGLU
    ("steps/embed/", "steps/attn.q_rope/", "steps/attn.k_rope/"),  # RoPE
    ("steps/attn.k/", "steps/attn.v/"),  # grouped-query attention
    ("steps/embed/", "steps/logits/"),  # tied or not
    ("steps/embed/", "steps/logits/", "steps/probs/", "steps/sample/"),  # bytes
)


def test_the_width_rule_is_the_engines():
    for d in (32, 64, 96, 128, 288, 576):
        assert default_mlp_width(d) == engine_rule(d)


def test_a_block_is_kept_only_under_its_condition():
    class Config:
        tie_word_embeddings, n_heads, n_kv_heads = False, 4, 2
    text = "a\n<!-- glassllm:if tied -->\nT\n<!-- glassllm:end -->\n<!-- glassllm:if untied -->\nU\n<!-- glassllm:end -->\nb"
    assert keep_blocks(text, Config, "x") == "a\nU\nb"
    with pytest.raises(DocsBuildError, match="unknown condition"):
        keep_blocks("<!-- glassllm:if big -->x<!-- glassllm:end -->", Config, "x")
    with pytest.raises(DocsBuildError, match="without its"):
        keep_blocks("<!-- glassllm:if tied -->x", Config, "x")


@pytest.fixture(scope="module")
def model():
    from docs_build.engine.settings import settings_from_options
    from mkdocs.config import load_config
    config = load_config(str(ROOT / "mkdocs.yml"))
    settings = settings_from_options(dict(config.plugins["glassllm"].config.example), ROOT)
    return GlassLM.from_pretrained(settings.checkpoint)


def test_the_gpt2_page_compares_point_by_point_with_the_models_numbers(site, model):
    c = model.config
    for code, (prefix, _) in LANGS.items():
        page = site.html(f"{prefix}llama-vs-gpt2/")
        article = re.search(r"<article.*?</article>", page, re.S).group(0)
        sections = re.split(r"<h2[^>]*>", article)[1:]
        assert len(sections) == 7, code  # six changes and what stayed the same
        for section, steps in zip(sections, POINTS):
            links = {site.resolve(f"{prefix}llama-vs-gpt2/", h).split("#")[0]
                     for h in re.findall(r'href="([^"]+)"', section)}
            for step in steps:
                assert f"{prefix}{step}" in links, (code, step)
        text = text_of(article).replace("\u202f", "").replace(".", "").replace(",", "")
        for number in (params_of(model), 3 * c.d_model * c.d_ff, engine_rule(c.d_model),
                       c.max_len * c.d_model,
                       2 * (c.n_heads - c.n_kv_heads) * c.head_dim * c.d_model,
                       2 * c.n_layers * c.n_kv_heads * c.head_dim):
            assert str(number) in text, (code, number)
        untied_words = {"en": "is false in its config", "pt": "é falso na sua configuração"}[code]
        assert (untied_words in text_of(article)) == (not c.tie_word_embeddings), code


def test_the_lecture_path_has_both_plans_through_the_site(site):
    for code, (prefix, _) in LANGS.items():
        page = site.html(f"{prefix}teaching/")
        tables = re.findall(r"<table.*?</table>", page, re.S)
        assert len(tables) == 2, code  # 90 and 45 minutes
        for table, last in zip(tables, ("88–90", "40–45")):
            assert last in table, code
            links = re.findall(r'href="([^"]+)"', table)
            assert all(site.path_of(site.resolve(f"{prefix}teaching/", h)).is_file()
                       for h in links), code
        assert "steps/attn.softmax/" in " ".join(re.findall(r'href="([^"]+)"', tables[0]))


def test_both_pages_are_in_the_navigation_of_both_languages():
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in ("llama-vs-gpt2.md", "teaching.md"):
        assert f"      - {page}" in text and f"      - pt/{page}" in text
