"""The home page's reading order and the model page's Notation section, in both languages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from glassllm.steps import STEPS

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
NOTATION = {"en": ("model.md", "Notation"), "pt": ("pt/model.md", "Notação")}
SIZES = {"en": "Sizes and symbols", "pt": "Tamanhos e símbolos"}
READING = {"en": ("index.md", "A reading order", "execution order"),
           "pt": ("pt/index.md", "Uma ordem de leitura", "ordem de execução")}
KEPT_COMMANDS = {"gamma", "beta", "Theta", "ell", "epsilon"}


def section(page: str, title: str) -> str:
    """The text under the ``## title`` heading of a docs page, up to the next ``##``."""
    text = (DOCS_DIR / page).read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    bodies = [body for heading, body in zip(parts[1::2], parts[2::2]) if heading.strip() == title]
    assert len(bodies) == 1, f"{page} needs exactly one '## {title}' section"
    return bodies[0]


def math_spans(text: str) -> list[str]:
    return re.findall(r"\$([^$]+)\$", text)


def symbols(latex: str) -> set[str]:
    """The letters a LaTeX string uses as symbols: words in \\text{}, \\mathrm{} and the like,
    the labels of W_Q, W_O..., and Euler's e are not symbols; Greek letters and ℒ are."""
    found = {"ℒ"} if r"\mathcal{L}" in latex else set()
    latex = latex.replace(r"\mathcal{L}", " ")
    latex = re.sub(r"\\(?:operatorname|mathrm|text|begin|end)\{[^{}]*\}", " ", latex)
    latex = re.sub(r"W_(?:[A-Z]|\{[^{}]*\})", "W", latex)
    found |= {name for name in re.findall(r"\\([A-Za-z]+)", latex) if name in KEPT_COMMANDS}
    found |= set(re.findall(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", " ", latex))) - {"e"}
    return found


@pytest.mark.parametrize("lang", NOTATION)
def test_notation_section_defines_every_symbol_of_the_equations(lang):
    page, title = NOTATION[lang]
    stated = set()
    for span in math_spans(section(page, title) + section(page, SIZES[lang])):
        stated |= symbols(span)
    for step_id, info in STEPS.items():
        missing = symbols(info.latex) - stated
        assert not missing, f"{page}: the Notation section never introduces {missing} ({step_id})"


def test_notation_section_is_the_same_in_both_languages():
    en, pt = (math_spans(section(*NOTATION[lang])) for lang in ("en", "pt"))
    assert en == pt
    for rule in (r"g(r) = \lfloor r\,H_{kv}/H \rfloor", "x^{(0)}", "x^{(l+1/2)}", "x^{(L)}",
                 r"\Theta_{i,c} = i\,\beta^{-2\,(c \bmod d_h/2)/d_h}", "k = V"):
        assert rule in en, rule


def reading_order(lang: str) -> list[str]:
    page, title, _ = READING[lang]
    links = re.findall(r"\]\((journey\.md|steps/[^)#]+\.md|replay\.md|model\.md)\)",
                       section(page, title))
    return [link.removeprefix("steps/").removesuffix(".md") for link in links]


@pytest.mark.parametrize("lang", READING)
def test_home_page_reading_order_starts_with_the_journey_and_follows_the_data(lang):
    order = reading_order(lang)
    assert order[:2] == ["journey", "model"] and order[-1] == "replay"
    assert order[2:-1] == list(STEPS), "every step page once, in the order the data flows"


def test_reading_order_is_the_same_in_both_languages_and_names_the_nav_order():
    assert reading_order("en") == reading_order("pt")
    for lang, (page, title, execution_order) in READING.items():
        assert execution_order in section(page, title), lang
