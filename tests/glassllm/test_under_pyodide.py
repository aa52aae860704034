"""The engine's own tests, run again under Pyodide in Node: the CPython 3.12 and NumPy wasm the
site's browser runtime runs (tests/glassllm/under_pyodide.mjs), on this checkout.

Pyodide has no threads, no subprocesses and no ``safetensors`` package (glassllm reads
checkpoints with NumPy alone there), and no browser or PyTorch: the tests that need one of
those stay native-only (``NATIVE_ONLY``, each with its reason). Everything else must pass.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import _pytest
import iniconfig
import packaging
import pluggy
import pygments
import pytest

from tests.replay.test_fixtures import node_or_skip

ROOT = Path(__file__).resolve().parents[2]
RUNNER = "tests/glassllm/under_pyodide.mjs"
NATIVE_ONLY = {
    "tests/glassllm/test_build_step_index.py": "runs scripts/build_step_index.py in a subprocess",
    **{f"tests/glassllm/test_backward_catalog.py::{name}": "runs scripts/build_step_index.py in a subprocess"
       for name in ("test_check_names_a_moved_grad_marker_and_rebuild_fixes_it",
                    "test_a_grad_marker_twice_is_refused_without_touching_the_indexes")},
    "tests/glassllm/test_checkpoint.py": "writes checkpoints with the safetensors package",
    "tests/glassllm/test_checkpoint_atomic.py": "writes checkpoints with the safetensors package",
    "tests/glassllm/test_checkpoint_limits.py": "writes checkpoints with the safetensors package",
    "tests/glassllm/test_safetensors_reader.py": "compares with the safetensors package",
    "tests/glassllm/test_notation.py": "typesets with Node and chromium",
    "tests/glassllm/test_reference.py": "compares with PyTorch",
    "tests/glassllm/test_under_pyodide.py": "is this test",
    "tests/glassllm/test_train.py": ("trains from the command line: subprocesses, signals and "
                                     "checkpoints written with the safetensors package"),
    "tests/glassllm/test_train_subwords.py": ("trains into checkpoints written with the "
                                              "safetensors package; runs scripts/"),
    "tests/glassllm/test_train_record.py": ("trains into checkpoints written with the "
                                            "safetensors package; runs scripts/"),
    **{f"tests/glassllm/test_train_phases.py::{name}": ("trains into checkpoints written with "
                                                        "the safetensors package")
       for name in ("test_each_phase_has_its_own_learning_rate_and_row_length",
                    "test_a_run_stopped_inside_a_phase_resumes_to_the_same_bits",
                    "test_the_eta_counts_the_tokens_of_the_steps_left_not_the_steps")},
    **{f"tests/glassllm/test_demo.py::{name}": "unpacks the corpus's Debian packages with dpkg-deb"
       for name in ("test_greedy_continuations_of_everyday_prompts_read_as_english_words",
                    "test_card_records_the_sources_it_was_trained_on",
                    "test_heldout_sentences_share_no_long_word_run_with_the_corpus")},
    **{f"tests/glassllm/test_old_paths.py::{name}": "imports in a fresh interpreter, a subprocess"
       for name in ("test_every_old_path_is_the_new_module_whichever_is_imported_first",
                    "test_the_documented_imports_work_and_nothing_loads_twice",
                    "test_a_moved_module_is_an_attribute_of_the_package_before_anyone_imports_it",
                    "test_the_command_runs_a_moved_module")},
    "tests/glassllm/test_trace_filters.py::test_tracing_in_two_threads_at_once_keeps_every_snapshot_its_own":
        "starts threads",
    "tests/glassllm/test_lessons.py::test_the_full_lesson_forms_both_heads_previous_token_first_and_checks_itself":
        "trains the whole lesson, minutes natively (the site's browser test trains it live)",
    **{f"tests/glassllm/test_load_tokenizer.py::{name}": "writes checkpoints with the safetensors package"
       for name in ("test_a_model_from_a_folder_knows_its_tokenizer",
                    "test_text_is_never_read_as_bytes_by_a_model_that_has_no_byte_tokenizer",
                    "test_probes_read_text_with_the_models_tokenizer")},
}
# pytest and the pure-Python packages it imports, mounted into Pyodide from this Python's
MODULES = (pytest, _pytest, pluggy, iniconfig, packaging, pygments)
LEAST = 150  # tests that must run and pass: a selection that silently shrank fails here


def pytest_packages() -> list[str]:
    paths = [os.path.dirname(module.__file__) for module in MODULES]
    shim = Path(pytest.__file__).resolve().parents[1] / "py.py"  # pytest's `py` shim
    return paths + ([str(shim)] if shim.is_file() else [])


@pytest.mark.slow  # every engine test again in wasm: minutes on 2 cores
def test_the_engine_tests_pass_under_pyodide(progress):
    node = node_or_skip()
    if not (ROOT / "node_modules" / "pyodide" / "pyodide.mjs").is_file():
        pytest.fail("Pyodide is missing: run 'npm ci' in the repository root first")
    args = ["tests/glassllm", "-q", "-rfE", "--noconftest", "--capture=sys",
            "-p", "no:cacheprovider", "-p", "no:faulthandler"]
    for test in NATIVE_ONLY:
        args += ["--deselect" if "::" in test else "--ignore", test]
    progress("running tests/glassllm again under Pyodide in Node (minutes) ...")
    done = subprocess.run([node, RUNNER, json.dumps(pytest_packages()), "--", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=1500,
                          env={**os.environ, "NO_COLOR": "1"})
    report = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"the engine's tests under Pyodide failed:\n{report}"
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) >= LEAST, f"too few tests ran:\n{report}"
