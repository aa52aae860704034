"""The replay page in a real browser (Debian's chromium via Playwright), on the built site.

Every test waits for conditions (never for a fixed time) and ends by checking that no
request left 127.0.0.1 and the console stayed free of errors.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, Config, GlassLM, Tracer, encode
from glassllm.__main__ import main as cli

pytestmark = pytest.mark.browser

EVENT = ".gr-event"


def current(page) -> dict:
    return page.eval_on_selector(EVENT, """e => ({
        index: Number(e.dataset.eventIndex), step: e.dataset.stepId,
        layer: e.dataset.layer, gen: e.dataset.gen === undefined ? null : Number(e.dataset.gen)})""")


def grid_values(page) -> np.ndarray:
    """The inspector's cells (data-value, the exact text), as float32 rows."""
    rows = page.eval_on_selector_all(".gr-grid tbody tr", """rows => rows.map(r =>
        Array.from(r.querySelectorAll('td.gr-cell')).map(c => c.dataset.value))""")
    return np.array([[float(v) for v in row] for row in rows], dtype=np.float32)


def grid_origin(page) -> tuple[int, int]:
    """Row and column of the window's first cell (large slices are shown in windows)."""
    cell = page.locator(".gr-grid td.gr-cell").first
    return int(cell.get_attribute("data-row")), int(cell.get_attribute("data-col"))


def jump(page, step=None, layer=None, gen=None):
    """Use the page's own filters to reach an event, then wait for it to show; a filter
    left as None is set back to "any"."""
    for name, value in (("step", step), ("layer", layer), ("gen", gen)):
        if page.is_visible(f"#gr-filter-{name}"):  # no token filter for the loss run
            page.select_option(f"#gr-filter-{name}", "" if value is None else str(value))
    condition = []
    if step is not None:
        condition.append(f"e.dataset.stepId === {json.dumps(step)}")
    if layer is not None:
        condition.append(f"e.dataset.layer === '{layer}'")
    if gen is not None:
        condition.append(f"e.dataset.gen === '{gen}'")
    page.wait_for_function(f"() => {{ const e = document.querySelector('{EVENT}');"
                           f" return {' && '.join(condition) or 'true'}; }}")


def binary_index(path: Path) -> dict:
    """The JSON index of a version 2 recording: everything but the arrays."""
    data = path.read_bytes()
    return json.loads(data[16:16 + int.from_bytes(data[12:16], "little")])


@pytest.fixture(scope="module")
def run_json(built_site) -> dict:
    return binary_index(built_site / "assets/replay/run.glrec")


@pytest.fixture(scope="module")
def engine_run(run_json):
    """The page's generation run recomputed with the engine, from its recorded settings."""
    cfg = run_json["config"]
    model = GlassLM.from_pretrained(DEMO_CHECKPOINT)  # mkdocs.yml's example: model: demo
    assert asdict(model.config) == cfg
    sampling = run_json["sampling"]
    steps = list(model.generate(run_json["prompt"]["tokens"], len(run_json["generated"]["tokens"]),
                                greedy=sampling["greedy"],
                                temperature=sampling["temperature"] or 1.0,
                                top_k=sampling["top_k"], seed=sampling["seed"], trace=True))
    return model, steps  # with the KV cache, as the site's recording was made


def test_play_advances_and_pause_stops(open_replay):
    watch = open_replay()
    page = watch.page
    assert current(page)["index"] == 0
    page.fill("#gr-speed", "100")  # fastest
    page.click('button[data-action="play"]')
    page.wait_for_function(f"() => Number(document.querySelector('{EVENT}').dataset.eventIndex) >= 5")
    assert page.is_disabled('button[data-action="play"]')
    page.click('button[data-action="pause"]')
    assert page.is_enabled('button[data-action="play"]')
    stopped = current(page)["index"]
    # at the fastest speed an event would follow within ~17 ms; give it far longer
    page.evaluate("() => new Promise(done => setTimeout(done, 400))")
    assert current(page)["index"] == stopped
    watch.assert_clean()


