"""The shared recording files (tests/fixtures/recordings): Python's reader accepts every
good one and refuses every bad one with a ValueError naming the file and the place; the
replay page's reader is held to the very same files by tests/replay/js (run here too)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from glassllm.recording import decode_array, loads, read_recording
from tests.conftest import require_or_skip

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "recordings"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
GOOD = sorted((FIXTURES / "good").glob("*.json"))
BAD = sorted((FIXTURES / "bad").glob("*.json"))


def test_the_fixture_set_is_complete():
    assert len(GOOD) >= 5 and len(BAD) >= 40
    assert sorted(EXPECTED) == [p.name for p in BAD]


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_python_accepts_every_good_file(path):
    rec = read_recording(path)
    assert len(rec.events) == rec.events_per_pass() * max(1, len(rec.generated))


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_python_refuses_every_bad_file_naming_the_place(path):
    with pytest.raises(ValueError) as info:
        read_recording(path)
    message = str(info.value)
    assert str(path) in message
    where = EXPECTED[path.name]
    if where is not None:
        assert where in message


@pytest.mark.parametrize("shape, data", [([2**70], ""), ([2**32, 2**32], ""),
                                         ([2**64], "AAAA"), ([0] * 40, "")])
def test_impossible_shapes_are_value_errors_naming_the_event(shape, data):
    with pytest.raises(ValueError, match=r"events\[7\]"):
        decode_array({"shape": shape, "dtype": "float32", "data": data}, "events[7]")


def test_a_deep_text_is_a_value_error_not_a_recursion_error():
    with pytest.raises(ValueError, match="nested more than"):
        loads('{"format": "glassllm.recording", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")


def test_decode_array_still_reads_what_encode_array_writes():
    value = decode_array({"shape": [1, 2], "dtype": "float32", "data": "AACAPwAAAEA="})
    np.testing.assert_array_equal(value, np.array([[1.0, 2.0]], dtype=np.float32))


def test_node_tests_of_the_page_modules_pass():
    """``node --test tests/replay/js``: the replay page's pure modules, on the same files."""
    node = shutil.which("node")
    require_or_skip(node is not None, "node is not installed (the replay's JS unit tests "
                                      "need Node.js 20+)", "GLASSLLM_REQUIRE_BROWSER")
    done = subprocess.run([node, "--test", "tests/replay/js/"], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, f"node --test failed:\n{done.stdout}\n{done.stderr}"
