"""The built site, page by page: every step in both languages, checked against the engine."""

from __future__ import annotations

import html
import re
import subprocess

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, STEPS, GlassLM, Tracer, load_tokenizer
from glassllm.steps import HEAD_STEPS, LAYER_STEPS, scan_markers

from docs_build.data.heads import FEATURED_STEPS
from docs_build.html.math import Formula
from docs_build.site.katex import Typesetter
from docs_build.text.numbers import format_value

from .conftest import LANGS, REPO_URL, ROOT, text_of

# mkdocs.yml's example runs the demo: its texts are read by the demo's own tokenizer
encode = load_tokenizer(DEMO_CHECKPOINT).encode

STEP_IDS = list(STEPS)
TYPESETTER = Typesetter(ROOT / "node_modules" / "katex")  # the build's, cached by content


def step_url(lang: str, step_id: str) -> str:
    return f"{LANGS[lang][0]}steps/{step_id}/"


@pytest.fixture(scope="module")
def traces(site):
    """The example run recomputed here with the engine alone: (generation trace, loss trace)."""
    ex = site.example
    assert ex.model == "demo"  # mkdocs.yml's example runs the trained checkpoint
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    steps = list(model.generate(encode(ex.prompt), ex.tokens, greedy=ex.greedy,
                                temperature=ex.temperature, top_k=ex.top_k,
                                seed=ex.sampling_seed, trace=True))
    text = encode(ex.loss_text)
    loss_trace = Tracer()
    model.loss(text[:-1], text[1:], trace=loss_trace)
    return steps[ex.traced_step].trace, loss_trace


def records_of(traces, step_id):
    generation, loss = traces
    trace = generation if step_id in generation.step_ids() else loss
    return [r for r in trace.records if r.id == step_id]


TABLE = re.compile(r'<table class="gl-values"([^>]*)>(.*?)</table>', re.S)
ROW = re.compile(r'<tr>(.*?)</tr>', re.S)  # a shown row (a cut one is <tr class=...>)
CELL = re.compile(r'<td(?: class="([^"]*)")?>([^<]*)</td>')


def value_tables(page: str):
    """(attributes, [(index, classes, text)]) of every value table of a page: a grid names
    its shown rows and columns once (data-rows, data-cols); a vector's rows carry the token."""
    for attrs, body in TABLE.findall(page):
        meta = dict(re.findall(r'data-(step|layer|head|rows|cols)="([^"]*)"', attrs))
        rows = [CELL.findall(row) for row in ROW.findall(body.split("<tbody>", 1)[1])]
        if "rows" in meta:
            grid = [[cell for cell in row if "gl-ellipsis" not in cell[0]] for row in rows]
            indices = [int(i) for i in meta["rows"].split()], [int(j) for j in meta["cols"].split()]
            assert len(grid) == len(indices[0]) and all(len(r) == len(indices[1]) for r in grid)
            cells = [((i, j), cls, html.unescape(text))
                     for i, row in zip(indices[0], grid) for j, (cls, text) in zip(indices[1], row)]
        else:  # token ID, then its value
            cells = [((int(row[0][1]),), row[1][0], html.unescape(row[1][1])) for row in rows]
        yield meta, cells


def test_format_value_spells_non_finite_values():
    assert format_value(np.float32(-np.inf)) == "−∞"
    assert format_value(np.float32(np.inf)) == "+∞"
    assert format_value(np.float32(np.nan)) == "NaN"
    assert format_value(np.float32(0.123456)) == "0.1235"
    assert format_value(np.float32(-0.0)) == "0"
    assert format_value(np.int64(7)) == "7"


@pytest.mark.parametrize("lang", LANGS)
def test_every_step_page_exists_with_its_language_equation_and_ids(site, lang):
    html_lang = LANGS[lang][1]
    for step_id in STEP_IDS:
        page = site.html(step_url(lang, step_id))
        assert f'<html lang="{html_lang}"' in page, step_id
        # the equation typeset at build: KaTeX's MathML of the step's LaTeX, no TeX left
        typeset = TYPESETTER.render([Formula(STEPS[step_id].latex, True)])
        assert (f'<div class="arithmatex gl-equation">{typeset[Formula(STEPS[step_id].latex, True)].html}'
                '</div>') in page, step_id
        assert html.escape(STEPS[step_id].plain, quote=False) in page, step_id
        assert f"<code>{step_id}</code>" in page


def test_equations_are_identical_in_both_languages(site):
    for step_id in STEP_IDS:
        en, pt = (re.findall(r'<div class="arithmatex gl-equation">(.*?)</div>',
                             site.html(step_url(lang, step_id)), re.S) for lang in ("en", "pt"))
        assert en == pt and len(en) == 2, step_id  # the forward's, then the backward rule