def test_next_and_previous_move_by_one_and_keys_work(open_replay):
    watch = open_replay()
    page = watch.page
    page.click('button[data-action="next"]')
    page.click('button[data-action="next"]')
    assert current(page)["index"] == 2
    page.click('button[data-action="prev"]')
    assert current(page)["index"] == 1
    assert page.input_value("#gr-timeline") == "1"
    page.click("h1")  # focus outside any control
    page.keyboard.press("ArrowRight")
    assert current(page)["index"] == 2
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert current(page)["index"] == 0
    page.keyboard.press("ArrowLeft")  # nothing before the first event
    assert current(page)["index"] == 0
    page.keyboard.press(" ")
    assert page.is_disabled('button[data-action="play"]')  # playing
    page.keyboard.press(" ")
    assert page.is_enabled('button[data-action="play"]')
    # typing in the site's search box must not drive the replay
    index = current(page)["index"]
    search = page.locator("input.md-search__input")
    if search.count():
        search.first.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.type(" a ")
        assert current(page)["index"] == index
        assert page.is_enabled('button[data-action="play"]')
    watch.assert_clean()


def test_timeline_jumps_anywhere(open_replay, run_json):
    watch = open_replay()
    page = watch.page
    last = len(run_json["events"]) - 1
    assert page.get_attribute("#gr-timeline", "max") == str(last)
    page.fill("#gr-timeline", str(last))
    assert current(page) == {"index": last, "step": "sample", "layer": "",
                             "gen": len(run_json["generated"]["tokens"]) - 1}
    assert page.inner_text(".gr-scalar-value").startswith(str(run_json["generated"]["tokens"][-1]))
    watch.assert_clean()


def test_attn_mask_layer_0_shows_minus_infinity_cells(open_replay):
    watch = open_replay()
    page = watch.page
    jump(page, step="attn.mask", layer=0)
    assert current(page)["step"] == "attn.mask" and current(page)["layer"] == "0"
    values = grid_values(page)
    n = values.shape[0]
    above = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.isneginf(values[above]).all() and np.isfinite(values[~above]).all()
    masked = page.locator(".gr-grid td.gr-cell--masked")
    assert masked.count() == above.sum()
    assert masked.first.inner_text() == "−∞"
    assert masked.first.get_attribute("data-value") == "-Infinity"
    # masked cells look different from the others
    style = page.evaluate("""() => {
        const m = getComputedStyle(document.querySelector('td.gr-cell--masked')).backgroundImage;
        const f = getComputedStyle(document.querySelector('td.gr-cell:not(.gr-cell--masked)')).backgroundImage;
        return [m, f]; }""")
    assert style[0] != style[1] and "gradient" in style[0]
    watch.assert_clean()


def test_head_selector_changes_the_values_and_they_equal_the_tracer(open_replay, engine_run,
                                                                    run_json):
    watch = open_replay()
    page = watch.page
    _, steps = engine_run
    gen = len(steps) - 1
    jump(page, step="attn.softmax", layer=1, gen=gen)
    trace = steps[gen].trace
    head0 = grid_values(page)
    np.testing.assert_array_equal(head0, trace.get("attn.softmax", layer=1, head=0).value)
    cfg = run_json["config"]
    last = cfg["n_heads"] - 1  # the last query head
    page.select_option('.gr-inspector select[data-axis="head"]', str(last))
    page.wait_for_function("(h) => document.querySelector('.gr-inspector select[data-axis=head]')"
                           ".value === h", arg=str(last))
    shown = grid_values(page)
    assert not np.array_equal(head0, shown)
    np.testing.assert_array_equal(shown, trace.get("attn.softmax", layer=1, head=last).value)
    # grouped-query attention: the key head shown is the one that serves that query head
    jump(page, step="attn.k_rope")
    kv = last // (cfg["n_heads"] // cfg["n_kv_heads"])
    assert page.input_value('.gr-inspector select[data-axis="kv_head"]') == str(kv)
    shown, (r0, c0) = grid_values(page), grid_origin(page)  # a window of a wide head's columns
    rows, cols = shown.shape
    np.testing.assert_array_equal(
        shown, trace.get("attn.k_rope", layer=1, head=kv).value[r0:r0 + rows, c0:c0 + cols])
    watch.assert_clean()


