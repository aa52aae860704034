"""The plain functions under the plugin: formatting, tables, heatmaps, escaping, languages."""

from __future__ import annotations

import re
from pathlib import Path

import markdown
import numpy as np
import pytest

from docs_build.data.example import load_example
from docs_build.engine.settings import ExampleSettings
from docs_build.errors import DocsBuildError, TextError
from docs_build.html import colours, heatmap, slices, stats, tables
from docs_build.html.math import display_math
from docs_build.pages import step_page
from docs_build.pages.stash import Stash
from docs_build.text import languages, numbers
from docs_build.text.markdown import md_code, md_escape
from docs_build.text.ui import UI_KEYS, load_ui
from docs_build.text.step_texts import StepText, parse_step_text
from glassllm.steps import PACKAGE_DIR

from .conftest import ROOT, engine_labels, engine_steps

STEPS, LABELS = engine_steps(), engine_labels()

MD_EXTENSIONS = ["attr_list", "md_in_html", "tables", "toc", "pymdownx.arithmatex"]
MD_CONFIG = {"pymdownx.arithmatex": {"generic": True}}


def to_html(md_text: str) -> str:
    return markdown.markdown(md_text, extensions=MD_EXTENSIONS, extension_configs=MD_CONFIG)


def test_bounded_keeps_both_ends_and_marks_the_cut():
    assert numbers.bounded(5, 12) == [0, 1, 2, 3, 4]
    assert numbers.bounded(20, 6) == [0, 1, 2, None, 17, 18, 19]


def test_token_labels_are_readable_and_escaped_later():
    # the engine's labels (glassllm.tokenizer.token_label): newline ⏎, other bytes escaped
    assert [LABELS(t) for t in (84, 32, 10, 0, 200)] == ["T", "␣", "⏎", "\\x00", "\\xc8"]
    assert LABELS.text([72, 105, 32, 10]) == "Hi ⏎"


def test_colour_scales_are_diverging_for_signed_and_sequential_for_non_negative_data():
    signed = colours.colour_scale(np.array([-2.0, 1.0]))
    assert signed.diverging and signed.ticks == ("-2", "0", "2")
    assert signed.colour(0.0) == "#f7f7f7"
    assert signed.colour(-2.0) == "#2166ac" and signed.colour(2.0) == "#b2182b"
    probs = colours.colour_scale(np.array([0.0, 0.5, 0.25]))
    assert not probs.diverging and probs.colour(0.0) == "#f7fbff" and probs.colour(0.5) == "#08306b"
    # masked cells (the −∞ of the causal mask) do not stretch the scale
    masked = np.array([[1.0, -np.inf], [0.5, 2.0]])
    scale = colours.colour_scale(masked, masked=np.isinf(masked))
    assert not scale.diverging and scale.high == 2.0


def test_stats_count_non_finite_values_and_skip_them_in_min_max_mean():
    st = stats.stats(np.array([[1.0, -np.inf], [np.nan, 3.0]], dtype=np.float32))
    assert (st.minimum, st.maximum, st.mean) == ("1", "3", "2")
    assert (st.nonfinite, st.neg_inf, st.nan) == (2, 1, 1)
    assert stats.stats(np.array(7)).mean == "7"


def test_table_escapes_labels_cuts_with_ellipsis_and_marks_masked_cells():
    matrix = np.arange(20 * 20, dtype=np.float32).reshape(20, 20)
    matrix[np.triu_indices(20, 1)] = -np.inf
    matrix[19, 0] = np.inf  # not masked: the table points it out
    tokens = [ord("<")] * 20
    s = slices.make_slice(STEPS["attn.mask"], 0, 1, matrix, tokens, LABELS)
    html = tables.table_html(s, tables.TableStrings("t", "{n} more", "{n} more"), 6, 6)
    assert "<tr><th>&lt;</th>" in html and "<th><</th>" not in html
    assert html.count('<th class="gl-ellipsis"') == 1 and html.count('class="gl-ellipsis-row"') == 1
    assert 'data-rows="0 1 2 17 18 19" data-cols="0 1 2 17 18 19"' in html
    first, last = (re.findall(r"<td[^>]*>[^<]*</td>", row) for row in
                   re.findall(r"<tr><th>.*?</tr>", html.split("<tbody>")[1])[::5])
    # the mask's −∞ is marked as masked; a non-finite value elsewhere stands out
    assert first[-1] == '<td class="gl-masked">−∞</td>'  # (0, 19)
    assert last[0] == '<td class="gl-nonfinite">+∞</td>'  # (19, 0)
    assert last[-1] == "<td>399</td>"  # (19, 19)
    assert 'data-step="attn.mask" data-layer="0" data-head="1"' in html


