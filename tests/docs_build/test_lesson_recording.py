"""The committed recording of the induction lesson (docs_build/data/lesson_induction.json,
written by scripts/record_lesson.py) is what this glassllm computes: its first snapshots
equal a fresh short run's (a shorter run is exactly the start of the full one), and it reads
back as the page reads it."""

import numpy as np
import pytest

from docs_build.data.lesson import (RECORDING, attention_bytes, attention_from_bytes,
                                    load_recording)
from docs_build.errors import DocsBuildError
from glassllm import lessons
from glassllm.lessons import Lesson

FRESH_STEPS = 30
NUMBERS = ("loss", "first_copy_loss", "second_copy_loss", "previous_token", "induction")


@pytest.fixture(scope="module")
def recorded():
    return load_recording()


def test_the_recordings_first_snapshots_are_a_fresh_runs(recorded):
    assert (recorded["seed"], recorded["steps"], recorded["snapshot_every"]) == (
        0, lessons.STEPS, lessons.SNAPSHOT_EVERY)
    fresh = Lesson(recorded["seed"], steps=FRESH_STEPS, snapshot_every=recorded["snapshot_every"])
    fresh.advance()
    hint = "the engine's numbers changed: run 'python scripts/record_lesson.py' and commit it"
    n = len(recorded["probe"]["tokens"])
    assert recorded["probe"]["tokens"] == fresh.probe.inputs, hint
    for mine, theirs in zip(fresh.history, recorded["history"]):
        assert mine.step == theirs["step"]
        for name in NUMBERS:
            assert theirs[name] == pytest.approx(mine[name], abs=1e-4), (mine.step, name, hint)
        assert theirs["previous_token_head"] == mine.previous_token_head
        for name in ("previous_token_attention", "induction_attention"):
            np.testing.assert_allclose(attention_from_bytes(theirs[name], n), getattr(mine, name),
                                       atol=0.5 / 255 + 1e-6, err_msg=name)


def test_the_recording_tells_the_lessons_story(recorded):
    """What the page states, checked on the file it states it from."""
    steps = [s["step"] for s in recorded["history"]]
    assert steps == list(range(0, recorded["steps"] + 1, recorded["snapshot_every"]))
    formed, check = recorded["formed"], recorded["check"]
    assert formed == {"previous_token": check["previous_token_formed"],
                      "induction": check["induction_formed"]}
    assert check["previous_token_first"] and check["ablation_breaks_copy"]
    assert check["control_keeps_copy"]
    assert 0 < recorded["seconds"] < 180


def test_attention_bytes_round_trip_to_a_byte():
    rng = np.random.default_rng(0)
    weights = np.tril(rng.random((7, 7))).astype(np.float32)
    weights /= weights.sum(axis=1, keepdims=True)
    back = attention_from_bytes(attention_bytes(weights), 7)
    np.testing.assert_allclose(back, weights, atol=0.5 / 255 + 1e-7)
    with pytest.raises(ValueError, match="28 weights"):
        attention_from_bytes(attention_bytes(weights[:6, :6]), 7)


def test_a_missing_or_stale_recording_stops_the_build_with_what_to_do(tmp_path):
    with pytest.raises(DocsBuildError, match="record_lesson.py"):
        load_recording(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "probe": {"tokens": [1, 2]}, "history": []}')
    with pytest.raises(DocsBuildError, match="record_lesson.py"):
        load_recording(bad)
    assert RECORDING.is_file()
