"""The backward catalog (``glassllm.backward.GRADS``) and its ``# @grad`` markers: one rule per
step of STEPS, in STEPS' notation, each rule on the line that computes it, indexed and checked
like the ``# @step`` markers, which stay as they were."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from glassllm.backward import GRADS, load_grad_index, scan_grad_markers
from glassllm.steps import STEPS, load_step_index, scan_markers
from tests.glassllm.test_build_step_index import copy_project, run
from tests.glassllm.test_notation import katex_failures

ROOT = Path(__file__).resolve().parents[2]


def test_every_step_has_one_backward_rule_in_both_forms():
    assert tuple(GRADS) == tuple(STEPS)
    for step_id, rule in GRADS.items():
        assert rule.latex.strip() and rule.plain.strip(), step_id
        assert rule != STEPS[step_id], step_id
        # a bar is a gradient, ∂ℒ/∂X: every rule gives one (sample's and loss.grad's: 0, ∂ℒ/∂ℓ)
        assert r"\bar{" in rule.latex and "\u0304" in rule.plain, step_id


def test_every_rule_typesets_in_katex():
    assert katex_failures({step_id: rule.latex for step_id, rule in GRADS.items()}) == {}


def test_rules_name_the_weights_each_step_learns():
    for step_id, weight in (("attn.q", r"\bar{W}_{Q}"), ("attn.k", r"\bar{W}_{K}"),
                            ("attn.v", r"\bar{W}_{V}"), ("attn.out", r"\bar{W}_O"),
                            ("mlp.gate", r"\bar{W}_{\mathrm{gate}}"), ("mlp.up", r"\bar{W}_{\mathrm{up}}"),
                            ("mlp.down", r"\bar{W}_{\mathrm{down}}"), ("logits", r"\bar{W}_{\mathrm{out}}"),
                            ("embed", r"\bar{E}"), ("attn.norm", r"\bar{\gamma}_{\mathrm{attn}}"),
                            ("mlp.norm", r"\bar{\gamma}_{\mathrm{mlp}}"),
                            ("final_norm", r"\bar{\gamma}_{\mathrm{final}}")):
        assert weight in GRADS[step_id].latex, step_id
    # grouped-query attention: a KV head sums the gradients of the query heads it serves
    for step_id in ("attn.scores", "attn.context"):
        assert r"\sum_{r:\,g(r) = g}" in GRADS[step_id].latex
        assert "Σ_(r: g(r)=g)" in GRADS[step_id].plain


def test_each_grad_marker_sits_on_a_line_that_computes():
    markers = scan_grad_markers()
    assert markers == load_grad_index()
    assert set(markers) == set(STEPS)
    for step_id, place in markers.items():
        line = (ROOT / place["file"]).read_text(encoding="utf-8").splitlines()[place["line"] - 1]
        code = line.split("#")[0]
        assert re.search(r"[=(]", code), f"{step_id}: {line!r}"
        assert re.search(rf"#\s*@grad {re.escape(step_id)}\b", line), step_id


def test_the_step_markers_stay_as_they_were():
    assert scan_markers() == load_step_index()
    assert len(scan_markers()) == 25
    assert all(place["file"] in ("glassllm/nn.py", "glassllm/model.py")
               for place in scan_markers().values())


def test_check_names_a_moved_grad_marker_and_rebuild_fixes_it(tmp_path):
    root = copy_project(tmp_path)
    path = root / "glassllm/nn.py"
    text = path.read_text(encoding="utf-8")
    # a line inserted above the first backward function moves the markers below it
    index = text.index("def linear_backward")
    path.write_text(text[:index] + "# moved\n" + text[index:], encoding="utf-8")
    stale = run(root, "--check")
    assert stale.returncode == 1
    assert "grad_index.json is stale" in stale.stderr
    assert "attn.softmax is indexed at glassllm/nn.py:" in stale.stderr
    assert "run: python scripts/build_step_index.py" in stale.stderr
    before = (root / "glassllm/grad_index.json").read_text(encoding="utf-8")
    assert run(root).returncode == 0
    assert run(root, "--check").returncode == 0
    after = json.loads((root / "glassllm/grad_index.json").read_text(encoding="utf-8"))
    assert after != json.loads(before) and set(after) == set(STEPS)


def test_a_grad_marker_twice_is_refused_without_touching_the_indexes(tmp_path):
    root = copy_project(tmp_path)
    model = root / "glassllm/model.py"
    model.write_text(model.read_text() + "\nX = 1  # @grad loss\n")
    before = (root / "glassllm/grad_index.json").read_text()
    result = run(root)
    assert result.returncode == 2
    assert "marked twice with '# @grad'" in result.stderr
    assert (root / "glassllm/grad_index.json").read_text() == before


@pytest.mark.parametrize("comment", ["# @grad", "# @grad attn.values"])
def test_bad_grad_markers_name_their_place(tmp_path, comment):
    (tmp_path / "a.py").write_text(f"x = 1\ny = 2  {comment}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{tmp_path.name}/a.py:2"):
        scan_grad_markers(tmp_path)
    assert scan_markers(tmp_path) == {}  # a grad marker is no step marker
