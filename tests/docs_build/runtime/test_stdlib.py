"""The standard library the site ships: Pyodide's zip without what a run never imports. That a
run works on it is the browser tests' job (tests/docs_build/runtime/test_browser.py runs every
operation of the runtime on the built site); these hold the zip to Pyodide's."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from docs_build.runtime import stdlib

ROOT = Path(__file__).resolve().parents[3]
PYODIDE_ZIP = ROOT / "node_modules" / "pyodide" / stdlib.STDLIB_FILE


@pytest.fixture(scope="module")
def original() -> bytes:
    if not PYODIDE_ZIP.is_file():
        pytest.fail("Pyodide is missing: run 'npm ci' in the repository root first")
    return PYODIDE_ZIP.read_bytes()


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def test_every_member_kept_is_pyodides_byte_for_byte_in_its_order(original):
    theirs = members(original)
    ours = members(stdlib.trimmed_stdlib(original))
    assert list(ours) == [name for name in theirs if stdlib.kept(name)]
    assert all(ours[name] == theirs[name] for name in ours)


def test_what_a_run_imports_stays_and_what_it_cannot_goes(original):
    ours = members(stdlib.trimmed_stdlib(original))
    # Pyodide's boot, NumPy's import, importlib.metadata (the bridge's version), tracebacks
    for needed in ("pyodide/__init__.py", "_pyodide/__init__.py", "asyncio/__init__.py",
                   "ctypes/__init__.py", "email/parser.py", "importlib/metadata/__init__.py",
                   "zipfile/__init__.py", "encodings/utf_8.py", "encodings/aliases.py",
                   "traceback.py", "linecache.py", "tokenize.py", "dataclasses.py", "json/__init__.py",
                   "pathlib.py", "urllib/parse.py", "tarfile.py", "shutil.py"):
        assert needed in ours, needed
    for dropped in ("unittest/__init__.py", "http/client.py", "xml/dom/minidom.py",
                    "multiprocessing/pool.py", "pdb.py", "encodings/cp932.py",
                    "encodings/mac_roman.py", "encodings/iso8859_5.py"):
        assert dropped in members(original) and dropped not in ours, dropped


def test_it_is_much_smaller_and_the_same_input_gives_the_same_bytes(original):
    trimmed = stdlib.trimmed_stdlib(original)
    assert len(trimmed) < 0.7 * len(original)
    stdlib.trimmed_stdlib.cache_clear()
    assert stdlib.trimmed_stdlib(bytes(original)) == trimmed


def test_the_notice_names_every_member_left_out_and_nothing_else(original):
    notice = stdlib.changes_notice(original, "0.27.7").decode("utf-8")
    header, listed = notice.split("\n\n", 1)
    assert "Pyodide 0.27.7" in header and "PSF" in header
    left_out = [name for name in members(original) if not stdlib.kept(name)]
    assert listed.splitlines() == left_out
    assert f"{len(left_out)} of {len(members(original))} members left out" in header