@pytest.mark.parametrize("lang", LANGS)
def test_source_link_reaches_the_marker_line(site, lang):
    markers = scan_markers()
    for step_id in STEP_IDS:
        url = step_url(lang, step_id)
        hrefs = re.findall(r'href="([^"]*source/[^"]*#L\d+)"', site.html(url))
        assert hrefs, f"{step_id}: no source link"
        target = site.resolve(url, hrefs[0])
        path, anchor = target.split("#")
        assert path == f"{LANGS[lang][0]}source/{markers[step_id]['file'][:-3]}/"
        assert anchor == f"L{markers[step_id]['line']}"
        source = site.html(path)
        line = re.search(rf'<span class="gl-line[^"]*" id="{anchor}">(.*?)\n', source)
        assert line, f"{step_id}: {target} has no line anchor {anchor}"
        assert re.search(rf"#\s*@step {re.escape(step_id)}\b", text_of(line.group(1))), step_id


@pytest.mark.parametrize("lang", LANGS)
def test_every_module_of_every_layer_has_its_source_page_in_the_nav(site, lang):
    """glassllm's folders (files/, text/, interpret/, learning/) are shown like its top: one
    page per module, every line anchored, each listed in the navigation under a section named
    by its folder."""
    prefix = LANGS[lang][0]
    modules = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "glassllm").rglob("*.py")
                     if "__pycache__" not in p.parts)
    assert {"glassllm/nn.py", "glassllm/learning/optim.py",
            "glassllm/interpret/recording/events.py"} <= set(modules)
    listed, titles = set(), set()
    for module in modules:
        url = f"{prefix}source/{module[:-3]}/"
        page = site.html(url)
        assert re.search(rf"<h1[^>]*>{re.escape(module)}", page), module
        lines = (ROOT / module).read_text(encoding="utf-8").count("\n")
        assert re.findall(r'class="gl-line[^"]*" id="L(\d+)"', page)[-1] == str(lines), module
        nav = page.split('class="md-content"')[0]
        listed |= {site.resolve(url, href).split("#")[0]
                   for href in re.findall(r'href="([^"#]+)"', nav)}
        titles |= set(re.findall(r">\s*(glassllm/[\w/]*/)\s*<", nav))
    assert [m for m in modules if f"{prefix}source/{m[:-3]}/" not in listed] == []
    folders = {m.rpartition("/")[0] + "/" for m in modules} - {"glassllm/"}
    assert "glassllm/interpret/recording/" in folders and titles == folders


def test_repository_link_is_pinned_to_the_commit(site):
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    assert len(commit) == 40
    markers = scan_markers()
    for step_id in ("embed", "attn.softmax", "loss.grad"):
        want = f"{REPO_URL}/blob/{commit}/{markers[step_id]['file']}#L{markers[step_id]['line']}"
        for lang in LANGS:
            assert f'href="{want}"' in site.html(step_url(lang, step_id)), (step_id, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_shown_numbers_equal_the_tracers(site, traces, lang):
    mark = "," if lang == "pt" else "."  # each language writes its decimal mark
    for step_id in STEP_IDS:
        page = site.html(step_url(lang, step_id))
        records = records_of(traces, step_id)
        by_layer = {r.layer: r.value for r in records}
        tables = list(value_tables(page))
        if records[0].value.ndim == 0:
            shown = re.search(r'<span class="gl-scalar-value">([^<]*)</span>', page).group(1)
            assert html.unescape(shown) == format_value(records[0].value.item(), mark), step_id
            continue
        layers = {None} if step_id not in LAYER_STEPS else set(range(site.example.n_layers))
        heads = records[0].value.shape[0] if step_id in HEAD_STEPS else None
        expected_tables = len(layers) * (heads or 1)
        assert len(tables) == expected_tables, step_id
        for meta, cells in tables:
            assert meta["step"] == step_id
            value = by_layer[int(meta["layer"])] if "layer" in meta else by_layer[None]
            if "head" in meta:
                value = value[int(meta["head"])]
            assert cells, step_id
            for index, _, text in cells:
                assert text == format_value(value[index], mark), (step_id, meta, index)
        _check_stats(page, step_id, records, mark)


def _check_stats(page, step_id, records, mark="."):
    rows = re.findall(r'<tr data-step="' + re.escape(step_id) + r'"[^>]*>(.*?)</tr>', page)
    assert len(rows) == len(records), step_id
    for row, record in zip(rows, records):
        cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)]
        value = record.value
        finite = value[np.isfinite(value)]
        assert str(value.dtype) in cells
        assert format_value(finite.min(), mark) in cells and format_value(finite.max(), mark) in cells
        assert format_value(finite.astype(np.float64).mean(), mark) in cells
        nonfinite = int(value.size - finite.size)
        assert any(c.split(" ")[0] == str(nonfinite) for c in cells), (step_id, cells)


