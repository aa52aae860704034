"""The docs build refuses a backward pass whose ``# @grad`` markers and
``glassllm/grad_index.json`` disagree, as it refuses a stale step index: one error line that
says what moved and what to run. Most cases stop in the engine child (no site is built); one
runs the strict build itself, which fails before writing a page."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .conftest import copy_checkout, run_build
from .test_child import _error, engine  # noqa: F401  (engine: the fixture, a copy to break)


def _move_indexed_line(package_dir: Path, step_id: str) -> int:
    """Make the grad index point one line below the marker of ``step_id``; the old line."""
    path = package_dir / "grad_index.json"
    index = json.loads(path.read_text(encoding="utf-8"))
    line = index[step_id]["line"]
    index[step_id]["line"] = line + 1
    path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return line


def _drop_marker(path: Path, step_id: str) -> None:
    text = path.read_text(encoding="utf-8")
    new, done = re.subn(rf"\s*#\s*@grad {re.escape(step_id)}\b.*$", "", text, count=1, flags=re.M)
    assert done == 1
    path.write_text(new, encoding="utf-8")


def test_a_stale_grad_index_names_what_moved_and_what_to_run(engine):
    line = _move_indexed_line(engine, "attn.softmax")
    message = _error(engine)
    assert message.startswith("glassllm/grad_index.json is stale (attn.softmax is indexed at "
                              f"glassllm/nn.py:{line + 1} but marked at glassllm/nn.py:{line})")
    assert "run python scripts/build_step_index.py and commit the result" in message
    assert "step_index.json" not in message  # the step index is fresh


def test_a_missing_grad_marker_says_where_the_comment_goes(engine):
    _drop_marker(engine / "nn.py", "mlp.act")
    assert _error(engine) == (
        "step(s) mlp.act have no '# @grad <id>' marker in glassllm/*.py; add the comment on "
        "the line that computes each one's backward (its rule is in glassllm.backward.GRADS), "
        "then run python scripts/build_step_index.py")


def test_a_grad_marker_twice_names_both_places(engine):
    with (engine / "model.py").open("a", encoding="utf-8") as handle:
        handle.write("\nX = 1  # @grad embed\n")  # appended: no other marker moves
    message = _error(engine)
    assert message.startswith("bad '# @grad' marker: step ID 'embed' is marked twice with "
                              "'# @grad': at glassllm/model.py:")
    assert "keep one marker, on the line that computes its backward" in message


def test_the_strict_build_fails_on_a_stale_grad_index(tmp_path):
    root = copy_checkout(tmp_path / "repo")
    _move_indexed_line(root / "glassllm", "logits")
    result = run_build(root, timeout=240)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    error_lines = [ln for ln in output.splitlines() if ln.startswith("ERROR")]
    assert len(error_lines) == 1, output[-3000:]
    assert "glassllm/grad_index.json is stale (logits is indexed at" in error_lines[0]
    assert "run python scripts/build_step_index.py" in error_lines[0]
    assert not (root / "site" / "steps" / "logits" / "index.html").exists()
