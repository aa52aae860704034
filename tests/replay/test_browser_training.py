"""The replay of one training step in a real browser, on the built site: the page "One
training step" links to it, and it plays the forward, then every gradient in the reverse
order (labelled ∂ℒ/∂ with the step's backward rule, its values the file's), then the AdamW
update of each parameter.

Every test waits for conditions (never for a fixed time) and ends by checking that no
request left 127.0.0.1 and the console stayed free of errors.
"""

from __future__ import annotations


import numpy as np
import pytest

from glassllm.backward import GRADS
from glassllm.recording import read_recording
from tests.replay.test_browser import EVENT, current, grid_origin, grid_values

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def training(built_site):
    return read_recording(built_site / "assets/replay/training.glrec")


def wait_index(page, index: int) -> None:
    page.wait_for_function(
        f"() => Number(document.querySelector('{EVENT}').dataset.eventIndex) === {index}")


@pytest.mark.parametrize("lang", ["en", "pt"])
def test_the_training_page_opens_the_replay_on_its_step(open_replay, site_url, lang):
    prefix = "" if lang == "en" else "pt/"
    watch = open_replay(f"{prefix}replay/")  # the browser, its context and its watch
    page = watch.page
    page.goto(f"{site_url}{prefix}training-step/")
    link = page.locator('a[href*="recording=training"]')
    assert link.count() == 1
    link.click()
    page.wait_for_selector("#gr-rec-training:checked")
    page.wait_for_selector(f"{EVENT}[data-event-index]")
    assert page.url.startswith(f"{site_url}{prefix}replay/")
    assert page.get_attribute(EVENT, "data-phase") == "forward"
    assert current(page)["index"] == 0 and current(page)["step"] == "embed"
    watch.assert_clean()


def test_the_training_step_plays_through_forward_backward_and_update(open_replay, training):
    watch = open_replay("replay/?recording=training")
    page = watch.page
    page.wait_for_selector("#gr-rec-training:checked")
    per_pass = training.events_per_pass()
    params = len(training.update["params"])
    last = 2 * per_pass + params - 1
    assert page.get_attribute("#gr-timeline", "max") == str(last)
    assert "Loss after the update" in page.inner_text(".gr-summary")

    # the first gradient: the backward starts at the loss
    page.fill("#gr-timeline", str(per_pass))
    wait_index(page, per_pass)
    assert page.get_attribute(EVENT, "data-phase") == "backward"
    assert current(page)["step"] == "loss.grad"
    assert "backward" in page.inner_text(".gr-phase")
    # ∂ℒ/∂logits: shown as a value is, labelled as a gradient, with the backward rule
    page.click('button[data-action="next"]')
    page.click('button[data-action="next"]')
    wait_index(page, per_pass + 2)
    assert current(page)["step"] == "logits"
    assert page.inner_text(".gr-event-title").startswith("∂ℒ/∂")
    assert GRADS["logits"].plain in page.inner_text(".gr-grad-rule")
    shown = grid_values(page)
    gradient = training.events[per_pass + 2].value
    assert gradient.shape == training.events[per_pass - 3].value.shape  # logits' shape
    row, col = grid_origin(page)  # the window opens on the target's column
    np.testing.assert_array_equal(shown, gradient[row:row + shown.shape[0],
                                                  col:col + shown.shape[1]])

    # play from there to the end, at the fastest speed: the update comes last
    page.fill("#gr-speed", "100")
    page.click('button[data-action="play"]')
    page.wait_for_function(
        f"() => Number(document.querySelector('{EVENT}').dataset.eventIndex) === {last}",
        timeout=60_000)
    page.wait_for_selector('button[data-action="play"]:not([disabled])')
    assert page.get_attribute(EVENT, "data-phase") == "update"
    param = training.update["params"][-1]
    assert param["name"] in page.inner_text(".gr-event-title")
    rows = page.eval_on_selector_all(".gr-update tbody tr", """rows => rows.map(r =>
        Array.from(r.querySelectorAll('td.gr-cell')).map(c => Number(c.dataset.value)))""")
    assert len(rows) == len(param["entries"])
    for row, entry in zip(rows, param["entries"]):
        before, grad, m, v, after, by_hand = row
        assert np.float32(before) == np.float32(entry["before"])
        assert np.float32(grad) == np.float32(entry["grad"])
        assert np.float32(after) == np.float32(entry["after"])
        assert abs(by_hand - entry["after"]) < 1e-6  # AdamW redone in the page
    # scrubbing back into the backward shows gradients again
    page.fill("#gr-timeline", str(per_pass + 5))
    wait_index(page, per_pass + 5)
    assert page.get_attribute(EVENT, "data-phase") == "backward"
    watch.assert_clean()


def test_portuguese_labels_of_the_training_step(open_replay, training):
    watch = open_replay("pt/replay/?recording=training")
    page = watch.page
    page.wait_for_selector("#gr-rec-training:checked")
    per_pass = training.events_per_pass()
    page.fill("#gr-timeline", str(per_pass + 3))
    wait_index(page, per_pass + 3)
    assert "retropropagação" in page.inner_text(".gr-phase")
    assert "Regra da retropropagação" in page.inner_text(".gr-grad-rule")
    page.fill("#gr-timeline", str(2 * per_pass))
    wait_index(page, 2 * per_pass)
    assert "atualização AdamW" in page.inner_text(".gr-event-title")
    assert "Peso antes" in page.inner_text(".gr-update thead")
    watch.assert_clean()
