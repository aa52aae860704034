"""The map of the model (docs_build/html/model_map.py): one linked box per step, the shapes of a
real run, one highlighted box on a step page, valid and accessible SVG."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from docs_build.data.example import load_example
from docs_build.data.shapes import step_shapes
from docs_build.engine.settings import ExampleSettings
from docs_build.errors import DocsBuildError
from docs_build.html import model_map
from docs_build.pages.maps import model_map_html
from docs_build.pages.urls import Links, step_page_uri
from docs_build.text.languages import LANGUAGES
from docs_build.text.numbers import shape_text
from docs_build.text.step_texts import load_step_texts
from docs_build.text.ui import load_ui
from glassllm import Config, GlassLM, Tracer, encode

from .conftest import engine_steps

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def example():
    return load_example(ExampleSettings(), ROOT / "glassllm")


@pytest.fixture(scope="module")
def catalog(example):
    return example.catalog


@pytest.fixture(scope="module")
def run(example):
    return example.run


def labels_of(lang, catalog):
    return {sid: t.label for sid, t in load_step_texts(DOCS, lang.code, catalog.ids).items()}


def svg_of(html: str) -> ET.Element:
    """The <svg> of a map's HTML, parsed as XML (which fails on anything malformed)."""
    start, end = html.index("<svg"), html.index("</svg>") + len("</svg>")
    return ET.fromstring(html[start:end])


def boxes(svg: ET.Element) -> list[ET.Element]:
    return [a for a in svg.iter(f"{SVG}a") if a.get("data-step") is not None]


def rect_of(box: ET.Element) -> tuple[float, float, float, float]:
    rect = next(r for r in box.iter(f"{SVG}rect") if r.get("class") == "gl-map-box")
    x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
    return x, y, x + w, y + h


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.code)
@pytest.mark.parametrize("small", [False, True], ids=["full", "small"])
def test_every_step_has_exactly_one_box_in_execution_order(catalog, run, lang, small):
    links = Links()
    html = model_map_html(catalog, run, labels_of(lang, catalog), load_ui(DOCS, lang), lang,
                          links, f"{lang.prefix}index.md", small=small)
    steps = [a.get("data-step") for a in boxes(svg_of(html))]
    assert Counter(steps) == Counter(catalog.ids) and set(Counter(steps).values()) == {1}
    assert steps == catalog.ids  # the tab order follows the model


@pytest.mark.parametrize("use_directory_urls", [True, False])
@pytest.mark.parametrize("page", ["index.md", "model.md", "pt/index.md", "pt/steps/attn.q.md",
                                  "replay.md"])
def test_links_resolve_to_the_step_pages_of_the_pages_language(catalog, run, page,
                                                               use_directory_urls):
    lang = LANGUAGES[1] if page.startswith("pt/") else LANGUAGES[0]
    links = Links(use_directory_urls)
    html = model_map_html(catalog, run, labels_of(lang, catalog), load_ui(DOCS, lang), lang,
                          links, page)
    for box in boxes(svg_of(html)):
        href = box.get("href")
        target = urlsplit(urljoin("http://site/" + links.url(page), href)).path.lstrip("/")
        assert target == links.url(step_page_uri(box.get("data-step"), lang)), (page, href)


CONFIGS = [
    Config(vocab_size=256, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=64),
    Config(vocab_size=256, d_model=24, n_layers=3, n_heads=3, n_kv_heads=3, max_len=32, d_ff=40),
    Config(vocab_size=256, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, max_len=32, seed=3),
]


@pytest.mark.parametrize("config", CONFIGS, ids=["gqa", "mha-custom-ff", "one-kv-head"])
def test_shapes_equal_the_tracers_snapshots_of_a_real_run(config):
    model = GlassLM(config)
    prompt, text = encode("Glass box"), encode("a cat, a hat.")
    step = next(model.generate(prompt, 1, trace=True, seed=0))
    loss_trace = Tracer()
    model.loss(text[:-1], text[1:], trace=loss_trace)
    steps = engine_steps().values()
    generation, loss = step_shapes(steps, config, len(prompt)), step_shapes(steps, config, len(text) - 1)
    assert {r.id for r in step.trace.records + loss_trace.records} == set(generation)
    for record in step.trace.records:
        assert generation[record.id] == record.value.shape, (record.id, record.layer)
    for record in loss_trace.records:
        assert loss[record.id] == record.value.shape, (record.id, record.layer)
    # on the pages: the forward steps from the generation, the loss steps from the loss run
    mixed = step_shapes(steps, config, len(prompt), len(text) - 1)
    assert mixed["loss.grad"] == loss["loss.grad"] and mixed["logits"] == generation["logits"]


