import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(root, *args):
    return subprocess.run([sys.executable, str(root / "scripts/build_step_index.py"), *args],
                          capture_output=True, text=True)


def copy_project(tmp_path):
    shutil.copytree(ROOT / "glassllm", tmp_path / "glassllm",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    return tmp_path


def test_committed_index_is_fresh():
    result = run(ROOT, "--check")
    assert result.returncode == 0, result.stderr


def test_check_names_what_moved_and_rebuild_fixes_it(tmp_path):
    root = copy_project(tmp_path)
    nn = root / "glassllm/nn.py"
    nn.write_text("# a new first line moves every marker of nn.py\n" + nn.read_text())
    before = (root / "glassllm/step_index.json").read_text()
    stale = run(root, "--check")
    assert stale.returncode == 1
    assert "attn.softmax is indexed at glassllm/nn.py:" in stale.stderr
    assert "run: python scripts/build_step_index.py" in stale.stderr
    assert (root / "glassllm/step_index.json").read_text() == before  # --check never writes
    assert run(root).returncode == 0
    assert run(root, "--check").returncode == 0
    text = (root / "glassllm/step_index.json").read_text()
    assert text.endswith("}\n") and text != before
    assert run(root).returncode == 0
    assert (root / "glassllm/step_index.json").read_text() == text  # stable rebuilds


def test_broken_marker_is_reported_without_touching_the_index(tmp_path):
    root = copy_project(tmp_path)
    model = root / "glassllm/model.py"
    model.write_text(model.read_text() + "\nX = 1  # @step embed\n")
    before = (root / "glassllm/step_index.json").read_text()
    result = run(root)
    assert result.returncode == 2
    assert "marked twice" in result.stderr
    assert (root / "glassllm/step_index.json").read_text() == before