def test_values_shown_equal_the_tracers(open_replay, engine_run, run_json, built_site):
    watch = open_replay()
    page = watch.page
    model, steps = engine_run
    assert run_json["generated"]["tokens"] == [s.token for s in steps]
    # a 2-D step, a head step of the last block, the logits and the 1-D probabilities
    for gen, step, layer in ((0, "embed", None), (1, "mlp.act", 0), (2, "attn.scores", 1),
                             (len(steps) - 1, "logits", None), (1, "probs", None)):
        jump(page, step=step, layer=layer, gen=gen)
        record = steps[gen].trace.get(step, layer=layer)
        value = record.value[0] if step == "attn.scores" else record.value
        shown = grid_values(page)
        if value.ndim == 1:
            value = value[None]
        rows, cols = shown.shape
        r0, c0 = grid_origin(page)
        np.testing.assert_array_equal(shown, value[r0:r0 + rows, c0:c0 + cols],
                                      err_msg=f"{step} gen {gen}")
        if cols < value.shape[1]:  # a window: the page says so instead of cutting silently
            assert f"of {value.shape[1]}" in page.inner_text(".gr-window")
    # the sampled token is a scalar
    jump(page, step="sample", gen=0)
    assert page.get_attribute(".gr-scalar-value", "data-value") == str(steps[0].token)
    # the loss recording, one click away
    page.check("#gr-rec-loss")
    page.wait_for_function(f"() => document.querySelector('{EVENT}').dataset.gen === undefined")
    loss = binary_index(built_site / "assets/replay/loss.glrec")
    tracer = Tracer()
    tokens = loss["prompt"]["tokens"]
    model.loss(tokens, loss["targets"]["tokens"], trace=tracer)
    assert page.get_attribute("#gr-timeline", "max") == str(len(tracer.records) - 1)
    jump(page, step="loss.grad")
    first = loss["targets"]["tokens"][0] // 32 * 32
    np.testing.assert_array_equal(grid_values(page),
                                  tracer.get("loss.grad").value[:, first:first + 32])
    jump(page, step="loss")
    assert np.float32(float(page.get_attribute(".gr-scalar-value", "data-value"))) == \
        tracer.get("loss").value
    watch.assert_clean()


def test_large_slices_pan_instead_of_being_cut(open_replay, engine_run):
    watch = open_replay()
    page = watch.page
    _, steps = engine_run
    jump(page, step="logits", gen=0)
    logits = steps[0].trace.get("logits").value
    token = steps[0].token
    # the vocabulary window opens on the produced token, marked in the last row
    start = token // 32 * 32
    assert f"columns {start}–{start + 31} of {logits.shape[1]}" in page.inner_text(".gr-window")
    chosen = page.locator(".gr-grid td.gr-cell--chosen")
    assert chosen.count() == 1
    assert chosen.get_attribute("data-col") == str(token)
    assert chosen.get_attribute("data-row") == str(logits.shape[0] - 1)
    np.testing.assert_array_equal(grid_values(page), logits[:, start:start + 32])
    direction = "back" if start else "forward"
    page.click(f'button[data-action="pan-col-{direction}"]')
    start += -32 if start else 32
    page.wait_for_selector(f'.gr-grid td[data-col="{start}"]')
    assert f"columns {start}–{start + 31} of {logits.shape[1]}" in page.inner_text(".gr-window")
    np.testing.assert_array_equal(grid_values(page), logits[:, start:start + 32])
    # the exact value is there on hover and focus
    cell = page.locator(f'.gr-grid td[data-col="{start + 5}"]').first
    assert cell.get_attribute("title").endswith(cell.get_attribute("data-value"))
    cell.hover()
    assert cell.get_attribute("data-value") in page.inner_text(".gr-readout")
    watch.assert_clean()


def test_portuguese_page(open_replay, site_url):
    watch = open_replay("pt/replay/")
    page = watch.page
    assert page.get_attribute("html", "lang").startswith("pt")
    assert page.inner_text('button[data-action="play"]').strip() == "Reproduzir"
    assert page.inner_text('button[data-action="next"]').strip() == "Próximo evento"
    jump(page, step="attn.mask", layer=0)
    assert "Máscara causal" in page.inner_text(".gr-event-title")
    assert page.locator(".gr-grid td.gr-cell--masked").count() > 0
    link = page.locator(".gr-links a").first
    href = link.evaluate("a => a.href")
    assert href == site_url + "pt/steps/attn.mask/"
    source = page.locator(".gr-links a").nth(1).evaluate("a => a.href")
    for url in (href, source.split("#")[0]):
        assert page.evaluate("u => fetch(u).then(r => r.status)", url) == 200
    # with filters set, "next" goes to the next match: the same step and block one token on
    gen = current(page)["gen"]
    page.click('button[data-action="next"]')
    assert current(page)["step"] == "attn.mask" and current(page)["layer"] == "0"
    assert current(page)["gen"] == gen + 1
    page.click("text=Limpar filtros")
    page.click('button[data-action="next"]')
    assert (current(page)["step"], current(page)["layer"]) == ("attn.softmax", "0")
    watch.assert_clean()