def test_the_map_prints_the_example_runs_shapes_in_each_box(catalog, run):
    lang = LANGUAGES[0]
    html = model_map_html(catalog, run, labels_of(lang, catalog), load_ui(DOCS, lang), lang,
                          Links(), "index.md")
    for box in boxes(svg_of(html)):
        step_id = box.get("data-step")
        shape = shape_text(run.snapshots[step_id][0].value.shape)
        texts = ["".join(t.itertext()) for t in box.iter(f"{SVG}text")]
        assert texts[-1] == shape, step_id
        assert shape in box.find(f"{SVG}title").text
    q = next(b for b in boxes(svg_of(html)) if b.get("data-step") == "attn.q")
    assert "(4, 11, 8)" in q.find(f"{SVG}title").text  # 4 heads, "The cat sat", width 32 / 4


@pytest.mark.parametrize("current", ["embed", "attn.q", "mlp.residual", "loss.grad"])
def test_the_highlighted_variant_marks_exactly_one_box(catalog, run, current):
    lang = LANGUAGES[1]
    html = model_map_html(catalog, run, labels_of(lang, catalog), load_ui(DOCS, lang), lang,
                          Links(), step_page_uri(current, lang), current=current, small=True)
    marked = [a.get("data-step") for a in boxes(svg_of(html)) if a.get("aria-current")]
    assert marked == [current]
    assert 'aria-current="step"' in html and "gl-map--small" in html


def test_the_full_map_marks_no_box_and_an_unknown_current_step_is_a_key_error(catalog, run):
    lang = LANGUAGES[0]
    args = (catalog, run, labels_of(lang, catalog), load_ui(DOCS, lang), lang, Links(), "index.md")
    assert "aria-current" not in model_map_html(*args)
    with pytest.raises(KeyError, match="attn.nope"):
        model_map_html(*args, current="attn.nope")


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.code)
def test_boxes_are_accessible_links_with_their_label_and_the_map_has_a_name(catalog, run, lang):
    labels = labels_of(lang, catalog)
    ui = load_ui(DOCS, lang)
    svg = svg_of(model_map_html(catalog, run, labels, ui, lang, Links(), f"{lang.prefix}model.md"))
    title = svg.find(f"{SVG}title")
    assert svg.get("aria-labelledby") == title.get("id") and title.text == ui["map.title"]
    desc = svg.find(f"{SVG}desc")
    assert svg.get("aria-describedby") == desc.get("id") and "n = 11" in desc.text
    for box in boxes(svg):
        step_id = box.get("data-step")
        # the <title> child is the link's accessible name (SVG-AAM) and its tooltip
        name = box.find(f"{SVG}title").text
        assert name.startswith(f"{labels[step_id]} ({step_id})")
        assert box.get("aria-label") is None
        assert box.get("href")
        # the label is drawn as real text too, over at most two lines
        drawn = " ".join("".join(t.itertext()) for t in box.iter(f"{SVG}text")
                         if t.get("class") == "gl-map-label")
        assert drawn == labels[step_id]


def test_labels_and_shapes_fit_their_boxes_and_no_boxes_overlap(catalog, run):
    for lang in LANGUAGES:
        svg = svg_of(model_map_html(catalog, run, labels_of(lang, catalog), load_ui(DOCS, lang),
                                    lang, Links(), "index.md"))
        width, height = (float(v) for v in svg.get("viewBox").split()[2:])
        rects = {b.get("data-step"): rect_of(b) for b in boxes(svg)}
        for step_id, (left, top, right, bottom) in rects.items():
            assert 0 <= left and right <= width and 0 <= top and bottom <= height, step_id
            for other, (l2, t2, r2, b2) in rects.items():
                if other != step_id:
                    assert right <= l2 or r2 <= left or bottom <= t2 or b2 <= top, (step_id, other)
        for box in boxes(svg):
            left, _, right, _ = rect_of(box)
            for text in box.iter(f"{SVG}text"):
                content = "".join(text.itertext())
                style = text.get("style") or ""
                default = model_map.SHAPE_FONT if text.get("class") == "gl-map-shape" else model_map.LABEL_FONT
                size = float(style.split(":")[1].rstrip("px")) if style else default
                # 0.6 em a character: wider than the mean of a wide sans-serif font
                assert len(content) * 0.6 * size <= right - left - 8, content


