"""The training time-lapse (docs_build/html/timelapse.py) on the demo site: the record it
shows is the subword demo's training_record.json, read here at test time (its first frame is
what the engine computes for the run's own initial weights, GlassLM(config, the report's
seed), its last what it computes for the shipped model), the film strips hold the frames in
order, "formed" follows the one rule for every head, and its sentences say what the numbers
say, in both languages."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import struct
import zlib

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer
from glassllm.lessons import formed_step
from docs_build.text.numbers import format_value

from .conftest import text_of

REPORT = json.loads((DEMO_CHECKPOINT / "report.json").read_text(encoding="utf-8"))
RECORD = DEMO_CHECKPOINT / REPORT["record"]["file"]
KINDS = ("previous_token", "induction")


def series_of(record, kind: str, head: int | None = None) -> list[float]:
    layer = record["featured"][kind]["layer"]
    head = record["featured"][kind]["head"] if head is None else head
    return [s[f"{kind}_scores"][layer][head] for s in record["snapshots"]]


def site_formed(record, kind: str, head: int | None = None) -> int | None:
    """The step a head formed: the first snapshot from which its score stays at or above the
    record's threshold to the end (written out here, apart from training_record.py)."""
    series = series_of(record, kind, head)
    steps = [s["step"] for s in record["snapshots"]]
    above = [i for i in range(len(series)) if min(series[i:]) >= record["threshold"]]
    return steps[above[0]] if above else None


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads(RECORD.read_text(encoding="utf-8"))


def test_the_site_forms_every_head_by_the_one_rule(record):
    from docs_build.data.training_record import load_training_record
    from glassllm import circuits
    assert record["threshold"] == circuits.QUALIFIES
    loaded = load_training_record(str(DEMO_CHECKPOINT), REPORT)
    steps = [s["step"] for s in record["snapshots"]]
    for kind in KINDS:
        heads = len(record["snapshots"][0][f"{kind}_scores"][0])
        mine = [site_formed(record, kind, h) for h in range(heads)]
        assert loaded.heads_formed_at[kind] == mine == record["heads_formed_at"][kind], kind
        assert mine == [formed_step(steps, series_of(record, kind, h)) for h in range(heads)]
        assert loaded.formed_at[kind] == site_formed(record, kind) == REPORT["record"]["formed_at"][kind]


def test_a_record_that_contradicts_its_own_scores_is_refused(tmp_path, record):
    from docs_build.data.training_record import load_training_record
    from docs_build.errors import DocsBuildError
    wrong = dict(record, heads_formed_at={**record["heads_formed_at"],
                                          "induction": [0] * len(record["heads_formed_at"]["induction"])})
    (tmp_path / "training_record.json").write_text(json.dumps(wrong), encoding="utf-8")
    with pytest.raises(DocsBuildError, match=r"heads_formed_at\.induction is \[0, .*by the rule"):
        load_training_record(str(tmp_path), REPORT)
    shutil.copy(RECORD, tmp_path / "training_record.json")
    bad = dict(REPORT, phases=REPORT["phases"][:1])
    with pytest.raises(DocsBuildError, match="phase is not one of report.json's 1 phases"):
        load_training_record(str(tmp_path), bad)


def attention_on_probe(model: GlassLM, tokens: list[int], layer: int, head: int) -> np.ndarray:
    tracer = Tracer()
    model.forward(tokens, trace=tracer)
    return np.asarray(tracer.get("attn.softmax", layer=layer, head=head).value)


def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB PNG with unfiltered rows (what the build writes) as (h, w, 3)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert (depth, colour) == (8, 2)
    idat, at = b"", 8
    while at < len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + size]
        at += 12 + size
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert (rows[:, 0] == 0).all()  # filter "none" on every row
    return rows[:, 1:].reshape(height, width, 3)