def test_english_links_reach_the_step_page_and_source_line(open_replay, site_url):
    watch = open_replay()
    page = watch.page
    jump(page, step="attn.softmax", layer=0)
    links = page.locator(".gr-links a")
    assert links.first.evaluate("a => a.href") == site_url + "steps/attn.softmax/"
    source = links.nth(1).evaluate("a => a.href")
    page.goto(source)
    anchor = source.split("#")[1]
    assert "attn.softmax" in page.inner_text(f"[id='{anchor}']")
    watch.assert_clean()


def test_a_file_recorded_with_the_command_opens(open_replay, tmp_path):
    out = tmp_path / "mine.json"
    assert cli(["record", "glass", "--tokens", "2", "--layers", "1", "--d-model", "16",
                "--heads", "2", "--kv-heads", "1", "--out", str(out)]) == 0
    recorded = json.loads(out.read_text(encoding="utf-8"))
    watch = open_replay()
    page = watch.page
    page.set_input_files("#gr-file", str(out))
    page.wait_for_selector("#gr-rec-file:checked")
    assert "mine.json" in page.inner_text(".gr-message")
    assert page.get_attribute("#gr-timeline", "max") == str(2 * (18 + 5) - 1)
    jump(page, step="attn.mask", gen=1)
    model = GlassLM(Config(**recorded["config"]))
    steps = list(model.generate(encode("glass"), 2, seed=0, trace=True))  # with the KV cache
    np.testing.assert_array_equal(grid_values(page), steps[1].trace.get("attn.mask", 0, 0).value)
    watch.assert_clean()


def test_a_file_that_is_not_a_recording_gets_a_clear_message(open_replay, tmp_path):
    watch = open_replay("pt/replay/")
    page = watch.page
    bad = tmp_path / "notes.txt"
    bad.write_text("hello", encoding="utf-8")
    page.set_input_files("#gr-file", str(bad))
    page.wait_for_selector(".gr-message--error")
    message = page.inner_text(".gr-message")
    assert "notes.txt" in message and "não é uma gravação do glassllm" in message
    assert "python -m glassllm record" in message
    assert page.get_attribute(".gr-message", "role") == "alert"
    # dropped on the player: a JSON file of something else
    page.evaluate("""() => {
        const data = new DataTransfer();
        data.items.add(new File(['{"hello": 1}'], 'other.json', {type: 'application/json'}));
        document.querySelector('.gr').dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true}));
    }""")
    page.wait_for_function("() => document.querySelector('.gr-message').textContent.includes('other.json')")
    assert '"format": "glassllm.recording"' in page.inner_text(".gr-message")
    # the site's recording is still there and playable
    assert page.is_checked("#gr-rec-generation")
    watch.assert_clean()


def test_drop_a_recording(open_replay, tmp_path):
    out = tmp_path / "dropped.json"
    assert cli(["record", "hi", "--tokens", "1", "--layers", "1", "--out", str(out)]) == 0
    watch = open_replay()
    page = watch.page
    page.evaluate("""text => {
        const data = new DataTransfer();
        data.items.add(new File([text], 'dropped.json', {type: 'application/json'}));
        document.querySelector('.gr').dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true}));
    }""", out.read_text(encoding="utf-8"))
    page.wait_for_selector("#gr-rec-file:checked")
    assert page.get_attribute("#gr-timeline", "max") == str(18 + 5 - 1)
    watch.assert_clean()


def test_dark_palette_keeps_the_page_readable(open_replay):
    watch = open_replay(color_scheme="dark")
    page = watch.page
    # switch Material to its dark scheme the way its palette toggle does
    page.evaluate("() => document.body.setAttribute('data-md-color-scheme', 'slate')")
    colors = page.evaluate("""() => {
        const cell = getComputedStyle(document.querySelector('.gr-grid td.gr-cell'));
        const body = getComputedStyle(document.body);
        return [cell.color, body.backgroundColor]; }""")
    assert colors[0] != colors[1]
    watch.assert_clean()