@pytest.mark.parametrize("lang", LANGS)
def test_attention_mask_shows_minus_infinity_in_masked_cells(site, lang):
    page = site.html(step_url(lang, "attn.mask"))
    cells = [cell for _, cells in value_tables(page) for cell in cells]
    masked = [(index, text) for index, cls, text in cells if "gl-masked" in cls]
    assert masked and all(text == "−∞" for _, text in masked)
    assert all(j > i for (i, j), _ in masked)  # above the diagonal only
    assert all(text != "−∞" for index, cls, text in cells if "gl-masked" not in cls)
    assert 'fill="url(#gl-hatch-' in page  # the heatmap hatches them too
    softmax = site.html(step_url(lang, "attn.softmax"))
    assert any("gl-masked" in cls and text == "0"
               for _, cells in value_tables(softmax) for _, cls, text in cells)


def test_head_steps_have_one_tab_per_head_and_a_heatmap_each(site):
    n_heads, n_kv = site.example.n_heads, site.example.n_kv_heads
    for step_id in HEAD_STEPS:
        # the forward's view: the Backward section after it shows one head's gradient
        page = site.html(step_url("en", step_id)).split('<h2 id="backward">')[0]
        heads = n_kv if step_id in ("attn.k", "attn.v", "attn.k_rope") else n_heads
        sets = re.findall(r'<div class="tabbed-set tabbed-alternate" data-tabs="(\d+)">', page)
        assert sets == [str(heads)] * site.example.n_layers, step_id
        # the attention pages add, per layer, the featured head's heatmap on the probe
        probes = site.example.n_layers if step_id in FEATURED_STEPS else 0
        assert page.count('<figure class="gl-heatmap"') == heads * site.example.n_layers + probes
        assert page.count('class="gl-legend"') == heads * site.example.n_layers + probes


ALT = re.compile(r'<a href="([^"]*)" hreflang="([^"]*)" lang="[^"]*" class="md-select__link')


def test_language_switch_leads_to_the_same_page(site):
    pages = sorted(p.relative_to(site.dir).as_posix() for p in site.dir.rglob("index.html"))
    assert len(pages) > 2 * 25
    for rel in pages:
        url = rel[: -len("index.html")]
        page = site.html(url)
        links = dict((lang, href) for href, lang in ALT.findall(page))
        assert set(links) == {"en", "pt-BR"}, url
        own = url[3:] if url.startswith("pt/") else url
        assert site.resolve(url, links["en"]) == own, url
        assert site.resolve(url, links["pt-BR"]) == "pt/" + own, url
        assert site.path_of("pt/" + own).is_file() and site.path_of(own).is_file()


def _primary_nav(page: str) -> str:
    start = page.index('<div class="md-sidebar md-sidebar--primary"')
    return page[start:page.index('<div class="md-sidebar md-sidebar--secondary"', start)]


@pytest.mark.parametrize("lang", LANGS)
def test_navigation_and_step_links_stay_in_the_page_language(site, lang):
    prefix = LANGS[lang][0]
    for step_id in STEP_IDS:
        url = step_url(lang, step_id)
        page = site.html(url)
        nav_targets = [site.resolve(url, h) for h in
                       re.findall(r'href="([^"]*)" class="md-nav__link', _primary_nav(page))]
        assert nav_targets
        for target in nav_targets:
            assert target.startswith("pt/") == (lang == "pt"), (url, target)
        for step in STEP_IDS:  # the section lists every step
            assert f"{prefix}steps/{step}/" in nav_targets
        position = STEP_IDS.index(step_id)
        for cls, neighbour in (("gl-prev", position - 1), ("gl-next", position + 1)):
            links = re.findall(rf'<a class="{cls}" href="([^"]*)"', page)
            if 0 <= neighbour < len(STEP_IDS):
                assert [site.resolve(url, h) for h in links] == [step_url(lang, STEP_IDS[neighbour])]
            else:
                assert links == []


@pytest.mark.parametrize("lang", LANGS)
def test_catalog_lists_all_steps_in_order(site, lang):
    url = f"{LANGS[lang][0]}steps/"
    page = site.html(url)
    rows = re.findall(r'<tr data-step="([^"]+)"><td>(\d+)</td><td><a href="([^"]+)">(.*?)</tr>', page, re.S)
    assert [r[0] for r in rows] == STEP_IDS
    assert [int(r[1]) for r in rows] == list(range(1, 26))
    for step_id, _, href, rest in rows:
        assert site.resolve(url, href) == step_url(lang, step_id)
        inline = Formula(STEPS[step_id].latex, False)  # typeset at build, no TeX left
        assert TYPESETTER.render([inline])[inline].html in rest
    assert 'id="example"' in page and site.example.prompt in html.unescape(page)


