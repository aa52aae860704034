"""The docs build reaches the engine only through its child process: one module imports
``glassllm``, a failing child is one clear error with the file and line, and its output is
cached by content."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docs_build.data.example import load_example
from docs_build.engine import load, runner, schema
from docs_build.engine.cache import CACHE_ENV
from docs_build.engine.settings import ExampleSettings
from docs_build.errors import DocsBuildError

from .conftest import ROOT, _env, engine_key

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
    # assets/ holds files the site ships, not modules of the build: assets/runtime/bridge.py
    # imports glassllm in the reader's browser, never in the build
    modules = sorted(p for p in DOCS_BUILD.rglob("*.py")
                     if p.relative_to(DOCS_BUILD).parts[0] != "assets")
    importers = [path.relative_to(DOCS_BUILD).as_posix() for path in modules
                 if _imports_glassllm(ast.parse(path.read_text(encoding="utf-8")))]
    assert importers == ["engine/child.py"]
    # nor does any module purge sys.modules to see edits: the child is a fresh interpreter
    purging = [path.name for path in modules if "sys.modules" in path.read_text(encoding="utf-8")]
    assert purging == []


@pytest.mark.slow  # a whole site build in a fresh process
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
    load.clear_memory_cache()
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
    line = _append(engine / "text" / "tokenizer.py", "BROKEN = 1 / 0\n")
    assert _error(engine).startswith("importing glassllm raised ZeroDivisionError: division by "
                                     f"zero (at glassllm/text/tokenizer.py:{line})")


def test_a_syntax_error_in_a_layer_the_package_does_not_import_is_named_too(engine):
    # `import glassllm` never reaches learning/, and the site still shows its source
    line = _append(engine / "learning" / "lessons.py", "def broken(:\n    pass\n")
    assert _error(engine) == (f"glassllm/learning/lessons.py:{line}: SyntaxError: invalid syntax; "
                              f"fix the engine module, then build again")


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


def test_the_build_hears_each_stage_of_the_child_as_it_starts_and_times_that_add_up(engine):
    """No silent half minute: each stage is reported when it starts, then one line of every
    stage's time, whose sum is the child's whole time; an engine's own print is not a stage."""
    _append(engine / "model.py", "print('the engine prints this on import')\n")
    heard = []
    data = load_example(ExampleSettings(), engine,
                        report=lambda message: heard.append((time.perf_counter(), message)))
    messages = [message for _, message in heard]
    stages = ["importing the engine", "checking the '# @step' markers", "loading the example model",
              "the example run (generation, traced forward pass, loss)",
              "measuring the heads with glassllm.probes", "proving the circuit with glassllm.circuits",
              "recording the replay", "writing its answer"]
    assert [re.sub(r" \(at [0-9.]+ s\)$", "", m) for m in messages[:-1]] == \
        [f"engine child: {stage}" for stage in stages]
    assert not any("prints this" in m for m in messages)
    # heard as it happened: the stages' messages came over the child's run, not at its end
    assert heard[-2][0] - heard[0][0] > 0.25 * data.seconds
    summary = messages[-1]
    total = float(re.match(r"engine child: done in ([0-9.]+) s = ", summary).group(1))
    parts = [float(x) for x in re.findall(r" ([0-9.]+) s(?: \+|$)", summary)]
    assert len(parts) == len(stages) + 1  # and Python's start before the first
    assert "starting Python" in summary
    assert sum(parts) == pytest.approx(total, abs=0.01 * len(parts))
    assert total == pytest.approx(data.seconds, abs=0.5)


# -- the cache ---------------------------------------------------------------------------------