def test_the_first_and_last_frames_are_the_engines_attention_of_the_runs_weights(record):
    tokens = record["probe"]["tokens"]
    final = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    training = REPORT["training"]
    assert training["init"] == "glass"
    initial = GlassLM(dataclasses.replace(final.config, seed=training["seed"]))
    assert record["snapshots"][0]["step"] == 0
    for kind in KINDS:
        head = record["featured"][kind]
        frames = [np.asarray(s["attention"][kind]) for s in record["snapshots"]]
        for model, frame in ((initial, frames[0]), (final, frames[-1])):
            expected = attention_on_probe(model, tokens, head["layer"], head["head"])
            # stored as float16, then to 3 decimals
            np.testing.assert_allclose(frame, expected, atol=1.5e-3)


def shown_frames(record, kind: str) -> list[int]:
    steps = [s["step"] for s in record["snapshots"]]
    formed = site_formed(record, kind)
    return sorted({0, len(steps) // 2, len(steps) - 1}
                  | ({steps.index(formed)} if formed is not None else set()))


def test_the_film_strips_hold_every_snapshot_in_order(site, record):
    steps = [s["step"] for s in record["snapshots"]]
    n = len(record["probe"]["tokens"])
    for kind in KINDS:
        strip = decode_png((site.dir / "assets" / "glassllm" / "timelapse" / f"{kind}.png").read_bytes())
        assert strip.shape == (n, n * len(steps), 3)
        for k in shown_frames(record, kind):
            frame = strip[:, k * n:(k + 1) * n].astype(int)
            weights = np.asarray(record["snapshots"][k]["attention"][kind])
            future = np.triu(np.ones((n, n), dtype=bool), 1)
            assert (frame[future] == 0xD9).all()  # the masked future: light grey
            dark, light = (weights > 0.8) & ~future, (weights < 0.02) & ~future
            assert (frame[dark][:, 0] < 60).all()  # dark blue (the scale is 48, 98, 150 at 0.8)
            assert (frame[light].min(axis=-1) > 230).all()  # near white


@pytest.mark.parametrize("url", ["model-card/", "steps/attn.softmax/", "pt/model-card/",
                                 "pt/steps/attn.softmax/"])
def test_the_pages_story_names_the_records_steps_and_scores(site, record, url):
    page = site.html(url)
    box = re.search(r'<div class="gl-timelapse".*?<div class="gl-tl-controls"', page, re.S).group(0)
    steps = [s["step"] for s in record["snapshots"]]
    assert re.search(r'data-steps="([^"]*)"', box).group(1) == " ".join(map(str, steps))
    for kind in KINDS:
        scores = re.search(rf'data-kind="{kind}" data-scores="([^"]*)"', box).group(1).split()
        assert scores == [format_value(v) for v in series_of(record, kind)]
    if "steps/" in url:  # the step page shows the frames; the card tells what they show
        assert 'class="gl-tl-story"' not in box and "model-card/" in page[page.index(box):]
        return
    story = text_of(re.search(r'<div class="gl-tl-story">(.*?)</div>', box, re.S).group(1))
    mark = "," if url.startswith("pt/") else "."  # each language writes its decimal mark
    for kind in KINDS:
        series = series_of(record, kind)
        formed = site_formed(record, kind)
        if formed is None:
            never = "never formed" if mark == "." else "nunca se formou"
            assert never in story and format_value(series[-1], mark) in story
            peak = int(np.argmax(series))  # its highest score and when: it may have fallen back
            assert format_value(series[peak], mark) in story and str(steps[peak]) in story
            continue
        at = steps.index(formed)
        figures = [format_value(min(series[at:]), mark)]
        if at > 0:
            rise = int(np.argmax(np.diff(series)))
            figures += [str(formed), format_value(series[-1], mark),
                        format_value(series[rise], mark), format_value(series[rise + 1], mark),
                        str(steps[rise]), str(steps[rise + 1])]
        for figure in figures:
            assert figure in story, (kind, figure, story)
    # every head of each kind's layer: when it formed, or its last score
    for kind in KINDS:
        for head, step in enumerate(record["heads_formed_at"][kind]):
            if step is not None:
                assert re.search(rf"\b{head}\b[^.;]*?\b{step}\b", story), (kind, head)
            else:
                assert f"{head} ({format_value(series_of(record, kind, head)[-1], mark)})" in story
    # the English-twice ratio from step 0 to the end, and the held-out loss
    ratios = [s["copy_ratio"] for s in record["snapshots"]]
    for value in (ratios[0], ratios[-1], min(ratios), record["snapshots"][0]["heldout_loss"],
                  record["snapshots"][-1]["heldout_loss"]):
        assert format_value(value, mark) in story


def farthest_from(points: str, exact: list[tuple[float, float]]) -> float:
    """The largest distance from a point of ``exact`` to the polyline ``points`` draws."""
    drawn = [tuple(map(float, p.split(","))) for p in points.split()]
    assert drawn[0][0] == round(exact[0][0]) and drawn[-1][0] == round(exact[-1][0])

    def to_segment(p, a, b):
        (px, py), (ax, ay), (bx, by) = p, a, b
        length = (bx - ax) ** 2 + (by - ay) ** 2
        t = 0.0 if not length else max(0.0, min(1.0, ((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / length))
        return math.hypot(px - ax - t * (bx - ax), py - ay - t * (by - ay))
    return max(min(to_segment(p, a, b) for a, b in zip(drawn, drawn[1:])) for p in exact)


def test_every_head_is_drawn_and_tabled_at_every_snapshot(site, record):
    page = site.html("model-card/")
    steps = [s["step"] for s in record["snapshots"]]
    for kind in KINDS:
        svg = re.search(rf'<svg[^>]*class="gl-tl-heads-chart" data-kind="{kind}".*?</svg>', page, re.S).group(0)
        lines = dict(re.findall(r'<polyline data-head="(\d+)" points="([^"]+)"', svg))
        heads = len(record["heads_formed_at"][kind])
        assert sorted(map(int, lines)) == list(range(heads))
        # every snapshot's score is on the drawn line (the 320 x 200 chart: plot 276 x 146 at
        # (34, 22)), within a pixel: the line keeps only the points it needs to pass them all
        for h, points in lines.items():
            series = [s[f"{kind}_scores"][record["featured"][kind]["layer"]][int(h)]
                      for s in record["snapshots"]]
            exact = [(34 + 276 * step / steps[-1], 22 + 146 * (1 - min(v, 1.0)))
                     for step, v in zip(steps, series)]
            assert farthest_from(points, exact) <= 1.25, (kind, h)
        marked = sorted(int(h) for h in re.findall(r'class="gl-tl-formed" data-kind="[^"]+" data-head="(\d+)"', svg))
        assert marked == [h for h, step in enumerate(record["heads_formed_at"][kind]) if step is not None]
    # the chart beside the frames: the English-twice ratio at every snapshot
    chart = re.search(r'<svg[^>]*class="gl-tl-chart".*?</svg>', page, re.S).group(0)
    ratio = re.search(r'<polyline data-series="copy_ratio" points="([^"]+)"', chart).group(1)
    ratios = [s["copy_ratio"] for s in record["snapshots"]]
    top = max(1.0, math.ceil(10 * max(ratios)) / 10)  # the right axis (640 x 260: plot 548 x 202)
    exact = [(48 + 548 * step / steps[-1], 22 + 202 * (1 - v / top)) for step, v in zip(steps, ratios)]
    assert farthest_from(ratio, exact) <= 1.25
    table = re.search(r'<table class="gl-card-table gl-tl-table">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r'<tr data-step="(\d+)">(.*?)</tr>', table, re.S)
    # the rows: every 100 steps (a multiple of 100 that keeps a long run to about 60 rows),
    # where a phase begins, where a head forms and the snapshot before, and the last
    phases = [s["phase"] for s in record["snapshots"]]
    formed = {steps.index(step) + d for kind in KINDS for step in record["heads_formed_at"][kind]
              if step is not None for d in (-1, 0)}
    every = 100 * max(1, math.ceil(steps[-1] / 6000))
    shown = [i for i, step in enumerate(steps) if step % every == 0 or i == len(steps) - 1
             or (i and phases[i] != phases[i - 1]) or i in formed]
    assert [int(step) for step, _ in rows] == [steps[i] for i in shown]
    for (step, row), snapshot in zip(rows, [record["snapshots"][i] for i in shown]):
        cells = [text_of(c) for c in re.findall(r"<td>(.*?)</td>", row)]
        assert cells[4] == format_value(snapshot["copy_ratio"])
        scores = [format_value(v) for kind in KINDS
                  for v in snapshot[f"{kind}_scores"][record["featured"][kind]["layer"]]]
        assert [c.split(" (")[0] for c in cells[5:]] == scores


@pytest.mark.browser
def test_the_slider_and_play_button_move_through_the_snapshots(open_page, record):
    watch = open_page("model-card/")
    page = watch.page
    box = page.locator(".gl-timelapse")
    slider = box.locator("input.gl-tl-slider")
    slider.wait_for(state="visible")  # shown once the script runs
    steps = [s["step"] for s in record["snapshots"]]
    formed = site_formed(record, "induction")
    k = steps.index(formed) if formed is not None else len(steps) // 2
    score = format_value(series_of(record, "induction")[k])
    frame = box.locator('figure[data-kind="induction"] .gl-tl-frame')
    last = frame.screenshot()
    slider.fill(str(k))
    caption = box.locator('figure[data-kind="induction"] figcaption')
    assert caption.inner_text().endswith(f"{steps[k]}: score {score}")
    assert frame.get_attribute("aria-label") == caption.inner_text()
    assert box.locator("output.gl-tl-step").inner_text() == f"step {steps[k]}"
    # the frame shown is the k-th of the strip, and it looks unlike the last one
    width = frame.evaluate("el => el.clientWidth")
    offset = frame.evaluate("el => getComputedStyle(el).backgroundPositionX")
    assert abs(float(offset.rstrip("%")) - 100 * k / (len(steps) - 1)) < 1e-3
    assert width > 0 and frame.screenshot() != last
    # the chart's line stands at the shown step
    x = float(box.locator(".gl-tl-now").get_attribute("x1"))
    xs = [float(v) for v in box.get_attribute("data-x").split()]
    assert x == xs[k]
    slider.fill("0")
    box.locator("button.gl-tl-play").click()
    page.wait_for_function("() => Number(document.querySelector('.gl-tl-slider').value) >= 2")
    box.locator("button.gl-tl-play").click()  # pause
    held = slider.input_value()
    page.wait_for_timeout(1000)
    assert slider.input_value() == held
    watch.assert_clean()


@pytest.mark.parametrize("lang_code", ["en", "pt"])
def test_a_head_that_never_formed_is_told_by_its_highest_score_and_whether_it_fell_back(lang_code):
    from docs_build.data.training_record import load_training_record
    from docs_build.html.timelapse import story
    from docs_build.text.languages import LANGUAGES
    from docs_build.text.ui import load_ui
    lang = next(lang for lang in LANGUAGES if lang.code == lang_code)
    ui = load_ui(DEMO_CHECKPOINT.parents[2] / "docs", lang)
    loaded = load_training_record(str(DEMO_CHECKPOINT), REPORT)
    mark = "," if lang_code == "pt" else "."
    for threshold in (0.95, 0.0001):  # no head reaches it / every head passes it, then (below)
        never = dataclasses.replace(loaded, threshold=threshold,
                                    formed_at={kind: None for kind in KINDS})
        said = " ".join(story(never, ui)[:len(KINDS)])
        for kind in KINDS:
            series = never.series(kind)
            peak = int(np.argmax(series))
            assert format_value(series[peak], mark) in said and str(never.steps[peak]) in said
        fell_back = ("fell back below" if lang_code == "en" else "voltou a ficar abaixo")
        assert (fell_back in said) == (threshold < 0.5), said