# -- bad files and the site's list of recordings (issue 9, items 1-3) -------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "recordings"


def page_state(page) -> dict:
    """Everything a failed switch must leave as it was: the recording chosen, the timeline,
    the filters, the current event and the inspector (their HTML)."""
    return page.evaluate("""() => ({
        radios: Array.from(document.querySelectorAll('.gr-switch input')).map(
            r => [r.id, r.checked, r.labels[0].textContent]),
        max: document.querySelector('#gr-timeline').max,
        value: document.querySelector('#gr-timeline').value,
        filters: Array.from(document.querySelectorAll('.gr-filters select')).map(s => s.value),
        event: document.querySelector('.gr-event').outerHTML,
        inspector: document.querySelector('.gr-inspector').outerHTML})""")


def huge_embed_file(tmp_path) -> Path:
    """A recording whose first event, embed, is 2000 x 2000 with data of the right length:
    it passed the old page's checks and broke while rendering."""
    doc = json.loads((FIXTURES / "good" / "generation.json").read_text(encoding="utf-8"))
    doc["events"][0].update(shape=[2000, 2000], data=base64.b64encode(
        np.zeros((2000, 2000), dtype="<f4").tobytes()).decode("ascii"))
    path = tmp_path / "embed-2000x2000-full.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("bad", ["invalid-base64-of-valid-length.json", "prompt-tokens-null.json",
                                 "prompt-token-null-inside.json", "step-constructor.json",
                                 "config-n_heads-3-n_kv_heads-2.json", "huge embed"])
def test_a_bad_file_leaves_the_previous_recording_exactly_as_it_was(open_replay, tmp_path, bad):
    path = huge_embed_file(tmp_path) if bad == "huge embed" else FIXTURES / "bad" / bad
    watch = open_replay()
    page = watch.page
    jump(page, step="attn.softmax", layer=1)
    page.select_option('.gr-inspector select[data-axis="head"]', "1")
    page.click('button[data-action="next"]')
    before = page_state(page)
    page.set_input_files("#gr-file", str(path))
    page.wait_for_function("name => document.querySelector('.gr-message--error') && "
                           "document.querySelector('.gr-message').textContent.includes(name)",
                           arg=path.name, timeout=10_000)
    assert "python -m glassllm record" in page.inner_text(".gr-message")
    assert page_state(page) == before
    assert page.locator("#gr-rec-file").count() == 0
    # still playable: the filtered next, then play and pause without filters
    index = current(page)["index"]
    page.click('button[data-action="next"]')
    assert current(page)["index"] > index and current(page)["step"] == "attn.softmax"
    page.click('button[data-action="clear-filters"]')
    page.fill("#gr-speed", "100")
    page.click('button[data-action="play"]')
    start = current(page)["index"]
    page.wait_for_function(f"() => Number(document.querySelector('{EVENT}').dataset.eventIndex) >= {start + 3}")
    page.click('button[data-action="pause"]')
    watch.assert_clean()


def test_a_bad_file_after_a_good_one_keeps_the_good_one(open_replay):
    watch = open_replay()
    page = watch.page
    page.set_input_files("#gr-file", str(FIXTURES / "good" / "loss.json"))
    page.wait_for_selector("#gr-rec-file:checked")
    page.click('button[data-action="next"]')
    before = page_state(page)
    page.set_input_files("#gr-file", str(FIXTURES / "bad" / "invalid-base64-of-valid-length.json"))
    page.wait_for_selector(".gr-message--error")
    assert page_state(page) == before
    assert "loss.json" in page.inner_text("label[for=gr-rec-file]")
    watch.assert_clean()


@pytest.mark.parametrize("bad", ["config-n_heads-100000000.json",
                                 "shape-1000000000-0-1-empty-data.json",
                                 "shape-2**32-2**32-empty-data.json", "nesting-1000-deep.json"])
def test_a_malicious_file_is_refused_at_once_and_the_page_stays_responsive(open_replay, bad):
    watch = open_replay()
    page = watch.page
    before = page_state(page)
    page.set_input_files("#gr-file", str(FIXTURES / "bad" / bad))
    # the old page built 10^8 filter options or a 10^9-row grid here and never answered
    page.wait_for_selector(".gr-message--error", timeout=5_000)
    assert page.evaluate("() => 6 * 7", ) == 42
    assert page_state(page) == before
    page.click('button[data-action="next"]')
    assert current(page)["index"] == 1
    watch.assert_clean()


