import json
import textwrap

import pytest

from glassllm.steps import (HEAD_STEPS, LAYER_STEPS, PACKAGE_DIR, STEPS, StepInfo,
                            load_step_index, scan_markers)


def write(folder, name, source):
    (folder / name).write_text(textwrap.dedent(source), encoding="utf-8")


def test_catalog_order_and_groups():
    ids = list(STEPS)
    assert ids[0] == "embed" and ids[-4:] == ["probs", "sample", "loss", "loss.grad"]
    assert ids[1:19] == list(LAYER_STEPS)
    assert ids[19:21] == ["final_norm", "logits"]
    assert set(HEAD_STEPS) == {s for s in LAYER_STEPS if s.startswith("attn.")} - {
        "attn.norm", "attn.out", "attn.residual"}
    assert all(isinstance(info, StepInfo) for info in STEPS.values())


def test_every_step_has_one_marker_in_the_package():
    index = scan_markers()
    assert set(index) == set(STEPS)
    for step_id, place in index.items():
        line = (PACKAGE_DIR.parent / place["file"]).read_text().splitlines()[place["line"] - 1]
        assert f"# @step {step_id}" in line
        assert line.split("#")[0].strip(), f"{step_id}: the marker must sit on an operation line"


def test_only_real_comments_count(tmp_path):
    write(tmp_path, "a.py", '''
        """A docstring mentioning # @step embed"""
        x = "# @step logits"
        y = f"{x} # @step probs"
        z = b"# @step sample"
        w = """
        # @step loss
        """
        v = 1  # @step attn.mask
    ''')
    assert scan_markers(tmp_path) == {"attn.mask": {"file": f"{tmp_path.name}/a.py", "line": 9}}


def test_only_immediate_modules_are_read(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "deep.py", "x = 1  # @step embed\n")
    write(tmp_path, "notes.txt", "x = 1  # @step logits\n")
    write(tmp_path, "top.py", "x = 1\ny = 2  # @step logits  -> (1, n, V)\n")
    assert scan_markers(tmp_path) == {"logits": {"file": f"{tmp_path.name}/top.py", "line": 2}}


def test_repeated_marker_names_both_places(tmp_path):
    write(tmp_path, "a.py", "x = 1  # @step embed\n")
    write(tmp_path, "b.py", "\n\ny = 2  # @step embed\n")
    with pytest.raises(ValueError) as error:
        scan_markers(tmp_path)
    assert f"{tmp_path.name}/a.py:1" in str(error.value)
    assert f"{tmp_path.name}/b.py:3" in str(error.value)


def test_unknown_marker_names_its_place(tmp_path):
    write(tmp_path, "a.py", "x = 1\nx = 2  # @step attn.nonsense\n")
    with pytest.raises(ValueError, match=rf"{tmp_path.name}/a.py:2.*attn.nonsense"):
        scan_markers(tmp_path)


def test_marker_without_id(tmp_path):
    write(tmp_path, "a.py", "x = 1  # @step\n")
    with pytest.raises(ValueError, match="without a step ID"):
        scan_markers(tmp_path)


def test_load_step_index_reads_the_packaged_json():
    index = load_step_index()
    raw = json.loads((PACKAGE_DIR / "step_index.json").read_text())
    assert index == raw
    assert index["attn.softmax"]["file"] == "glassllm/nn.py"


def test_step_facts_cover_every_step_and_derive_the_tables():
    from glassllm.steps import KINDS, STEP_FACTS, step_table
    assert list(STEP_FACTS) == list(STEPS)
    assert [s for s in STEPS if STEP_FACTS[s].where == "block"] == list(LAYER_STEPS)
    # the head axis is the first axis, of the query heads or of the KV heads
    assert {s for s in STEPS if STEP_FACTS[s].head_axis} == set(HEAD_STEPS)
    assert {s for s in STEPS if STEP_FACTS[s].causal} == {"attn.mask", "attn.softmax"}
    # no generation run includes the loss; the loss run has no probs or sample
    generation = {s for s in STEPS if "generation" in STEP_FACTS[s].kinds}
    loss = {s for s in STEPS if "loss" in STEP_FACTS[s].kinds}
    assert set(STEPS) - generation == {"loss", "loss.grad"}
    assert set(STEPS) - loss == {"probs", "sample"}
    assert len(generation) == len(loss) == 23 and KINDS == ("generation", "loss")
    table = step_table()
    assert [row["id"] for row in table] == list(STEPS)
    softmax = next(row for row in table if row["id"] == "attn.softmax")
    assert softmax["axes"] == ["head", "query", "key"] and softmax["head_axis"]
    assert softmax["latex"] == STEPS["attn.softmax"].latex
    assert [row["id"] for row in table if row["vocabulary"]] == ["logits", "probs", "loss.grad"]


def test_token_label_reads_one_byte_the_same_everywhere():
    from glassllm.tokenizer import token_label
    assert [token_label(t) for t in (65, 32, 10, 9, 127, 200, 300)] == [
        "A", "␣", "⏎", "\\x09", "\\x7f", "\\xc8", "#300"]
