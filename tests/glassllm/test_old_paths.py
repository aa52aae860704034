"""The module paths from before glassllm's layers (issue 27) still import, and each names the
very module of its new path: one file, one module object (glassllm/_old_paths.py). Each check
runs in a fresh interpreter, so the order of first imports is the one under test."""

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import glassllm
from glassllm._old_paths import MOVED, new_path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "glassllm"


def fresh(code: str) -> str:
    """What ``code`` prints in a new interpreter that imports this checkout's glassllm."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def module_file(name: str) -> Path:
    path = ROOT.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


# every old path, with the modules inside the moved package (glassllm.recording.files)
OLD_PATHS = sorted(set(MOVED) | {
    f"glassllm.recording.{path.stem}" for path in (PACKAGE / "interpret" / "recording").glob("*.py")
    if path.stem != "__init__"})


def test_every_moved_module_is_where_the_table_says_and_gone_from_where_it_was():
    assert [new for new in MOVED.values() if not module_file(new).is_file()] == []
    # a source file left at an old path would be a second module, found before the alias
    # (a folder git leaves behind with only __pycache__ in it after a pull is harmless)
    assert [old for old in MOVED if module_file(old).exists()
            or any(ROOT.joinpath(*old.split(".")).glob("*.py"))] == []
    assert new_path("glassllm.recording.files") == "glassllm.interpret.recording.files"
    assert new_path("glassllm.model") is None and new_path("glassllm.recordings") is None


@pytest.mark.parametrize("first", ["old", "new"])
def test_every_old_path_is_the_new_module_whichever_is_imported_first(first):
    pairs = [(old, new_path(old)) for old in OLD_PATHS]
    code = f"""
import importlib, json, sys
pairs = {pairs!r}
seen = {{}}
for old, new in pairs:
    a, b = (old, new) if {first == "old"!r} else (new, old)
    one, two = importlib.import_module(a), importlib.import_module(b)
    seen[old] = [one is two, sys.modules[old] is sys.modules[new], one.__spec__.name, one.__file__]
print(json.dumps(seen))
"""
    seen = json.loads(fresh(code))
    for old, new in pairs:
        same, filed_once, name, file = seen[old]
        assert same and filed_once, old
        assert name == new and Path(file) == module_file(new), old


def test_every_old_path_is_the_new_module_in_this_interpreter_too():
    """The same in this process (and under Pyodide, where there is no fresh interpreter)."""
    import importlib
    for old in OLD_PATHS:
        module = importlib.import_module(old)
        assert module is importlib.import_module(new_path(old)) is sys.modules[old], old
        assert module.__name__ == new_path(old) and module.__spec__.name == new_path(old), old
    assert glassllm.optim is glassllm.learning.optim
    # the module's spec is its own (relative imports read it, and importlib.reload)
    assert glassllm.optim.__spec__.origin == glassllm.learning.optim.__file__


def test_the_documented_imports_work_and_nothing_loads_twice():
    code = """
import sys
import glassllm.optim
from glassllm.probes import heldout_tokens
from glassllm.recording import record_generation, read_recording
from glassllm.recording.events import Recording
from glassllm import lessons, train
from glassllm.edits import Ablate
from glassllm.steps import scan_markers
from glassllm.trace import record
import glassllm
assert glassllm.optim is glassllm.learning.optim and lessons is glassllm.learning.lessons
assert train is glassllm.learning.train
assert record_generation is glassllm.interpret.recording.capture.record_generation
assert Recording is glassllm.interpret.recording.events.Recording
mine = {id(m): m for k, m in sys.modules.items() if k.startswith("glassllm")}.values()
print(len(mine), len({m.__file__ for m in mine}))
"""
    objects, files = fresh(code).split()
    assert objects == files  # one module object per file, whichever path imported it ...
    code_names = fresh("import sys, glassllm.recording.files, glassllm.optim\n"
                       "print(sorted(k for k, m in sys.modules.items() if k.startswith('glassllm')"
                       " and m.__name__ != k))")
    # ... as aliases of a module named by its new path, never a second copy
    assert eval(code_names) == ["glassllm.optim", "glassllm.recording", "glassllm.recording.files"]


def test_a_moved_module_is_an_attribute_of_the_package_before_anyone_imports_it():
    assert fresh("import glassllm\nprint(glassllm.tokenizer.__name__, glassllm.optim.__name__)"
                 ).split() == ["glassllm.text.tokenizer", "glassllm.learning.optim"]
    with pytest.raises(AttributeError, match="no attribute 'optimiser'"):
        glassllm.optimiser  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        __import__("glassllm.optimiser")
    with pytest.raises(ModuleNotFoundError):
        __import__("glassllm.recording.nothing")


def test_classes_name_the_module_they_live_in_and_pickle_through_either_path():
    from glassllm.circuits import Head
    from glassllm.train import TrainOptions
    assert Head.__module__ == "glassllm.interpret.circuits"
    assert TrainOptions.__module__ == "glassllm.learning.train"
    options = TrainOptions(steps=7, lr=1e-3)
    data = pickle.dumps(options)
    assert b"glassllm.learning.train" in data and pickle.loads(data) == options
    # a pickle written before the move names the old path: it finds the same class
    assert pickle.loads(b"cglassllm.circuits\nHead\n.") is Head
    assert pickle.loads(b"cglassllm.recording.events\nRecording\n.") is \
        glassllm.interpret.recording.events.Recording


def test_patching_through_an_old_path_patches_the_one_module(monkeypatch):
    import glassllm.learning.optim
    import glassllm.optim
    monkeypatch.setattr("glassllm.optim.lr_at", "patched")
    assert glassllm.learning.optim.lr_at == "patched"


def test_the_command_runs_a_moved_module():
    done = subprocess.run([sys.executable, "-m", "glassllm", "train", "--help"], cwd=ROOT,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT),
                                                               "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0 and "--steps" in done.stdout, done.stderr
