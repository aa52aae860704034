"""Numbers are written as each language writes them: 0.8865 in English, 0,8865 in Portuguese.

The issue's complaint was a Portuguese sentence with both separators in it; the rule checked
here is that no generated Portuguese page writes a decimal point in its prose.
"""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from docs_build.text.markdown import fmt, number, grouped
from docs_build.text.numbers import format_value

GENERATED = ["model-card/", "journey/", "replay/", "steps/"]
# a number with a decimal point, not part of a longer dotted run (0.27.7) or a word (L1H0)
DECIMAL_POINT = re.compile(r"(?<![\w.,-])-?\d+\.\d+(?:e[-+]?\d+)?(?![\w.]\d|\d)")
# a version after a product's name ("WordNet 3.0", "Python 3.10") is a name, not a decimal
VERSION = re.compile(r"[A-Z][A-Za-z]+ $")


def prose(page: str) -> str:
    """The text a reader reads as sentences: the article without code, math, pictures, tables."""
    article = re.search(r"<article.*?</article>", page, re.S).group(0)
    for tag in ("script", "style", "pre", "code", "math", "svg", "table", "template"):
        article = re.sub(rf"<{tag}\b.*?</{tag}>", " ", article, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", article))


def english_decimals(text: str) -> list[str]:
    return [" ".join(text[max(0, m.start() - 50):m.end() + 10].split())
            for m in DECIMAL_POINT.finditer(text)
            if not VERSION.search(text[max(0, m.start() - 30):m.start()])]


def test_a_number_in_each_language():
    assert format_value(0.88651) == "0.8865" and format_value(0.88651, ",") == "0,8865"
    assert format_value(np.float32(-1.158e-05), ",") == "-1,158e-05"
    assert format_value(7, ",") == "7" and format_value(float("-inf"), ",") == "−∞"
    pt, en = {"number.decimal": ","}, {"number.decimal": "."}
    assert number(pt, 12.78) == "12,78" and number(en, 12.78) == "12.78"
    # fmt writes float fields in the sentence's language; text fields stay as given
    ui = {**pt, "k": "D é {d} em “{prompt}”"}
    assert fmt(ui, "k", d=np.float32(12.78), prompt="v1.5") == "D é 12,78 em “v1.5”"


def test_the_rule_sees_an_english_decimal():
    assert english_decimals("score 0.8865 e 1,5") == ["score 0.8865 e 1,5"]
    assert english_decimals("Python 3.10 e Pyodide 0.27.7, 12,78") == []


@pytest.mark.parametrize("url", GENERATED)
def test_portuguese_pages_write_decimal_commas(site, url):
    pages = [site.path_of("pt/" + url)]
    if url == "steps/":
        pages += sorted((site.dir / "pt" / "steps").glob("*/index.html"))
    found = {str(p.relative_to(site.dir)): english_decimals(prose(p.read_text(encoding="utf-8")))
             for p in pages}
    found = {page: hits for page, hits in found.items() if hits}
    assert not found, found


def test_english_pages_write_decimal_points(site):
    text = prose(site.html("model-card/"))
    assert DECIMAL_POINT.search(text) and not re.search(r"\b0,\d", text)


def test_large_counts_are_grouped_as_each_language_groups_them(site):
    """434,816 parameters reads as a decimal in Portuguese: there thousands are set apart
    by a narrow no-break space (the SI's and Inmetro's rule), 434 816."""
    count = site.config.plugins["glassllm"].inputs.run.model.parameter_count
    assert count >= 1000
    english = prose(site.html("model-card/"))
    portuguese = prose(site.html("pt/model-card/"))
    assert f"{count:,} parameters" in english
    assert f"{count:,}".replace(",", "\u202f") + " parâmetros" in portuguese
    assert f"{count:,}" not in portuguese
    assert grouped({"number.decimal": ",", "number.group": "\u202f"}, 1484779) == "1\u202f484\u202f779"


def test_the_scripts_decimal_marks_are_the_ui_files():
    """heatmap.js (and through it sampling.js and stepview.js) writes numbers with
    DECIMAL_MARKS; each language's mark there is its ui.yml's number.decimal, and so are the
    folders' own copies that cannot import it (the run panel's, the replay page's)."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    script = (root / "docs_build" / "assets" / "heatmap.js").read_text(encoding="utf-8")
    marks = dict(re.findall(r'(\w+): "(.)"', re.search(r"DECIMAL_MARKS = \{(.*?)\}", script).group(1)))
    files = {lang.name: yaml.safe_load(lang.joinpath("ui.yml").read_text(encoding="utf-8"))
             for lang in (root / "docs" / "_texts").iterdir() if lang.is_dir()}
    assert marks == {code: ui["number.decimal"] for code, ui in files.items()}
    panel = (root / "docs_build" / "assets" / "runtime" / "panel.js").read_text(encoding="utf-8")
    assert 'startsWith("pt")' in panel and 'replace(".", ",")' in panel  # its own copy of pt's
    # the replay player's (its page's strings: docs/replay.md, docs/pt/replay.md)
    for code, page in (("en", "replay.md"), ("pt", "pt/replay.md")):
        text = (root / "docs" / page).read_text(encoding="utf-8")
        block = re.search(r'<script type="application/json" class="glassllm-replay-strings">(.*?)</script>',
                          text, re.S).group(1)
        assert json.loads(block)["decimal"] == files[code]["number.decimal"], page


@pytest.mark.parametrize("step", ["embed", "attn.softmax", "probs", "loss.grad"])
def test_portuguese_tables_and_worked_math_write_decimal_commas(site, step):
    """The values, statistics, sampling and worked-check tables, and the worked arithmetic
    (KaTeX's MathML numbers), of a Portuguese step page; the English page keeps its points."""
    for lang, mark, other in (("pt/", ",", "."), ("", ".", ",")):
        page = site.html(f"{lang}steps/{step}/")
        article = re.search(r"<article.*?</article>", page, re.S).group(0)
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c))
                 for c in re.findall(r"<td\b[^>]*>(.*?)</td>", article, re.S)]
        numbers = [c for c in cells if re.fullmatch(r"-?\d+[.,]\d+(e[-+]\d+)?", c.strip())]
        assert numbers, (lang, step)
        assert all(mark in n and other not in n for n in numbers), (lang, step, numbers[:5])
        worked = re.search(r'<div class="gl-worked".*?<table class="gl-worked-checks">', article, re.S)
        if worked:
            digits = re.findall(r"<mn>([^<]*)</mn>", worked.group(0))
            assert not [d for d in digits if re.search(rf"\d{re.escape(other)}\d", d)], (lang, step)
