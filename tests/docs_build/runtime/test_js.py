"""node --test of the browser runtime's pure modules (tests/docs_build/runtime/js)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.replay.test_fixtures import node_or_skip

ROOT = Path(__file__).resolve().parents[3]


def test_node_tests_of_the_runtime_modules_pass():
    node = node_or_skip()
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests/docs_build/runtime/js")
                   .glob("*.test.mjs"))
    assert tests
    done = subprocess.run([node, "--test", *tests], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, f"node --test failed:\n{done.stdout}\n{done.stderr}"