def test_markup_in_labels_is_escaped_and_the_svg_stays_valid_xml(catalog, run):
    lang = LANGUAGES[0]
    labels = {sid: f'<b>"{sid}" & co</b>' for sid in catalog.ids}
    html = model_map_html(catalog, run, labels, load_ui(DOCS, lang), lang, Links(), "index.md")
    svg = svg_of(html)
    assert "<b>" not in html
    embed = next(b for b in boxes(svg) if b.get("data-step") == "embed")
    assert embed.find(f"{SVG}title").text.startswith('<b>"embed" & co</b>')


def test_a_step_without_a_place_on_the_map_is_an_error_that_says_where_to_add_it(catalog):
    extra = dataclasses.replace(catalog.steps[-1], id="loss.hessian")
    with pytest.raises(DocsBuildError, match=r"loss\.hessian.*docs_build/html/model_map\.py"):
        model_map.check_layout([*catalog.steps, extra])
    with pytest.raises(DocsBuildError, match=r"sample.*not in glassllm\.STEPS"):
        model_map.check_layout([s for s in catalog.steps if s.id != "sample"])
    moved = [dataclasses.replace(s, where="model") if s.id == "attn.q" else s
             for s in catalog.steps]
    with pytest.raises(DocsBuildError, match=r"attn\.q.*inside the block"):
        model_map.check_layout(moved)


def test_the_block_is_drawn_once_with_its_repeat_count_and_the_stream_is_drawn(catalog, run):
    lang = LANGUAGES[0]
    run3 = dataclasses.replace(run, config=dataclasses.replace(run.config, n_layers=3))
    for small in (False, True):
        svg = svg_of(model_map_html(catalog, run3, labels_of(lang, catalog), load_ui(DOCS, lang),
                                    lang, Links(), "index.md", small=small))
        blocks = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "gl-map-block"]
        assert len(blocks) == 1
        label = next(t for t in svg.iter(f"{SVG}text") if t.get("class") == "gl-map-block-label")
        assert "× 3" in label.text or "× L = 3" in label.text
        stream = [p for p in svg.iter(f"{SVG}polyline") if p.get("class") == "gl-map-stream"]
        assert len(stream) == 3  # embedding → attention add → MLP add → final RMSNorm
        # the stream runs through both residual adds: one vertical line, x of their centres
        xs = {float(x) for p in stream for pt in p.get("points").split() for x in pt.split(",")[:1]}
        residual = [rect_of(b) for b in boxes(svg) if b.get("data-step").endswith("residual")]
        assert xs == {(left + right) / 2 for left, _, right, _ in residual}


# -- on the built site ---------------------------------------------------------------------

def maps_on(html: str) -> list[str]:
    return re.findall(r'<figure class="gl-map [^"]*".*?</figure>', html, re.S)


@pytest.mark.parametrize("prefix", ["", "pt/"])
@pytest.mark.parametrize("page", ["", "model/"])
def test_home_and_model_pages_show_the_full_map_linked_to_their_languages_step_pages(
        site, catalog, prefix, page):
    url = prefix + page
    html = site.html(url)
    assert "glassllm:model-map" not in html  # the marker was replaced
    (figure,) = maps_on(html)
    assert "gl-map--full" in figure and "aria-current" not in figure
    found = boxes(svg_of(figure))
    assert [b.get("data-step") for b in found] == catalog.ids
    for box in found:
        target = site.resolve(url, box.get("href"))
        assert target == f"{prefix}steps/{box.get('data-step')}/", box.get("href")
        assert site.path_of(target).is_file()


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.code)
def test_every_step_page_shows_the_small_map_with_its_own_box_current(site, catalog, lang):
    for step_id in catalog.ids:
        url = f"{lang.prefix}steps/{step_id}/"
        (figure,) = maps_on(site.html(url))
        assert "gl-map--small" in figure
        found = boxes(svg_of(figure))
        assert [b.get("data-step") for b in found if b.get("aria-current") == "step"] == [step_id]
        own = next(b for b in found if b.get("data-step") == step_id)
        assert site.resolve(url, own.get("href")) == url  # its own box links to itself