def test_vocab_table_shows_the_example_tokens_and_probability_table_the_top_ones():
    logits = np.zeros((3, 256), dtype=np.float32)
    logits[:, 99] = 5
    s = slices.make_slice(STEPS["logits"], None, None, logits, [104, 105, 33], LABELS)
    html = tables.table_html(s, tables.TableStrings("t", "{n} more", "{n} more"), 12, 12,
                             focus_cols=[104, 99])
    assert re.findall(r'<thead><tr>.*?</tr>', html)[0].count("<th>") == 3
    assert re.findall(r'<th>([^<]*)</th>', re.findall(r'<thead>.*?</thead>', html)[0]) == ["t", "c", "h"]
    assert 'title="254 more"' in html
    probs = np.full(256, 0.001, dtype=np.float32)
    probs[65] = 0.7
    grid = slices.make_slice(STEPS["probs"], None, None, probs, [], LABELS)
    table = tables.table_html(grid, tables.TableStrings("t", "{n} more", "{n} more"), 3, 3)
    assert re.findall(r'<tr><th scope="row">[^<]*</th><td>(\d+)</td>', table) == ["65", "0", "1"]  # ties by token ID
    assert 'title="253 more"' in table


def test_heatmap_is_inline_svg_with_legend_and_hatched_masked_cells():
    matrix = np.array([[0.5, -np.inf], [-0.25, 1.0]], dtype=np.float32)
    s = slices.make_slice(STEPS["attn.mask"], 0, 0, matrix, [65, 66], LABELS)
    html = heatmap.heatmap_html(s, heatmap.HeatmapStrings("t <x>", "masked", "nf", "rows", "cols"), "u1")
    assert html.startswith('<figure class="gl-heatmap"') and "<svg" in html and "<img" not in html
    assert 'aria-label="t &lt;x&gt;"' in html
    assert html.count('fill="url(#gl-hatch-u1)"') == 1  # one path over the masked cells
    assert 'class="gl-legend"' in html and "masked" in html
    # the cells: one PNG, a pixel per cell, each the colour of its value on the scale
    pixels = png_pixels(re.search(r'href="data:image/png;base64,([^"]*)"', html).group(1))
    scale = colours.colour_scale(matrix, s.masked)
    assert pixels.shape == (2, 2, 3)
    for (i, j) in [(0, 0), (1, 0), (1, 1)]:
        assert "#%02x%02x%02x" % tuple(pixels[i, j]) == scale.colour(float(matrix[i, j]))
    # the readout's values, row-major, the masked cell's too, four characters each
    # (heatmap.js decodes them: test_heatmap_js.py)
    texts = ["0.5", "−∞", "-0.25", "1"]  # within 14 powers of ten: 3 characters each
    assert (f'data-shape="2 2" data-codes="{heatmap.value_codes(texts, -4)}" '
            'data-code-base="-4"') in html
    # beside a table, only the cells the table does not show: here the first column
    html = heatmap.heatmap_html(s, heatmap.HeatmapStrings("t", "m", "nf", "rows", "cols"), "u2",
                                table_cells=([0, 1], [1]))
    assert (f'data-values-in="table" data-codes="{heatmap.value_codes(["0.5", "-0.25"], -4)}" '
            'data-code-base="-4"') in html


