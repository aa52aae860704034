"""Pyodide and NumPy as the build finds them, checked, and the site's own package lock.

Pyodide's core comes from npm (``node_modules/pyodide``, the version ``package.json`` pins).
NumPy for it comes from no registry we reach: the project commits Pyodide's own wheel
(``third_party/pyodide``, where its README says it came from), and every build checks its
sha256 against the one Pyodide's official lock, ``node_modules/pyodide/pyodide-lock.json``,
lists for ``numpy``.

The site's lock (``site_lock``) is a Pyodide lock file of two packages, NumPy and the glassllm
wheel built from this checkout, each with its sha256: the worker hands it to ``loadPyodide``,
whose ``loadPackage("glassllm")`` then fetches both wheels with subresource integrity, so the
browser refuses bytes that differ.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import DocsBuildError

PYODIDE_PACKAGE = "node_modules/pyodide"  # where `npm ci` puts it, relative to package.json
THIRD_PARTY_DIR = "third_party/pyodide"  # relative to the project's checkout
NUMPY_WHEEL = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"
# The files of Pyodide's npm package that the browser loads (copied unmodified)
CORE_FILES = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
LICENSES_DIR = "licenses"  # in THIRD_PARTY_DIR: the licence texts the site ships
NUMPY_LICENSE = "numpy-2.0.2.dist-info/LICENSE.txt"  # inside the NumPy wheel


@dataclass(frozen=True)
class PyodideSources:
    """What the runtime is made of, found and checked (``pyodide_sources``)."""

    pyodide_dir: Path  # node_modules/pyodide
    version: str  # Pyodide's version, from its package.json
    official_lock: dict  # node_modules/pyodide/pyodide-lock.json
    numpy_wheel: Path
    licenses_dir: Path

    @property
    def numpy_entry(self) -> dict:
        return self.official_lock["packages"]["numpy"]


def pyodide_sources(npm_dir: Path, checkout: Path | None = None) -> PyodideSources:
    """Pyodide from ``npm_dir/node_modules`` (where ``npm ci`` installed it, beside KaTeX) and
    NumPy from ``checkout/third_party/pyodide`` (the project's checkout: the engine package's
    parent; default ``npm_dir``), checked: the installed Pyodide is the one ``package.json``
    pins, and NumPy's sha256 is the one its official lock lists. ``DocsBuildError`` saying
    what to do otherwise."""
    root = Path(npm_dir)
    checkout = Path(checkout) if checkout is not None else root
    pyodide_dir = root / PYODIDE_PACKAGE
    npm = f"run 'npm ci' in {root}"
    missing = [name for name in (*CORE_FILES, "pyodide-lock.json", "package.json")
               if not (pyodide_dir / name).is_file()]
    if missing:
        raise DocsBuildError(f"Pyodide is not installed ({pyodide_dir} lacks "
                             f"{', '.join(missing)}): {npm} (the browser runtime's Python)")
    version = _json(pyodide_dir / "package.json", npm).get("version")
    wanted = _json(root / "package.json", npm).get("dependencies", {}).get("pyodide") \
        if (root / "package.json").is_file() else None
    if wanted and version != wanted:
        raise DocsBuildError(f"node_modules holds Pyodide {version} but package.json pins "
                             f"{wanted}: {npm}")
    official = _json(pyodide_dir / "pyodide-lock.json", npm)
    entry = official.get("packages", {}).get("numpy")
    if not isinstance(entry, dict) or entry.get("file_name") != NUMPY_WHEEL:
        raise DocsBuildError(f"{pyodide_dir}/pyodide-lock.json (Pyodide {version}) does not "
                             f"list {NUMPY_WHEEL}, the NumPy in {checkout / THIRD_PARTY_DIR}: put "
                             f"that Pyodide release's NumPy wheel there (its README says how) "
                             f"and set NUMPY_WHEEL in docs_build/runtime/lock.py")
    wheel = checkout / THIRD_PARTY_DIR / NUMPY_WHEEL
    if not wheel.is_file():
        raise DocsBuildError(f"{wheel} is missing: it is committed with the project (see "
                             f"{THIRD_PARTY_DIR}/README.md); restore it with git checkout")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != entry.get("sha256"):
        raise DocsBuildError(f"{wheel} has sha256 {digest}, but Pyodide {version}'s official "
                             f"lock ({pyodide_dir}/pyodide-lock.json) lists {entry.get('sha256')}"
                             f": these are not Pyodide's NumPy bytes; restore the file with git "
                             f"checkout, or get it as {THIRD_PARTY_DIR}/README.md says")
    return PyodideSources(pyodide_dir, str(version), official, wheel,
                          checkout / THIRD_PARTY_DIR / LICENSES_DIR)


def site_lock(sources: PyodideSources, wheels: dict[str, tuple[str, str, str]]) -> dict:
    """The site's Pyodide lock: its ``info`` is Pyodide's own, its packages NumPy (the
    official entry) and glassllm. ``wheels``: package name -> (file name relative to the
    folder of Pyodide's core files, sha256, version), for ``numpy`` and ``glassllm``."""
    numpy_file, numpy_sha, _ = wheels["numpy"]
    glassllm_file, glassllm_sha, glassllm_version = wheels["glassllm"]
    numpy = {**sources.numpy_entry, "file_name": numpy_file, "sha256": numpy_sha}
    glassllm = {"name": "glassllm", "version": glassllm_version, "file_name": glassllm_file,
                "install_dir": "site", "sha256": glassllm_sha, "package_type": "package",
                "imports": ["glassllm"], "depends": ["numpy"], "unvendored_tests": False}
    return {"info": sources.official_lock["info"],
            "packages": {"glassllm": glassllm, "numpy": numpy}}


def _json(path: Path, fix: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DocsBuildError(f"cannot read {path} ({error}): {fix}") from error
    if not isinstance(data, dict):
        raise DocsBuildError(f"{path} is not a JSON object: {fix}")
    return data