def test_the_replay_pages_carry_the_small_map_for_the_player(site, catalog):
    for prefix in ("", "pt/"):
        (figure,) = maps_on(site.html(f"{prefix}replay/"))
        assert "gl-map--small" in figure
        assert [b.get("data-step") for b in boxes(svg_of(figure))] == catalog.ids


# -- in a browser ----------------------------------------------------------------------------

FOCUSED_STEP = "() => document.activeElement && document.activeElement.getAttribute('data-step')"


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_model_pages_map_is_visible_and_its_boxes_take_keyboard_focus_in_order(
        open_page, base_url, catalog, scheme):
    watch = open_page("model/", scheme=scheme)
    page = watch.page
    svg = page.locator("figure.gl-map svg.gl-map-svg")
    svg.scroll_into_view_if_needed()
    assert svg.is_visible() and svg.bounding_box()["width"] > 500
    # focus whatever precedes the map, then walk into it with Tab
    page.evaluate("""() => {
        const all = Array.from(document.querySelectorAll('a[href], button, input, [tabindex]'));
        const first = document.querySelector('figure.gl-map a[data-step]');
        all.filter(e => e.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING
                        && e.getClientRects().length).pop().focus();
    }""")
    visited = []
    for _ in catalog.ids:
        page.keyboard.press("Tab")
        visited.append(page.evaluate(FOCUSED_STEP))
    assert visited == catalog.ids
    # the focused box is drawn with a thicker accent outline, and its text stays readable
    box = page.locator('figure.gl-map a[data-step="loss.grad"] rect.gl-map-box')
    assert box.evaluate("r => getComputedStyle(r).strokeWidth") == "3px"
    text, fill = page.locator('figure.gl-map a[data-step="loss.grad"] text').first.evaluate(
        "t => [getComputedStyle(t).fill, getComputedStyle(t.closest('a').querySelector('rect')).fill]")
    assert text != fill  # the label is not drawn in the box's own colour
    page.keyboard.press("Enter")
    page.wait_for_url(base_url + "steps/loss.grad/")
    watch.assert_clean()


def event_and_current_box(page) -> tuple[str, str | None]:
    return tuple(page.evaluate("""() => [document.querySelector('.gr-event').dataset.stepId,
        (document.querySelector('.gr-event-row a[aria-current="step"]') || {}).dataset?.step || null]"""))


@pytest.mark.browser
def test_on_the_replay_the_current_box_follows_the_event_and_a_box_jumps_to_its_step(
        open_page, base_url):
    watch = open_page("replay/")
    page = watch.page
    page.wait_for_selector(".gr-event[data-event-index]")
    assert page.locator(".gr-event-row figure.gl-map--small").is_visible()
    shown = []
    for _ in range(5):  # embed, then block 0's first steps
        step, box = event_and_current_box(page)
        assert step == box
        shown.append(step)
        page.click('button[data-action="next"]')
        page.wait_for_function(f"() => document.querySelector('.gr-event').dataset.stepId !== '{step}'")
    assert shown == ["embed", "attn.norm", "attn.q", "attn.k", "attn.v"]
    # while playing, the box keeps up with each event
    page.fill("#gr-speed", "100")
    page.dispatch_event("#gr-speed", "input")
    page.click('button[data-action="play"]')
    page.wait_for_function("() => Number(document.querySelector('.gr-event').dataset.eventIndex) >= 12")
    page.click('button[data-action="pause"]')
    step, box = event_and_current_box(page)
    assert step == box
    # a click on a box shows that step's next event and stays on the replay
    index = int(page.get_attribute(".gr-event", "data-event-index"))
    page.click('.gr-event-row a[data-step="attn.softmax"]')
    page.wait_for_function("() => document.querySelector('.gr-event').dataset.stepId === 'attn.softmax'")
    assert page.url == base_url + "replay/"
    assert int(page.get_attribute(".gr-event", "data-event-index")) > index
    assert event_and_current_box(page) == ("attn.softmax", "attn.softmax")
    # the generation has no loss event: that box is dimmed and still opens the step page
    loss = page.locator('.gr-event-row a[data-step="loss"]')
    assert "gl-map-step--absent" in loss.get_attribute("class")
    loss.click()
    page.wait_for_url(base_url + "steps/loss/")
    watch.assert_clean()