def test_the_recordings_offered_are_site_jsons_list_in_its_order(open_replay, built_site):
    """The page offers what site.json lists, in that order, with each label in the page's
    language: here a site.json whose list is reversed and relabelled."""
    site = json.loads((built_site / "assets/replay/site.json").read_text(encoding="utf-8"))
    listed = site["recordings"]
    assert [r["id"] for r in listed] == ["generation", "loss", "before", "training"]
    site["recordings"] = [dict(listed[1], label={"en": "The loss", "pt": "A perda"}), listed[0]]

    def reorder(page):
        page.route("**/assets/replay/site.json",
                   lambda route: route.fulfill(status=200, content_type="application/json",
                                               body=json.dumps(site)))

    watch = open_replay("pt/replay/", before=reorder)
    page = watch.page
    radios = page.eval_on_selector_all(".gr-switch input", "rs => rs.map(r => [r.id, r.checked, r.labels[0].textContent])")
    assert radios == [["gr-rec-loss", True, "A perda"], ["gr-rec-generation", False, "Geração"]]
    assert current(page)["gen"] is None  # the loss run, first in the list, is shown
    page.check("#gr-rec-generation")
    page.wait_for_function(f"() => document.querySelector('{EVENT}').dataset.gen === '0'")
    page.click('button[data-action="next"]')
    assert current(page) == {"index": 1, "step": "attn.norm", "layer": "0", "gen": 0}
    # the reader's own file comes after the site's
    page.set_input_files("#gr-file", str(FIXTURES / "good" / "generation.json"))
    page.wait_for_selector("#gr-rec-file:checked")
    ids = page.eval_on_selector_all(".gr-switch input", "rs => rs.map(r => r.id)")
    assert ids == ["gr-rec-loss", "gr-rec-generation", "gr-rec-file"]
    watch.assert_clean()


def test_before_training_is_one_click_away_with_the_untrained_models_values(open_replay,
                                                                           engine_run, run_json):
    """The same snapshot before and after training: the third recording is the example's
    generation by the weights the demo's training started from (GlassLM(config, seed) for the
    seed its report.json records with init "glass"), same prompt."""
    model, _ = engine_run
    training = json.loads((DEMO_CHECKPOINT / "report.json").read_text(encoding="utf-8"))["training"]
    assert training["init"] == "glass"
    untrained = GlassLM(dataclasses.replace(model.config, seed=training["seed"]))
    watch = open_replay()
    page = watch.page
    page.check("#gr-rec-before")
    page.wait_for_function("() => document.querySelector('#gr-rec-before').checked")
    jump(page, step="attn.softmax", layer=1, gen=0)
    prompt, seed = run_json["prompt"]["tokens"], run_json["sampling"]["seed"]
    steps = list(untrained.generate(prompt, 1, seed=seed, trace=True))
    # the site stores this run in float32, the tracer's values exactly
    exact = steps[0].trace.get("attn.softmax", layer=1, head=0).value
    np.testing.assert_array_equal(grid_values(page), exact)
    assert "float32" in page.inner_text(".gr-event")
    page.check("#gr-rec-generation")
    jump(page, step="attn.softmax", layer=1, gen=0)
    trained = list(model.generate(prompt, 1, seed=seed, trace=True))
    np.testing.assert_array_equal(grid_values(page),
                                  trained[0].trace.get("attn.softmax", layer=1, head=0).value)
    watch.assert_clean()


def test_the_player_is_loaded_as_es_modules(built_site):
    html = (built_site / "replay" / "index.html").read_text(encoding="utf-8")
    assert '<script src="../assets/replay/replay.js" type="module"></script>' in html


# -- version 2 recordings (issue 11, item 4) --------------------------------------------------

