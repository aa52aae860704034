"""The shared recording files (tests/fixtures/recordings, version 1 ``.json`` and version 2
``.glrec``): Python's reader accepts every good one and refuses every bad one with a
ValueError naming the file and the place; the replay page's reader is held to the very same
files by tests/replay/js (run here too)."""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from glassllm.recording import decode_array, loads, read_recording
from tests.conftest import require_or_skip

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "recordings"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
SUFFIXES = (".json", ".glrec")
GOOD = sorted(p for p in (FIXTURES / "good").iterdir() if p.suffix in SUFFIXES)
BAD = sorted(p for p in (FIXTURES / "bad").iterdir() if p.suffix in SUFFIXES)


def test_the_fixture_set_is_complete():
    assert len(GOOD) >= 5 and len(BAD) >= 40
    assert sum(p.suffix == ".glrec" for p in GOOD) >= 5
    assert sum(p.suffix == ".glrec" for p in BAD) >= 20
    assert sorted(EXPECTED) == [p.name for p in BAD]
    assert sorted(p.name for p in (FIXTURES / "good").iterdir()) == [p.name for p in GOOD]


def test_the_format_tables_the_node_tests_compare_with_are_pythons():
    """format.json is what the page's reader is held to (format.test.mjs): it must be
    glassllm's own rules; after a change of them rerun make_fixtures.py."""
    from tests.fixtures.recordings.make_fixtures import format_tables
    written = json.loads((FIXTURES / "format.json").read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(format_tables()))


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_python_accepts_every_good_file(path):
    rec = read_recording(path)
    passes = 2 if rec.kind == "training" else max(1, len(rec.generated))  # forward, gradients
    assert len(rec.events) == rec.events_per_pass() * passes
    assert [e.grad for e in rec.events] == [rec.kind == "training" and i >= rec.events_per_pass()
                                            for i in range(len(rec.events))]


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


def node_env() -> dict:
    """The environment of the replay's node tests: they read the real step table from this
    Python (tests/replay/js/step-table.mjs)."""
    return {**os.environ, "NO_COLOR": "1", "GLASSLLM_PYTHON": sys.executable}


def node_or_skip() -> str:
    node = shutil.which("node")
    require_or_skip(node is not None, "node is not installed (the replay's JS unit tests "
                                      "need Node.js 20+)", "GLASSLLM_REQUIRE_BROWSER")
    return node


# values that sit on the edges of the rules: types, signs, integral floats, int32 bounds
EDGES = [None, True, False, 0, 1, -1, 2, 1.0, 0.0, 2.5, 2**31 - 1, 2**31, 2**70, "", "x",
         [], {}, [1], [0, 0], "AAAA", "float32", "int32", "attn.q", "embed", "loss", 1e30]


def _places(value, path=()):
    """Paths into a recording, skipping the parts both readers ignore by design."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in ("steps", "text", "data"):
                yield from _places(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value[:6]):
            yield from _places(item, path + (i,))


def random_edits(count: int, seed: int = 9, binary: bool = False):
    """``count`` recordings, each a good file with one or two random edits: of the JSON
    document, or with ``binary`` of a version 2 file's index (its data kept)."""
    from tests.fixtures.recordings.make_fixtures import container, split
    rng = random.Random(seed)
    if binary:
        bases = [split(p.read_bytes()) for p in GOOD
                 if p.name in ("bin-generation.glrec", "bin-loss.glrec",
                               "bin-event-with-head.glrec", "bin-generation-float16.glrec")]
    else:
        bases = [(json.loads(p.read_text(encoding="utf-8")), None) for p in GOOD
                 if p.name in ("generation.json", "loss.json", "event-with-head.json")]
    for n in range(count):
        base, data = rng.choice(bases)
        doc = copy.deepcopy(base)
        for _ in range(rng.choice((1, 1, 2))):
            path = rng.choice(list(_places(doc)))
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            old, roll = parent[path[-1]], rng.random()
            if roll < 0.15 and isinstance(parent, dict):
                del parent[path[-1]]
            elif roll < 0.25 and isinstance(parent, dict):
                parent[f"extra{rng.randint(0, 2)}"] = rng.choice(EDGES)
            elif roll < 0.4 and isinstance(old, int) and not isinstance(old, bool):
                parent[path[-1]] = old + rng.choice((-1, 1))
            else:
                parent[path[-1]] = rng.choice(EDGES)
        if binary:
            yield f"{n:04d}.glrec", container(json.dumps(doc), data)
        else:
            yield f"{n:04d}.json", json.dumps(doc).encode("utf-8")


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_python_and_the_page_agree_on_random_edits(tmp_path, binary):
    """Beyond the named files: both readers give the same verdict on 300 edited files."""
    node = node_or_skip()
    python = {}
    for name, content in random_edits(300, binary=binary):
        (tmp_path / name).write_bytes(content)
        try:
            loads(content)
            python[name] = True
        except ValueError:
            python[name] = False
    assert 15 < sum(python.values()) < 285  # the edits reach both verdicts
    done = subprocess.run([node, "tests/replay/js/verdicts.mjs", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=node_env())
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    differ = {name: (python[name], page[name]) for name in python if python[name] != page[name]}
    assert differ == {}, f"(python, page) verdicts differ: {differ}"


def test_node_tests_of_the_page_modules_pass():
    """``node --test tests/replay/js/*.test.mjs``: the replay page's pure modules, on the
    same files; fails with node's report."""
    node = node_or_skip()
    # the files themselves: how Node reads a folder argument has changed between versions
    tests = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests/replay/js").glob("*.test.mjs"))
    assert len(tests) >= 3
    done = subprocess.run([node, "--test", *tests], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env=node_env())
    assert done.returncode == 0, f"node --test failed:\n{done.stdout}\n{done.stderr}"
