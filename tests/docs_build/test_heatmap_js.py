"""heatmap.js, the step pages' heatmap readout: its node tests, and its token labels
against the engine's own (glassllm.tokenizer.token_label, which the pages show)."""

from __future__ import annotations

import json
import os
import subprocess

from glassllm.tokenizer import token_label
from tests.replay.test_fixtures import node_or_skip

from .conftest import ROOT


def test_node_tests_of_the_heatmap_module_pass():
    node = node_or_skip()
    done = subprocess.run([node, "--test", "tests/docs_build/js/heatmap.test.mjs"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, f"node --test failed:\n{done.stdout}\n{done.stderr}"


def test_readout_labels_bytes_as_the_pages_do():
    node = node_or_skip()
    script = ("import('./docs_build/assets/heatmap.js').then(m => console.log(JSON.stringify("
              "Array.from({length: 256}, (_, t) => m.tokenLabel(t)))))")
    done = subprocess.run([node, "--input-type=module", "-e", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [token_label(t) for t in range(256)]