def test_a_binary_float16_recording_opens_and_scrubbing_shows_its_values(open_replay, tmp_path):
    out = tmp_path / "mine.glrec"
    assert cli(["record", "glass box", "--tokens", "2", "--layers", "2", "--d-model", "16",
                "--heads", "2", "--kv-heads", "1", "--dtype", "float16", "--out", str(out)]) == 0
    model = GlassLM(Config(vocab_size=256, d_model=16, n_layers=2, n_heads=2, n_kv_heads=1,
                           max_len=64))
    steps = list(model.generate(encode("glass box"), 2, seed=0, trace=True))  # record: the KV cache
    records = [r for s in steps for r in s.trace.records]
    watch = open_replay()
    page = watch.page
    page.set_input_files("#gr-file", str(out))
    page.wait_for_selector("#gr-rec-file:checked")
    assert "mine.glrec" in page.inner_text(".gr-message")
    assert page.get_attribute("#gr-timeline", "max") == str(len(records) - 1)
    # scrub the timeline back and forth: each event shows its own values, rounded to float16
    for index in (38, 7, len(records) - 3, 19, 0):  # logits, attn.q_rope, logits, ...
        page.fill("#gr-timeline", str(index))
        page.wait_for_function(f"() => document.querySelector('{EVENT}').dataset.eventIndex === '{index}'")
        record = records[index]
        assert current(page)["step"] == record.id
        value = record.value[0] if record.value.ndim == 3 else record.value
        value = value if value.ndim == 2 else value[None]
        shown = grid_values(page)
        rows, cols = shown.shape
        r0, c0 = grid_origin(page)  # a vocabulary window opens on the produced token
        np.testing.assert_array_equal(
            shown, value[r0:r0 + rows, c0:c0 + cols].astype(np.float16).astype(np.float32),
            err_msg=record.id)
        assert "float16" in page.inner_text(".gr-event")
    jump(page, step="attn.mask", layer=1, gen=1)
    values = grid_values(page)
    assert np.isneginf(values[np.triu_indices(values.shape[0], 1)]).all()
    watch.assert_clean()


def test_the_sites_recording_is_read_in_ranges_where_the_server_allows(open_replay, built_site,
                                                                      engine_run):
    """A server that honours Range (GitHub Pages does; python -m http.server does not): the
    page fetches the start of the file, then only the events it shows."""
    path = built_site / "assets/replay/run.glrec"
    data = path.read_bytes()
    asked = []

    def ranges(route):
        header = route.request.headers.get("range")
        asked.append(header)
        if header is None:
            route.fulfill(status=200, body=data, content_type="application/octet-stream")
            return
        start, end = (int(x) for x in header.removeprefix("bytes=").split("-"))
        end = min(end, len(data) - 1)
        route.fulfill(status=206, body=data[start:end + 1], headers={
            "Content-Range": f"bytes {start}-{end}/{len(data)}",
            "Content-Type": "application/octet-stream"})

    watch = open_replay(before=lambda page: page.route("**/assets/replay/run.glrec", ranges))
    page = watch.page
    _, steps = engine_run
    gen = len(steps) - 1
    jump(page, step="logits", gen=gen)  # near the end of the file, past the first range
    logits = steps[gen].trace.get("logits").value
    r0, c0 = grid_origin(page)
    shown = grid_values(page)
    np.testing.assert_array_equal(shown, logits[r0:r0 + shown.shape[0], c0:c0 + shown.shape[1]])
    assert asked[0] == "bytes=0-262143" and None not in asked
    served = sum(int(h.split("-")[1]) - int(h.removeprefix("bytes=").split("-")[0]) + 1
                 for h in asked[1:])
    assert len(asked) >= 2 and 262144 + served < len(data)
    watch.assert_clean()


def test_a_version_1_file_listed_in_site_json_still_opens(open_replay, built_site):
    site = json.loads((built_site / "assets/replay/site.json").read_text(encoding="utf-8"))
    site["recordings"].insert(0, {"id": "old", "file": "old.json",
                                  "label": {"en": "Old JSON", "pt": "JSON antigo"}})
    # a file from before the cache: version 1, no "cache" field, every step the full recompute
    old = (FIXTURES / "good" / "generation-written-before-the-cache-field.json").read_bytes()

    def routes(page):
        page.route("**/assets/replay/site.json", lambda route: route.fulfill(
            status=200, content_type="application/json", body=json.dumps(site)))
        page.route("**/assets/replay/old.json", lambda route: route.fulfill(
            status=200, content_type="application/json", body=old))

    watch = open_replay(before=routes)
    page = watch.page
    assert page.is_checked("#gr-rec-old")
    jump(page, step="attn.mask", gen=1)
    values = grid_values(page)
    assert values.shape == (3, 3) and np.isneginf(values[np.triu_indices(3, 1)]).all()
    page.check("#gr-rec-generation")
    page.wait_for_function("() => document.querySelector('#gr-rec-generation').checked")
    watch.assert_clean()
