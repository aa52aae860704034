"""The engine child's answers, kept: on disk for another build of the same inputs (the test
suite's many builds, a second ``mkdocs build``), in memory for ``mkdocs serve``'s rebuilds.

An entry is a folder named by its key (``key_of``: the hash of every input of the child's
output, by content) holding the child's files and ``manifest.json``: the key again and the
SHA-256 of every file. It is written into a private temporary folder and renamed into place
whole, so it is complete or absent; on read the manifest is checked, so an entry that was
damaged (a truncated or bit-flipped file), edited, or copied under another key is dropped and
the child runs again: it is never shown. ``GLASSLLM_DOCS_CACHE=off`` turns the disk cache
off; a path moves it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..errors import DocsBuildError
from . import schema

CACHE_ENV = "GLASSLLM_DOCS_CACHE"  # "off", or the disk cache's folder
CACHE_ENTRIES = 8  # disk entries kept; older ones are removed
MANIFEST = "manifest.json"
ABANDONED = 86_400  # seconds after which a killed build's temporary folder is removed


def cache_dir() -> Path | None:
    """Where finished child outputs are kept: ``$GLASSLLM_DOCS_CACHE``, else the user's cache
    folder (``$XDG_CACHE_HOME`` or ``~/.cache``) ``/glassllm-docs``; None when set to off.

    Raises ``DocsBuildError`` when the setting names something that is not a folder.
    """
    setting = os.environ.get(CACHE_ENV, "")
    if setting.lower() in ("off", "0", "no", "false"):
        return None
    folder = Path(setting) if setting else Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "glassllm-docs"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        what = "is a file" if folder.is_file() else f"cannot be created ({error.strerror})"
        raise DocsBuildError(f"the docs cache folder {folder} {what}: set {CACHE_ENV} to a "
                             f"folder (it is created if missing) or to off") from None
    return folder


def source_hash(folder: Path) -> str:
    """A hash of a package's ``.py`` and ``.json`` files, its layers' folders' too (every
    subfolder with an ``__init__.py``; not a data folder such as ``checkpoints/``): for the
    engine, every file that decides its behaviour and marker lines."""
    folder = Path(folder)
    digest = hashlib.sha256()
    for path in _package_sources(folder):
        name = path.relative_to(folder).as_posix()
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _package_sources(folder: Path) -> list[Path]:
    found = []
    for path in sorted(folder.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            found += _package_sources(path)
        elif path.suffix in (".py", ".json") and path.is_file():
            found.append(path)
    return found


def key_of(request: schema.Request, child_sources) -> str:
    """Every input of the child's output, by content (no paths, so two copies of one checkout
    share it): the engine's sources, the child's own (``child_sources``), the request, and the
    Python and NumPy that run it."""
    fields = asdict(request)
    heldout = fields["heldout"]
    content = {**fields, "package_dir": None, "child": None,
               "settings": dict(fields["settings"], checkpoint=None),  # its content: the hash
               "heldout": None if heldout is None else _file_hash(Path(heldout)),
               "engine": source_hash(Path(request.package_dir)),
               "child_sources": [_file_hash(path) for path in child_sources],
               "format": schema.FORMAT, "python": sys.version, "numpy": np.__version__,
               "machine": platform.machine()}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def _file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` but the manifest: relative path -> SHA-256."""
    return {path.relative_to(folder).as_posix(): _file_hash(path)
            for path in sorted(folder.rglob("*"))
            if path.is_file() and path.relative_to(folder).as_posix() != MANIFEST}


def seal(folder: Path, key: str) -> None:
    """Write the manifest of a finished child's folder: its key and every file's hash."""
    (folder / MANIFEST).write_text(json.dumps({"key": key, "files": _files(folder)}),
                                   encoding="utf-8")


def check_entry(entry: Path, key: str) -> None:
    """Raise ``schema.SchemaError`` unless ``entry`` is the sealed, unchanged entry of ``key``."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise schema.SchemaError(f"{entry}: no readable manifest ({error!r})") from error
    if not isinstance(manifest, dict) or manifest.get("key") != key or entry.name != key:
        raise schema.SchemaError(f"{entry}: the entry of another key")
    if manifest.get("files") != _files(entry):
        raise schema.SchemaError(f"{entry}: its files differ from its manifest")


def entry_of(root: Path | None, key: str) -> Path | None:
    return None if root is None else root / key


def store(work: Path, root: Path, entry: Path) -> None:
    """Move a sealed folder into place whole; a parallel build may have won the race."""
    try:
        work.rename(entry)
    except OSError:
        return
    prune(root)


def drop(entry: Path) -> None:
    """Remove a damaged entry (a folder, or whatever else took its name)."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            entry.unlink()


def prune(root: Path) -> None:
    """Keep the newest ``CACHE_ENTRIES`` entries, and drop what a killed build left a day ago."""
    now = time.time()
    entries, abandoned = [], []
    for path in root.iterdir():
        with contextlib.suppress(OSError):  # another build may remove it meanwhile
            if path.is_dir():
                mtime = path.stat().st_mtime
                if not path.name.startswith("."):
                    entries.append((mtime, path))
                elif now - mtime > ABANDONED:
                    abandoned.append(path)
    entries.sort(reverse=True)
    for old in [path for _, path in entries[CACHE_ENTRIES:]] + abandoned:
        shutil.rmtree(old, ignore_errors=True)
