"""The training time-lapse (docs_build/html/timelapse.py) on the demo site: the record it
shows is the demo's training (its first frame is what the engine computes for the shipped
step-0 weights, its last what it computes for the shipped model), the film strips hold the
frames in order, the "formed" steps follow the record's rule, and its sentences say what
the numbers say."""

from __future__ import annotations

import json
import re
import struct
import zlib

import numpy as np
import pytest

from glassllm import DEMO_CHECKPOINT, GlassLM, Tracer
from docs_build.text.numbers import format_value

from .conftest import text_of

RECORD = DEMO_CHECKPOINT / "record" / "snapshots.json"
THRESHOLDS = {"previous_token": 0.6, "induction": 0.5}  # scripts/train_demo.py's FORMS_AT
# the site's own rule: one threshold for every head, glassllm.circuits.QUALIFIES
SITE_FORMS = 0.5


def site_formed(record, kind: str) -> int:
    """The step the site says the head formed: the first snapshot from which its score stays
    at or above SITE_FORMS to the end (written out here, apart from training_record.py)."""
    head = record["featured"][kind]
    series = [s[f"{kind}_scores"][head["layer"]][head["head"]] for s in record["snapshots"]]
    steps = [s["step"] for s in record["snapshots"]]
    return min(steps[i] for i in range(len(series)) if min(series[i:]) >= SITE_FORMS)


def test_the_site_forms_every_head_at_one_threshold(record):
    from docs_build.data.training_record import FORMS, load_training_record
    from glassllm import circuits
    assert FORMS == SITE_FORMS == circuits.QUALIFIES
    card = json.loads((DEMO_CHECKPOINT / "training.json").read_text(encoding="utf-8"))
    loaded = load_training_record(str(DEMO_CHECKPOINT), card)
    for kind in KINDS:
        assert loaded.formed_at[kind] == site_formed(record, kind), kind
KINDS = ("previous_token", "induction")


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads(RECORD.read_text(encoding="utf-8"))


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


def test_the_first_and_last_frames_are_the_engines_attention_of_the_shipped_weights(record):
    tokens = record["probe"]["tokens"]
    initial = GlassLM.from_pretrained(DEMO_CHECKPOINT / "record" / "step-0")
    final = GlassLM.from_pretrained(DEMO_CHECKPOINT)
    for kind in KINDS:
        head = record["featured"][kind]
        frames = [np.asarray(s["attention"][kind]) for s in record["snapshots"]]
        for model, frame in ((initial, frames[0]), (final, frames[-1])):
            expected = attention_on_probe(model, tokens, head["layer"], head["head"])
            # stored to 3 decimals (5e-4) from PyTorch's run, which differs from the engine a little
            np.testing.assert_allclose(frame, expected, atol=1e-3)


def test_formed_at_is_the_first_snapshot_from_which_the_score_stays_above_the_threshold(record):
    steps = [s["step"] for s in record["snapshots"]]
    for kind in KINDS:
        head = record["featured"][kind]
        series = [s[f"{kind}_scores"][head["layer"]][head["head"]] for s in record["snapshots"]]
        above = [v >= THRESHOLDS[kind] for v in series]
        first = next(i for i in range(len(above)) if all(above[i:]))
        assert record["formed_at"][kind] == steps[first]
        assert not above[first - 1]  # it was below just before


def test_the_film_strips_hold_every_snapshot_in_order(site, record):
    steps = [s["step"] for s in record["snapshots"]]
    n = len(record["probe"]["tokens"])
    for kind in KINDS:
        strip = decode_png((site.dir / "assets" / "glassllm" / "timelapse" / f"{kind}.png").read_bytes())
        assert strip.shape == (n, n * len(steps), 3)
        for k in (0, steps.index(site_formed(record, kind)), len(steps) - 1):
            frame = strip[:, k * n:(k + 1) * n].astype(int)
            weights = np.asarray(record["snapshots"][k]["attention"][kind])
            future = np.triu(np.ones((n, n), dtype=bool), 1)
            assert (frame[future] == 0xD9).all()  # the masked future: light grey
            dark, light = (weights > 0.8) & ~future, (weights < 0.02) & ~future
            assert dark.any() or k == 0
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
        head = record["featured"][kind]
        series = [s[f"{kind}_scores"][head["layer"]][head["head"]] for s in record["snapshots"]]
        scores = re.search(rf'data-kind="{kind}" data-scores="([^"]*)"', box).group(1).split()
        assert scores == [format_value(v) for v in series]
    if "steps/" in url:  # the step page shows the frames; the card tells what they show
        assert 'class="gl-tl-story"' not in box and "model-card/" in page[page.index(box):]
        return
    story = text_of(re.search(r'<div class="gl-tl-story">(.*?)</div>', box, re.S).group(1))
    mark = "," if url.startswith("pt/") else "."  # each language writes its decimal mark
    for kind in KINDS:
        head = record["featured"][kind]
        series = [s[f"{kind}_scores"][head["layer"]][head["head"]] for s in record["snapshots"]]
        formed = site_formed(record, kind)
        at = steps.index(formed)
        rise = int(np.argmax(np.diff(series)))
        for figure in (str(formed), format_value(min(series[at:]), mark),
                       format_value(series[-1], mark), format_value(series[rise], mark),
                       format_value(series[rise + 1], mark),
                       str(steps[rise]), str(steps[rise + 1])):
            assert figure in story, (kind, figure, story)
    # the data mixes: the last snapshot of the first one, and the held-out loss at the end
    assert f"{steps[[s['phase'] for s in record['snapshots']].index('english') - 1]}" in story
    assert format_value(record["snapshots"][-1]["heldout_loss"], mark) in story


@pytest.mark.browser
def test_the_slider_and_play_button_move_through_the_snapshots(open_page, record):
    watch = open_page("model-card/")
    page = watch.page
    box = page.locator(".gl-timelapse")
    slider = box.locator("input.gl-tl-slider")
    slider.wait_for(state="visible")  # shown once the script runs
    steps = [s["step"] for s in record["snapshots"]]
    head = record["featured"]["induction"]
    k = steps.index(site_formed(record, "induction"))
    score = format_value(record["snapshots"][k]["induction_scores"][head["layer"]][head["head"]])
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