def test_every_internal_link_and_anchor_resolves(site):
    ids_cache = {}
    for path in sorted(site.dir.rglob("*.html")):
        url = path.relative_to(site.dir).as_posix()
        page = path.read_text(encoding="utf-8")
        for href in re.findall(r'\shref="([^"]*)"', page):
            if re.match(r"^[a-z]+:", href) or href.startswith("//"):
                continue  # external (the repository link) or mailto:
            target = site.resolve(url, html.unescape(href))
            file_part, _, anchor = target.partition("#")
            file = site.path_of(file_part)
            assert file.exists(), f"{url}: broken link {href}"
            if anchor and file.suffix == ".html":
                if file not in ids_cache:
                    ids_cache[file] = set(re.findall(r'\sid="([^"]*)"', file.read_text(encoding="utf-8")))
                assert anchor in ids_cache[file], f"{url}: {href} has no anchor #{anchor}"


def test_site_requests_nothing_from_other_hosts(site):
    katex = site.dir / "assets" / "katex"
    assert (katex / "katex.min.js").is_file()
    assert len(list((katex / "fonts").glob("*.woff2"))) >= 10
    for path in site.dir.rglob("*.html"):
        page = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", page):
            src = re.search(r'\s(?:src|href)="([^"]*)"', tag)
            assert not src or not re.match(r"^(https?:)?//", src.group(1)), (path, tag)
        # Material's repository widget would fetch stars and forks from the host's API
        assert 'data-md-component="source"' not in page, path
    css = (katex / "katex.min.css").read_text(encoding="utf-8")
    assert "http" not in css.replace("http://www.w3.org", "")


PAGE_BUDGET = 120_000  # bytes of HTML a page may weigh (issue 11: no step page over 120 KB)


def test_no_page_outweighs_the_budget(site):
    """Every page of both languages — the step pages, the catalog, the hand-written ones —
    is at most PAGE_BUDGET bytes of HTML, with the example the site ships (the per-head
    heatmaps and probe heatmaps of the attention pages were 0.5-0.6 MB each). The source
    listings are the engine's modules verbatim and are not held to it."""
    pages = {str(p.relative_to(site.dir)): p.stat().st_size for p in site.dir.rglob("*.html")
             if not re.match(r"(pt/)?source/", str(p.relative_to(site.dir)))}
    assert len([p for p in pages if re.match(r"(pt/)?steps/[^/]+/index\.html", p)]) == 2 * len(STEP_IDS)
    heavy = {page: size for page, size in pages.items() if size > PAGE_BUDGET}
    assert heavy == {}, f"pages over {PAGE_BUDGET} bytes: {heavy}"


RAW_TEX = re.compile(r"\\[(\[]|\$\$")  # a formula's TeX as arithmatex or a text left it


def test_every_formula_is_typeset_at_build(site):
    """No page keeps a formula as TeX for a script to typeset, nor shows KaTeX's red error:
    every formula of the site (equations, texts, worked numbers, catalog) is MathML, so math
    shows with JavaScript off. Code blocks and the source listings may hold backslashes."""
    typeset = 0
    for path in site.dir.rglob("*.html"):
        if re.match(r"(pt/)?source/", str(path.relative_to(site.dir))):
            continue
        page = path.read_text(encoding="utf-8")
        assert "katex-error" not in page, path
        prose = re.sub(r"<(pre|code|script|textarea)\b.*?</\1>", "", page, flags=re.S)
        raw = RAW_TEX.search(prose)
        assert raw is None, f"{path}: TeX left untypeset: {prose[raw.start() - 80:raw.end() + 80]!r}"
        typeset += page.count("<math")
    assert typeset > 2000


@pytest.mark.parametrize("lang", LANGS)
def test_the_rope_worked_block_is_typeset(site, lang):
    """The RoPE worked block wrote 10^{4}^{…} (a double superscript KaTeX refuses): its base
    is in parentheses now, and the block is one typeset formula with the power in it."""
    for step_id in ("attn.q_rope", "attn.k_rope"):
        page = site.html(step_url(lang, step_id))
        worked = page[page.index('<div class="gl-worked"'):]
        blocks = re.findall(r'<math display="block">(.*?)</math>', worked, re.S)
        # Θ = i · (1×10^4)^(−2·p/d_h): the base of the power in brackets, the power its own
        power = (r'<msup><mrow><mo fence="true">\(</mo><mn>1</mn><mo>×</mo><msup><mn>10</mn>'
                 r'<mn>4</mn></msup><mo fence="true">\)</mo></mrow><mrow><mo>−</mo><mn>2</mn>')
        assert any(re.search(power, block) for block in blocks), step_id
