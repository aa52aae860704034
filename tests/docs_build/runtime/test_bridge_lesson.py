"""bridge.py's lesson calls, run natively: trained in pieces as the worker trains it, the
lesson gives the snapshots of glassllm.lessons run in one go, and the ablation the engine's."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from glassllm import lessons
from glassllm.lessons import Lesson

ROOT = Path(__file__).resolve().parents[3]
BRIDGE = ROOT / "docs_build" / "assets" / "runtime" / "bridge.py"


@pytest.fixture()
def bridge():
    spec = importlib.util.spec_from_file_location("glassllm_bridge_lesson", BRIDGE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ok(reply):
    assert reply["ok"], reply
    return reply["result"]


def test_a_lesson_trained_in_pieces_is_the_engines_lesson(bridge):
    start = ok(bridge.call("lesson_start", {"seed": 2, "steps": 12, "snapshot_every": 4}))
    assert (start["seed"], start["steps"], start["snapshot_every"]) == (2, 12, 4)
    native = Lesson(2, steps=12, snapshot_every=4)
    native.advance()
    assert start["probe"]["tokens"] == native.probe.inputs
    got, replies = [], []
    while not replies or not replies[-1]["done"]:
        replies.append(ok(bridge.call("lesson_advance", {"max_steps": 5})))
        got += replies[-1]["snapshots"]
    assert [r["step"] for r in replies] == [5, 10, 12]
    assert [s["step"] for s in got] == [s.step for s in native.history] == [0, 4, 8, 12]
    for mine, theirs in zip(got, native.history):
        for name in ("loss", "first_copy_loss", "second_copy_loss", "previous_token",
                     "induction", "previous_token_scores", "induction_scores"):
            assert mine[name] == theirs[name], name
        np.testing.assert_allclose(mine["induction_attention"], theirs.induction_attention,
                                   atol=5e-5)
    last = replies[-1]
    assert last["formed"] == native.formed
    assert last["check"]["previous_token_first"] == native.check.previous_token_first
    assert [row["name"] for row in last["check"]["ablations"]] == [
        row.name for row in native.check.ablations]


def test_the_ablation_is_the_lessons_measure_with_the_heads_silenced(bridge):
    ok(bridge.call("lesson_start", {"seed": 0, "steps": 3}))
    ok(bridge.call("lesson_advance", {"max_steps": 3}))
    result = ok(bridge.call("lesson_ablate", {"heads": [[0, 1]]}))
    native = Lesson(0, steps=3)
    native.advance()
    clean, edited = native.measure(), native.measure([(0, 1)])
    assert result["heads"] == [[0, 1]]
    assert result["clean"]["second_copy_loss"] == clean.second_copy_loss
    assert result["edited"]["second_copy_loss"] == edited.second_copy_loss
    assert result["edited"]["induction"] == edited.induction[1].tolist()
    assert result["clean"]["copying"] == pytest.approx(clean.copying)


def test_advancing_before_starting_is_refused_with_what_to_do(bridge):
    reply = bridge.call("lesson_advance", {"max_steps": 1})
    assert not reply["ok"]
    assert "lesson_start" in reply["error"]["message"]
    reply = bridge.call("lesson_start", {"seed": -1})
    assert reply["error"]["type"] == "ValueError" and "seed" in reply["error"]["message"]


def refused(reply, pattern):
    assert not reply["ok"], reply
    assert reply["error"]["type"] == "ValueError", reply
    assert re.search(pattern, reply["error"]["message"]), reply["error"]["message"]


@pytest.mark.parametrize("args, pattern", [
    ({"seed": -1}, "seed must be an integer of at least 0, got -1"),
    ({"seed": 1.7}, "seed .*got 1.7"), ({"seed": True}, "seed .*got True"),
    ({"seed": "3"}, "seed .*got '3'"), ({"seed": float("nan")}, "seed .*got nan"),
    ({"steps": 0}, rf"lesson_start: steps must be an integer in \[1, {lessons.STEPS}\] "
                   r"\(the full lesson\), got 0"),
    ({"steps": lessons.STEPS + 1}, rf"got {lessons.STEPS + 1}"),
    ({"steps": 2.5}, "steps .*got 2.5"), ({"steps": True}, "steps .*got True"),
    ({"snapshot_every": 0}, "snapshot_every must be an integer of at least 1, got 0"),
    ({"snapshot_every": 1.7}, "snapshot_every .*got 1.7")])
def test_lesson_start_refuses_what_the_page_refuses(bridge, args, pattern):
    refused(bridge.call("lesson_start", args), pattern)


def test_the_full_lesson_is_the_longest_the_bridge_starts(bridge):
    assert ok(bridge.call("lesson_start", {"steps": lessons.STEPS}))["steps"] == lessons.STEPS


@pytest.mark.parametrize("count", [0, -3, 1.7, True, "3", None])
def test_lesson_advance_refuses_a_bad_count(bridge, count):
    ok(bridge.call("lesson_start", {"seed": 0, "steps": 3}))
    refused(bridge.call("lesson_advance", {"max_steps": count}),
            "max_steps must be an integer of at least 1")
    assert ok(bridge.call("lesson_advance", {"max_steps": 1}))["step"] == 1  # nothing trained


@pytest.mark.parametrize("heads, pattern", [
    ([[0, 4]], r"head must be an integer in \[0, 3\]"), ([[2, 0]], r"layer must be an integer in \[0, 1\]"),
    ([[0, True]], "head .*got True"), ([[0, 1.5]], "head .*got 1.5"), ([[0]], "pairs"),
    ("0,1", "pairs")])
def test_lesson_ablate_refuses_a_head_the_lessons_model_does_not_have(bridge, heads, pattern):
    ok(bridge.call("lesson_start", {"seed": 0, "steps": 2}))
    refused(bridge.call("lesson_ablate", {"heads": heads}), pattern)
