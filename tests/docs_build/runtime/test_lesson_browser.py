"""The "Watch it learn" page in Debian's chromium, every request to another host aborted: the
recording plays at once without loading the runtime, window.glassllm.train gives the native
lesson's snapshots, and Train it yourself trains, pauses, steps and ablates at a phone's width.
Short runs (a lesson of fewer steps is exactly the start of the full one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glassllm.lessons import Lesson
from tests import hosts
from tests.docs_build.runtime.test_browser import LOAD_TIMEOUT, open_watched
from tests.docs_build.test_phone import PHONE, WIDEST

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(hosts.HOST != "mkdocs", reason="runs once, under MkDocs")]

TRAIN = """async (options) => {
  const seen = [];
  const result = await glassllm.train({ ...options, onSnapshot: (s) => seen.push(s.step) });
  return { ...result, seen };
}"""
NUMBERS = ("loss", "first_copy_loss", "second_copy_loss", "previous_token", "induction")
# the Python run's requests: Pyodide, the worker, the wheels
ASKED = ("/pyodide/", "worker.js", "/wheels/", "client.js")


def test_the_recording_plays_at_once_without_loading_the_runtime(browser, base_url):
    watch = open_watched(browser, base_url + "learn/", width=PHONE)
    page = watch.page
    try:
        player = page.locator('.glassllm-lesson[data-mode="player"]')
        player.locator(".gl-lesson-chart").first.wait_for()
        # it plays through to the end by itself
        page.wait_for_function("() => document.querySelector('[data-mode=player]').dataset.step === '800'",
                               timeout=60_000)
        slider = player.locator(".gl-lesson-slider")
        slider.fill("39")  # scrub back: snapshot 39 is step 390
        assert player.get_attribute("data-step") == "390"
        recorded = json.loads((ROOT / "docs_build/data/lesson_induction.json").read_text())
        readout = player.locator(".gl-lesson-readout").inner_text()
        assert readout.startswith("Step 390:")
        assert f"step {recorded['formed']['previous_token']}." in readout
        assert player.locator("canvas.gl-lesson-attention").count() == 2
        assert page.evaluate("() => glassllm.state") == "idle"
        assert not [url for url in watch.requests if any(part in url for part in ASKED)]
        assert page.evaluate(WIDEST)["scrollWidth"] <= PHONE
        watch.assert_clean()
    finally:
        page.context.close()


def test_train_gives_the_native_lessons_snapshots(browser, base_url):
    watch = open_watched(browser, base_url + "steps/attn.softmax/")
    try:
        got = watch.page.evaluate(TRAIN, {"seed": 0, "steps": 20})
        native = Lesson(0, steps=20)
        native.advance()
        assert [s["step"] for s in got["history"]] == [s.step for s in native.history] == [0, 10, 20]
        assert got["seen"] == [0, 10, 20]
        for mine, theirs in zip(got["history"], native.history):
            for name in NUMBERS:
                assert mine[name] == pytest.approx(theirs[name], abs=1e-3), (theirs.step, name)
            assert mine["previous_token_head"] == theirs.previous_token_head
        assert got["formed"] == native.formed
        assert [row["name"] for row in got["check"]["ablations"]] == [
            row.name for row in native.check.ablations]
        watch.assert_clean()
    finally:
        watch.page.context.close()


def test_train_it_yourself_pauses_steps_and_ablates_on_a_phone(browser, base_url):
    watch = open_watched(browser, base_url + "pt/learn/", width=PHONE)
    page = watch.page
    try:
        trainer = page.locator('.glassllm-lesson[data-mode="trainer"]')
        start = trainer.locator("button").first
        start.wait_for()
        assert page.evaluate("() => glassllm.state") == "idle"  # nothing until asked
        trainer.evaluate("(mount) => { mount.dataset.steps = '30'; }")
        start.click()
        page.wait_for_function("() => Number(document.querySelector('[data-mode=trainer]').dataset.step) >= 1",
                               timeout=LOAD_TIMEOUT)
        start.click()  # pause: the piece under way finishes, no other starts
        step_button = trainer.get_by_role("button", name="Treinar até o próximo instantâneo")
        step_button.wait_for(state="visible")
        paused = int(trainer.get_attribute("data-step"))
        page.wait_for_timeout(1500)
        assert int(trainer.get_attribute("data-step")) == paused
        step_button.click()  # to the next snapshot
        page.wait_for_function(f"() => Number(document.querySelector('[data-mode=trainer]').dataset.step) > {paused}",
                               timeout=LOAD_TIMEOUT)
        assert int(trainer.get_attribute("data-step")) % 10 == 0
        start.click()  # resume to the end
        page.wait_for_function("() => document.querySelector('[data-mode=trainer]').dataset.check",
                               timeout=LOAD_TIMEOUT)
        assert trainer.get_attribute("data-step") == "30"
        assert "30 passos treinados" in trainer.locator(".gl-lesson-progress").inner_text()
        assert trainer.locator(".gl-lesson-chart").count() == 2
        trainer.locator(".gl-lesson-ablation button").first.click()
        page.wait_for_function("() => document.querySelector('[data-mode=trainer]').dataset.ablated",
                               timeout=LOAD_TIMEOUT)
        reply = json.loads(trainer.get_attribute("data-ablated"))
        native = Lesson(0, steps=30)
        native.advance()
        head = native.history[-1].previous_token_head
        assert reply["heads"] == [[0, head]]
        expected = native.measure([(0, head)])
        assert reply["edited"]["second_copy_loss"] == pytest.approx(expected.second_copy_loss, abs=1e-3)
        assert "segunda cópia" in trainer.locator(".gl-lesson-ablated").inner_text()
        assert page.evaluate(WIDEST)["scrollWidth"] <= PHONE
        watch.assert_clean()
    finally:
        page.context.close()