def test_masked_path_covers_exactly_the_masked_cells():
    masked = slices.causal_mask((4, 4))
    path = heatmap.masked_path(masked, 10, 20, 5, 7)
    rects = [tuple(int(v) for v in m) for m in re.findall(r"M(\d+) (\d+)h(\d+)v(\d+)h-\d+z", path)]
    covered = {(i, j) for x, y, w, h in rects for i in range((y - 20) // 7, (y - 20 + h) // 7)
               for j in range((x - 10) // 5, (x - 10 + w) // 5)}
    assert covered == {(int(i), int(j)) for i, j in zip(*np.nonzero(masked))}
    assert len(rects) == 3  # one run per row that has masked cells


def png_pixels(b64: str) -> np.ndarray:
    """Decode the heatmap's PNG (8-bit RGB, filter 0 on every row, as ``png_bytes`` writes)."""
    import base64
    import struct
    import zlib
    data = base64.b64decode(b64)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert (depth, colour) == (8, 2)
    idat = data[data.index(b"IDAT") + 4:]
    raw = zlib.decompress(idat[:struct.unpack(">I", data[data.index(b"IDAT") - 4:data.index(b"IDAT")])[0]])
    rows = [raw[r * (1 + 3 * width):(r + 1) * (1 + 3 * width)] for r in range(height)]
    assert all(row[0] == 0 for row in rows)
    return np.array([list(row[1:]) for row in rows], dtype=np.uint8).reshape(height, width, 3)


def test_legend_css_in_the_stylesheet_is_the_scales():
    """The legends' two colour bars (glassllm.css) have the stops the cells are drawn with."""
    css = (ROOT / "docs_build/assets/glassllm.css").read_text(encoding="utf-8")
    for kind, stops in (("diverging", colours.DIVERGING), ("sequential", colours.SEQUENTIAL)):
        gradient = ", ".join("#{:02x}{:02x}{:02x}".format(*rgb) + f" {round(t * 100)}%"
                             for t, rgb in stops)
        line = (f".md-typeset .gl-legend-{kind} {{ background: linear-gradient(to right, "
                f"{gradient}); }}")
        assert line in css, f"put this line into glassllm.css: {line}"


def test_stash_keeps_big_blocks_out_of_markdown_and_puts_them_back():
    stash = Stash()
    md = "# T\n\n" + stash.put("<table><tr><td>1</td></tr></table>", anchors=["L1"]) + "\n"
    out = to_html(md)
    assert '<span id="L1"></span>' in out and "<table>" not in out
    assert stash.fill(out).count("<table>") == 1 and 'id="L1"' not in stash.fill(out)


@pytest.mark.parametrize("text", ["<img src=x onerror=alert(1)>", "*a* _b_ [c](d) `e` $f$ \\(g\\)",
                                  "1. not a list", "# not a heading", "a | b & c"])
def test_md_escape_inserts_text_as_text(text):
    html = to_html("x " + md_escape(text))
    assert "<img" not in html and "<em>" not in html and "<a " not in html and "arithmatex" not in html
    assert "<ol>" not in html and "<h1" not in html and "<code>" not in html


def test_md_code_survives_backticks():
    assert to_html(md_code("a`b")) == "<p><code>a`b</code></p>"


@pytest.fixture(scope="module")
def example():
    data = load_example(ExampleSettings(prompt="<b>&"), PACKAGE_DIR)
    return data.catalog, data.run


def test_step_page_escapes_label_prompt_and_keeps_equation_verbatim(example):
    catalog, run = example
    step = catalog["attn.out"]  # its LaTeX holds \| and \,
    labels = {s: f"label {s}" for s in catalog.ids}
    text = StepText(label="<script>x</script> & *y*", body="Body with $a^2$.\n", path=Path("t"))
    ui = load_ui(ROOT / "docs", languages.DEFAULT)
    stash = Stash()
    md = step_page.render_step_page(step, catalog, run, text, labels, ui, languages.DEFAULT,
                                 step_page.Source(), stash)
    html = stash.fill(to_html(md))
    assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt; &amp; *y*" in html
    assert "&lt;b&gt;&amp;" in html  # the prompt, escaped
    assert display_math(step.latex) in html
    assert '<span class="arithmatex">\\(a^2\\)</span>' in html


def test_example_settings_are_checked_with_the_option_to_change():
    with pytest.raises(DocsBuildError, match="example.prompt is empty"):
        ExampleSettings(prompt="").check()
    with pytest.raises(DocsBuildError, match="traced_step"):
        ExampleSettings(tokens=2, traced_step=2).check()
    with pytest.raises(DocsBuildError, match="invalid example model: .*n_heads"):
        load_example(ExampleSettings(n_heads=3), PACKAGE_DIR)
    with pytest.raises(DocsBuildError, match=r"example.sampling_seed must be a non-negative .*-1"):
        ExampleSettings(sampling_seed=-1).check()
    with pytest.raises(DocsBuildError, match=r"example.top_k must be at least 1 \(got 0\)"):
        ExampleSettings(top_k=0).check()
    # lengths are counted in the model's tokens, by the engine's child (test_child_tokens.py)
    ExampleSettings(max_len=8).check()


def test_languages_map_pages_to_their_counterparts():
    pt = languages.LANGUAGES[1]
    assert languages.counterpart("steps/embed.md", pt) == "pt/steps/embed.md"
    assert languages.counterpart("pt/index.md", languages.DEFAULT) == "index.md"
    assert languages.missing_translations(["index.md", "pt/index.md", "model.md"]) == [
        ("model.md", "pt/model.md")]


def test_ui_strings_are_complete_and_use_known_placeholders(tmp_path):
    for lang in languages.LANGUAGES:
        assert set(load_ui(ROOT / "docs", lang)) == set(UI_KEYS)
    bad = tmp_path / "_texts" / "en" / "ui.yml"
    bad.parent.mkdir(parents=True)
    good = (ROOT / "docs" / "_texts" / "en" / "ui.yml").read_text(encoding="utf-8")
    bad.write_text(good.replace('layer: "Layer {layer}"', 'layer: "Layer {n}"'), encoding="utf-8")
    with pytest.raises(DocsBuildError, match=r"layer uses unknown placeholder\(s\) \{n\}; it may use \{layer\}"):
        load_ui(tmp_path, languages.DEFAULT)


@pytest.mark.parametrize("written", ["{layer:Q}", "{layer:>99999999}", "{layer!r}",
                                     "{layer:{layer}}"])
def test_ui_placeholders_with_a_format_spec_are_refused_before_formatting(tmp_path, written):
    bad = tmp_path / "_texts" / "en" / "ui.yml"
    bad.parent.mkdir(parents=True)
    good = (ROOT / "docs" / "_texts" / "en" / "ui.yml").read_text(encoding="utf-8")
    bad.write_text(good.replace('layer: "Layer {layer}"', f'layer: "Layer {written}"'),
                   encoding="utf-8")
    with pytest.raises(DocsBuildError, match=r"ui.yml: layer: the placeholder .* write \{layer\}"):
        load_ui(tmp_path, languages.DEFAULT)


def test_step_text_with_a_byte_order_mark_is_read_like_one_without(tmp_path):
    text = "---\nlabel: Token embedding\n---\nThe row of the embedding table.\n"
    plain, marked = tmp_path / "plain.md", tmp_path / "bom.md"
    plain.write_text(text, encoding="utf-8")
    marked.write_text("\ufeff" + text, encoding="utf-8")  # as Windows Notepad saves UTF-8
    read = parse_step_text(marked)
    assert (read.label, read.body) == (parse_step_text(plain).label, parse_step_text(plain).body)
    assert read.label == "Token embedding"


def test_step_text_that_is_not_utf8_is_named_not_a_traceback(tmp_path):
    path = tmp_path / "latin1.md"
    path.write_bytes("---\nlabel: Posição\n---\nTexto.\n".encode("latin-1"))
    with pytest.raises(TextError, match=r"latin1.md: not UTF-8 text .*save it as UTF-8"):
        parse_step_text(path)


@pytest.mark.parametrize("signed", [True, False])
def test_heatmap_pixels_are_the_scales_colours(signed):
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((9, 31)).astype(np.float32)
    if not signed:
        matrix = np.abs(matrix)
    matrix[0, :4] = [np.inf, -np.inf, np.nan, 0.0]
    matrix[1, 0] = matrix[np.isfinite(matrix)].max()  # the scale's own ends and stops
    masked = np.zeros(matrix.shape, dtype=bool)
    masked[2, 3:6] = True
    scale = colours.colour_scale(matrix, masked)
    pixels = heatmap.heatmap_pixels(matrix, masked, scale)
    for (i, j), v in np.ndenumerate(matrix):
        want = "#d9d9d9" if masked[i, j] else scale.colour(float(v))
        assert "#%02x%02x%02x" % tuple(pixels[i, j]) == want, (i, j, v)
    # the stops themselves: 0.25 and 0.5 of the bar land exactly on their colours
    if signed:
        bound = max(abs(scale.low), abs(scale.high))
        at = np.array([[-bound / 2, 0.0, bound]], dtype=np.float64)
        got = heatmap.heatmap_pixels(at, np.zeros(at.shape, dtype=bool), scale)
        assert [tuple(p) for p in got[0]] == [colours.DIVERGING[1][1], colours.DIVERGING[2][1],
                                              colours.DIVERGING[4][1]]


def test_generate_typesets_the_texts_formulas_in_their_markdown_outside_code():
    """generate's Markdown: the formulas arithmatex would find become the typeset HTML, made
    inert for Markdown; code spans, fenced code and raw <pre> (the source listings) stay."""
    from docs_build.html import markdown_math
    from docs_build.html.math import Formula

    md = ("A $x^2$ and `$y$` and \\(a_1\\).\n\n$$\nb+c\n$$\n\n```\n$q$\n```\n\n"
          '<div class="highlight"><pre><code>cost = $z$</code></pre></div>\n')
    assert markdown_math.markdown_formulas(md) == [Formula("x^2", False), Formula("a_1", False),
                                                   Formula("b+c", True)]
    out = markdown_math.typeset_markdown(md, lambda f: f"<math>{f.tex}</math>")
    assert "A <math>x&#94;2</math> and `$y$` and <math>a&#95;1</math>." in out
    assert '<div class="arithmatex"><math>b+c</math></div>' in out
    assert "```\n$q$\n```" in out and "<pre><code>cost = $z$</code></pre>" in out


def test_a_cut_columns_ellipsis_is_one_cell_down_each_run_of_rows():
    """The ellipsis of the cut columns spans each run of shown rows (a cell, not one a row),
    and the rows still have one cell per shown column besides it."""
    matrix = np.arange(400, dtype=np.float32).reshape(20, 20)
    s = slices.make_slice(STEPS["attn.scores"], 0, 1, matrix, [65] * 20, LABELS)
    html = tables.table_html(s, tables.TableStrings("t", "{n} more", "{n} more"), 6, 6)
    body = html.split("<tbody>")[1]
    assert body.count('<td class="gl-ellipsis" rowspan="3">…</td>') == 2  # rows 0-2 and 17-19
    rows = re.findall(r"<tr><th>.*?</tr>", body)
    assert [len(re.findall(r"<td>", row)) for row in rows] == [6] * 6
    assert re.findall(r"<td>(\d+)</td>", rows[3])[:3] == ["340", "341", "342"]


def test_the_source_pages_are_listed_top_first_then_one_section_per_folder(tmp_path):
    from docs_build.pages.source_page import module_files, source_nav
    from docs_build.pages.urls import source_page_uri
    package = tmp_path / "glassllm"
    for name in ("nn.py", "__init__.py", "learning/optim.py", "learning/__init__.py",
                 "interpret/recording/events.py", "interpret/probes.py",
                 "learning/__pycache__/optim.cpython-311.py"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("", encoding="utf-8")
    modules = module_files(package)
    assert modules == ["glassllm/__init__.py", "glassllm/nn.py", "glassllm/interpret/probes.py",
                       "glassllm/interpret/recording/events.py", "glassllm/learning/__init__.py",
                       "glassllm/learning/optim.py"]
    uris = [source_page_uri(module, "pt/") for module in modules]
    assert source_nav(uris, "pt/") == [
        "pt/source/glassllm/__init__.md", "pt/source/glassllm/nn.md",
        ("glassllm/interpret/", ["pt/source/glassllm/interpret/probes.md",
                                 ("glassllm/interpret/recording/",
                                  ["pt/source/glassllm/interpret/recording/events.md"])]),
        ("glassllm/learning/", ["pt/source/glassllm/learning/__init__.md",
                                "pt/source/glassllm/learning/optim.md"])]