def test_a_second_load_reuses_the_output_and_an_engine_edit_reruns_the_child(engine, tmp_path,
                                                                             monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    settings = ExampleSettings()
    first = load_example(settings, engine)
    assert first.source == "child"
    assert load_example(settings, engine).source == "memory"
    load.clear_memory_cache()
    calls = []
    real_call = runner.run_child
    monkeypatch.setattr(runner, "run_child", lambda *a: calls.append(a) or real_call(*a))
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


def test_the_engine_hash_covers_its_layers_folders_but_not_its_data_folders(tmp_path):
    from docs_build.engine.cache import source_hash
    package = tmp_path / "glassllm"
    for name in ("__init__.py", "nn.py", "step_index.json", "learning/__init__.py",
                 "learning/optim.py", "interpret/recording/__init__.py",
                 "interpret/recording/events.py", "checkpoints/demo/config.json"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(f"# {name}\n", encoding="utf-8")
    (package / "interpret" / "__init__.py").write_text("", encoding="utf-8")
    before = source_hash(package)
    for edited in ("learning/optim.py", "interpret/recording/events.py", "step_index.json"):
        path = package / edited
        text = path.read_text(encoding="utf-8")
        path.write_text(text + "# edited\n", encoding="utf-8")
        assert source_hash(package) != before, edited
        path.write_text(text, encoding="utf-8")
    assert source_hash(package) == before
    # the checkpoint's content is hashed as the example's settings, apart
    (package / "checkpoints/demo/config.json").write_text("{}", encoding="utf-8")
    assert source_hash(package) == before
    # a file moved into a folder is another engine
    (package / "learning" / "nn.py").write_bytes((package / "nn.py").read_bytes())
    (package / "nn.py").unlink()
    assert source_hash(package) != before


def test_a_failed_child_leaves_nothing_in_the_cache(engine, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    _append(engine / "nn.py", "def broken(:\n    pass\n")
    with pytest.raises(DocsBuildError):
        load_example(ExampleSettings(), engine)
    assert list(cache.iterdir()) == []


# -- a cache that heals itself ------------------------------------------------------------------

def _cached(engine: Path, cache: Path, settings: ExampleSettings):
    """A first load (the child runs and its entry is stored), then the entry's folder."""
    assert load_example(settings, engine).source == "child"
    load.clear_memory_cache()
    return cache / engine_key(engine, settings)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_a_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def _nest(path: Path) -> None:
    path.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")


def _reshape(path: Path) -> None:
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["output"]["catalog"] = []  # valid JSON, the wrong shape
    path.write_text(json.dumps(meta), encoding="utf-8")


@pytest.mark.parametrize("damage,file", [(_truncate, "arrays.npz"), (_flip_a_bit, "arrays.npz"),
                                         (_nest, "meta.json"), (_reshape, "meta.json"),
                                         (_flip_a_bit, "replay/loss.glrec")],
                         ids=["truncated-npz", "bit-flipped-npz", "deeply-nested-meta",
                              "wrong-shape-meta", "bit-flipped-recording"])
def test_a_damaged_cache_entry_is_dropped_and_the_child_runs_again(engine, tmp_path, monkeypatch,
                                                                   damage, file):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    settings = ExampleSettings()
    entry = _cached(engine, cache, settings)
    damage(entry / file)
    again = load_example(settings, engine)
    assert again.source == "child"  # not shown, not an error: run again
    load.clear_memory_cache()
    assert load_example(settings, engine).source == "disk"  # and stored whole again


def test_an_edited_entry_is_run_again_not_shown(engine, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    settings = ExampleSettings()
    entry = _cached(engine, cache, settings)
    meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
    true_loss = meta["output"]["runs"]["loss"]
    meta["output"]["runs"]["loss"] = 0.125  # a well-formed file with a number of its own
    (entry / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    again = load_example(settings, engine)
    assert again.source == "child" and again.run.loss == true_loss


def test_an_entry_copied_under_another_key_is_run_again_not_shown(engine, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    mine, other = ExampleSettings(prompt="The dog"), ExampleSettings()
    entry = _cached(engine, cache, other)
    shutil.copytree(entry, cache / engine_key(engine, mine))  # another run's numbers
    again = load_example(mine, engine)
    assert again.source == "child"
    assert again.run.prompt_tokens == list(b"The dog")


def test_a_cache_setting_naming_a_file_is_one_line_saying_what_to_do(engine, tmp_path,
                                                                     monkeypatch):
    not_a_folder = tmp_path / "cache.txt"
    not_a_folder.write_text("mine\n", encoding="utf-8")
    monkeypatch.setenv(CACHE_ENV, str(not_a_folder))
    message = _error(engine)
    assert message == (f"the docs cache folder {not_a_folder} is a file: set {CACHE_ENV} to a "
                       f"folder (it is created if missing) or to off")
    assert not_a_folder.read_text(encoding="utf-8") == "mine\n"
    monkeypatch.setenv(CACHE_ENV, str(not_a_folder / "inside"))
    assert "cannot be created" in _error(engine)


def test_the_child_ends_when_the_build_that_waits_for_it_ends(engine, tmp_path):
    """The build holds the child's stdin; when the build dies (mkdocs serve killed), the
    child's stdin closes and it stops, even in an engine that never returns."""
    _append(engine / "text" / "tokenizer.py", "while True:\n    pass\n")  # loops on import
    work = tmp_path / "work"
    work.mkdir()
    request = runner.make_request(ExampleSettings(), engine.resolve(), False)
    schema.write_json(request, work / schema.REQUEST)
    env = {**_env(), "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", runner.CHILD_MODULE, str(work)],
                             cwd=engine.parent, env=env, stdin=subprocess.PIPE)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=3)  # looping, as long as its stdin is open
        child.stdin.close()  # what the build's death does
        assert child.wait(timeout=30) != 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
