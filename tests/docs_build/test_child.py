"""The docs build reaches the engine only through its child process: one module imports
``glassllm``, a failing child is one clear error with the file and line, and its output is
cached by content."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs_build import example
from docs_build.catalog import DocsBuildError
from docs_build.example import CACHE_ENV, ExampleSettings, load_example

from .conftest import ROOT, _env

DOCS_BUILD = ROOT / "docs_build"


def _imports_glassllm(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
                a.name == "glassllm" or a.name.startswith("glassllm.") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "glassllm" or node.module.startswith("glassllm.")):
            return True
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and "glassllm" in node.args[0].value \
                and ast.unparse(node.func).endswith(("import_module", "__import__")):
            return True
    return False


def test_the_child_module_is_the_only_docs_build_module_that_imports_the_engine():
    importers = sorted(path.name for path in DOCS_BUILD.glob("*.py")
                       if _imports_glassllm(ast.parse(path.read_text(encoding="utf-8"))))
    assert importers == ["example_child.py"]
    # nor does any module purge sys.modules to see edits: the child is a fresh interpreter
    purging = sorted(path.name for path in DOCS_BUILD.glob("*.py")
                     if "sys.modules" in path.read_text(encoding="utf-8"))
    assert purging == []


def test_a_whole_site_build_never_imports_the_engine_in_the_build_process(tmp_path):
    script = ("import sys; from pathlib import Path; from tests.docs_build.conftest import build_site; "
              f"build_site(Path({str(tmp_path / 'site')!r})); "
              "print('ENGINE', sorted(m for m in sys.modules if m.split('.')[0] == 'glassllm'))")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, env={**_env(), "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ENGINE []" in result.stdout
    assert (tmp_path / "site" / "steps" / "attn.mask" / "index.html").is_file()


# -- a child that fails ------------------------------------------------------------------------

@pytest.fixture
def engine(tmp_path, monkeypatch) -> Path:
    """A copy of the engine to break, with the disk cache off and nothing in memory."""
    monkeypatch.setenv(CACHE_ENV, "off")
    example.clear_memory_cache()
    package_dir = tmp_path / "repo" / "glassllm"
    shutil.copytree(ROOT / "glassllm", package_dir,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return package_dir


def _append(path: Path, code: str) -> int:
    """Append ``code`` (no marker moves, so the index stays fresh); the line it starts on."""
    lines = path.read_text(encoding="utf-8").count("\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n" + code)
    return lines + 2


def _error(package_dir: Path, **kwargs) -> str:
    with pytest.raises(DocsBuildError) as raised:
        load_example(ExampleSettings(), package_dir, **kwargs)
    message = str(raised.value)
    assert "Traceback" not in message and "\n" not in message
    return message


def test_a_syntax_error_names_the_engine_file_and_line(engine):
    line = _append(engine / "nn.py", "def broken(:\n    pass\n")
    assert _error(engine) == (f"glassllm/nn.py:{line}: SyntaxError: invalid syntax; fix the "
                              f"engine module, then build again")


def test_an_exception_in_the_forward_pass_names_the_innermost_engine_line(engine):
    line = _append(engine / "model.py", "def _broken_forward(self, *args):\n"
                                        "    raise RuntimeError('forward is broken on purpose')\n\n\n"
                                        "GlassLM._forward = _broken_forward\n") + 1
    message = _error(engine)
    assert message.startswith("the example run raised RuntimeError: forward is broken on "
                              f"purpose (at glassllm/model.py:{line}); fix the engine or ")
    assert message.endswith("plugins.glassllm.example in mkdocs.yml, then build again")


def test_an_exception_while_importing_names_its_line(engine):
    line = _append(engine / "tokenizer.py", "BROKEN = 1 / 0\n")
    assert _error(engine).startswith("importing glassllm raised ZeroDivisionError: division by "
                                     f"zero (at glassllm/tokenizer.py:{line})")


def test_a_child_that_takes_too_long_is_stopped_with_the_option_to_raise(engine):
    message = _error(engine, timeout=0.01)
    assert "did not finish within 0.01 s" in message
    assert "plugins.glassllm.example_timeout in mkdocs.yml" in message


def test_a_child_that_dies_without_a_report_shows_its_exit_code_and_last_stderr(engine):
    _append(engine / "model.py", "import os as _os, sys as _sys\n"
                                 "_sys.stderr.write('dying on purpose\\n')\n_sys.stderr.flush()\n"
                                 "_os._exit(3)\n")
    with pytest.raises(DocsBuildError) as raised:
        load_example(ExampleSettings(), engine)
    message = str(raised.value)
    assert "exited with code 3 and no error report" in message
    assert message.endswith("dying on purpose")


def test_a_stale_index_is_refused_but_noted_for_serve(engine):
    nn = engine / "nn.py"
    nn.write_text("\n" + nn.read_text(encoding="utf-8"), encoding="utf-8")  # every marker moves
    assert "step_index.json is stale" in _error(engine)
    catalog = load_example(ExampleSettings(), engine, allow_stale=True).catalog
    assert "run python scripts/build_step_index.py" in catalog.stale_index
    markers = json.loads((ROOT / "glassllm" / "step_index.json").read_text(encoding="utf-8"))
    assert catalog["attn.norm"].line == markers["attn.norm"]["line"] + 1  # the live line


# -- the cache ---------------------------------------------------------------------------------

def test_a_second_load_reuses_the_output_and_an_engine_edit_reruns_the_child(engine, tmp_path,
                                                                             monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    settings = ExampleSettings()
    first = load_example(settings, engine)
    assert first.source == "child"
    assert load_example(settings, engine).source == "memory"
    example.clear_memory_cache()
    calls = []
    real_call = example._call_child
    monkeypatch.setattr(example, "_call_child", lambda *a: calls.append(a) or real_call(*a))
    again = load_example(settings, engine)
    assert again.source == "disk" and calls == []  # no child ran
    assert again.run.generated_tokens == first.run.generated_tokens
    assert again.replay == first.replay
    (entry,) = [p for p in cache.iterdir()]  # one complete entry, no temporary folder left
    assert not entry.name.startswith(".")
    # a changed engine (even a comment), or changed settings, run the child again
    _append(engine / "model.py", "# a comment changes the engine's hash\n")
    assert load_example(settings, engine).source == "child"
    assert load_example(ExampleSettings(prompt="The dog"), engine).source == "child"
    assert len(calls) == 2
    assert sorted(p.name.startswith(".") for p in cache.iterdir()) == [False] * 3


def test_a_failed_child_leaves_nothing_in_the_cache(engine, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    _append(engine / "nn.py", "def broken(:\n    pass\n")
    with pytest.raises(DocsBuildError):
        load_example(ExampleSettings(), engine)
    assert list(cache.iterdir()) == []
