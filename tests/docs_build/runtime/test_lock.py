"""Pyodide and its NumPy as the build finds them, checked against Pyodide's official lock,
and the site's own lock of the two wheels (docs_build/runtime/lock.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from docs_build.errors import DocsBuildError
from docs_build.runtime import lock as runtime_lock

ROOT = Path(__file__).resolve().parents[3]
OFFICIAL = json.loads((ROOT / runtime_lock.PYODIDE_PACKAGE / "pyodide-lock.json").read_text())


def test_the_committed_numpy_is_the_one_pyodides_official_lock_lists():
    sources = runtime_lock.pyodide_sources(ROOT)
    digest = hashlib.sha256(sources.numpy_wheel.read_bytes()).hexdigest()
    assert digest == OFFICIAL["packages"]["numpy"]["sha256"]
    assert sources.numpy_wheel.name == OFFICIAL["packages"]["numpy"]["file_name"]
    pinned = json.loads((ROOT / "package.json").read_text())["dependencies"]["pyodide"]
    assert sources.version == pinned == OFFICIAL["info"]["version"]


def fake_root(tmp_path: Path) -> Path:
    """A site root whose node_modules/pyodide is the real one and whose NumPy is a copy."""
    shutil.copy2(ROOT / "package.json", tmp_path / "package.json")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / runtime_lock.PYODIDE_PACKAGE).symlink_to(ROOT / runtime_lock.PYODIDE_PACKAGE, target_is_directory=True)
    shutil.copytree(ROOT / runtime_lock.THIRD_PARTY_DIR, tmp_path / runtime_lock.THIRD_PARTY_DIR)
    return tmp_path


def test_other_numpy_bytes_stop_the_build_naming_both_hashes(tmp_path):
    root = fake_root(tmp_path)
    wheel = root / runtime_lock.THIRD_PARTY_DIR / runtime_lock.NUMPY_WHEEL
    data = bytearray(wheel.read_bytes())
    data[1000] ^= 1
    wheel.write_bytes(bytes(data))
    with pytest.raises(DocsBuildError) as raised:
        runtime_lock.pyodide_sources(root)
    message = str(raised.value)
    assert hashlib.sha256(bytes(data)).hexdigest() in message
    assert OFFICIAL["packages"]["numpy"]["sha256"] in message
    assert "not Pyodide's NumPy bytes" in message


def test_a_missing_numpy_or_pyodide_says_what_to_do(tmp_path):
    root = fake_root(tmp_path)
    (root / runtime_lock.THIRD_PARTY_DIR / runtime_lock.NUMPY_WHEEL).unlink()
    with pytest.raises(DocsBuildError, match="git checkout"):
        runtime_lock.pyodide_sources(root)
    (root / runtime_lock.PYODIDE_PACKAGE).unlink()
    with pytest.raises(DocsBuildError, match="Pyodide is not installed.*npm ci"):
        runtime_lock.pyodide_sources(root)


def test_an_installed_pyodide_other_than_the_pinned_one_is_refused(tmp_path):
    root = fake_root(tmp_path)
    manifest = json.loads((root / "package.json").read_text())
    manifest["dependencies"]["pyodide"] = "0.26.0"
    (root / "package.json").write_text(json.dumps(manifest))
    with pytest.raises(DocsBuildError, match=r"holds Pyodide 0\.27\.7 but package\.json pins 0\.26\.0"):
        runtime_lock.pyodide_sources(root)


def test_the_sites_lock_lists_both_wheels_with_their_hashes():
    sources = runtime_lock.pyodide_sources(ROOT)
    lock = runtime_lock.site_lock(sources, {"numpy": ("../wheels/n.whl", "a" * 64, None),
                                 "glassllm": ("../wheels/x/g.whl", "b" * 64, "0.1.0")})
    assert lock["info"] == OFFICIAL["info"]
    assert set(lock["packages"]) == {"numpy", "glassllm"}
    numpy = lock["packages"]["numpy"]
    assert numpy == {**OFFICIAL["packages"]["numpy"], "file_name": "../wheels/n.whl",
                     "sha256": "a" * 64}
    glassllm = lock["packages"]["glassllm"]
    assert (glassllm["file_name"], glassllm["sha256"], glassllm["version"]) == (
        "../wheels/x/g.whl", "b" * 64, "0.1.0")
    assert glassllm["depends"] == ["numpy"] and glassllm["imports"] == ["glassllm"]
