"""The engine's answer for the example's settings, from memory, the disk cache or a new child:
``load_engine``, the one way up from the engine to the site's data."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import DocsBuildError
from . import cache, runner, schema
from .settings import ExampleSettings

_MEMORY: dict[str, "EngineRun"] = {}  # newest only: an old engine's run is never wanted
_FILE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass
class EngineRun:
    output: schema.Output
    replay: list[tuple[schema.ReplayFile, bytes]]  # each recording with its bytes, in order
    request: schema.Request
    source: str  # "child", "memory" or "disk": where this build got it
    seconds: float = 0.0  # the child's wall time, when this build ran it


def load_engine(settings: ExampleSettings, package_dir: Path, *, allow_stale: bool = False,
                timeout: float = runner.DEFAULT_TIMEOUT,
                timeout_option: str = runner.TIMEOUT_OPTION,
                report: Callable[[str], None] | None = None) -> EngineRun:
    """What the engine in ``package_dir`` answers for ``settings``; cached (``engine/cache.py``).

    ``allow_stale`` (``mkdocs serve``): a stale step index is noted in the catalog's
    ``stale_index`` (the steps carry the markers' own lines) instead of raised. Raises
    ``DocsBuildError`` for bad settings, markers, index or checkpoint, and for an engine that
    fails (with its file and line) or a child that times out or crashes. ``report`` (the
    build's log) hears what a new child does as it does it (``runner.run_child``).
    """
    settings.check()
    package_dir = Path(package_dir).resolve()
    request = runner.make_request(settings, package_dir, allow_stale)
    key = cache.key_of(request, runner.CHILD_SOURCES)
    memory_key = hashlib.sha256(f"{key}{package_dir}{settings!r}".encode()).hexdigest()
    if memory_key in _MEMORY:
        remembered = _MEMORY[memory_key]
        return EngineRun(remembered.output, remembered.replay, request, "memory")
    root = cache.cache_dir()
    entry = cache.entry_of(root, key)
    answer = None
    if entry is not None and (entry.exists() or entry.is_symlink()):
        try:
            cache.check_entry(entry, key)
            answer = read_answer(entry, request, "disk")
            os.utime(entry)  # pruning keeps the recently used entries
        except Exception:  # noqa: BLE001 -- damaged, edited, foreign or pruned meanwhile: rerun
            cache.drop(entry)
            answer = None
    if answer is None:
        answer = _run_child(request, package_dir, timeout, timeout_option, root, entry, key,
                            report)
    _MEMORY.clear()
    _MEMORY[memory_key] = answer
    return answer


def clear_memory_cache() -> None:
    """Forget the in-memory answer (a cold build in the same process, as the benchmark times)."""
    _MEMORY.clear()


def read_answer(folder: Path, request: schema.Request, source: str) -> EngineRun:
    """The child's files in ``folder`` as an ``EngineRun``; ``SchemaError`` if they do not fit."""
    output = schema.read_output(folder)
    replay = []
    for listed in output.replay:
        if not _FILE_NAME.fullmatch(listed.file):
            raise schema.SchemaError(f"replay file name {listed.file!r}")
        replay.append((listed, (folder / schema.REPLAY_DIR / listed.file).read_bytes()))
    return EngineRun(output, replay, request, source)


def _run_child(request: schema.Request, package_dir: Path, timeout: float,
               timeout_option: str, root: Path | None, entry: Path | None,
               key: str, report: Callable[[str], None] | None = None) -> EngineRun:
    work = Path(tempfile.mkdtemp(prefix=".child-", dir=root))  # private (0700), same disk
    try:
        schema.write_json(request, work / schema.REQUEST)
        start = time.perf_counter()
        runner.run_child(work, package_dir, timeout, timeout_option, report)
        try:
            answer = read_answer(work, request, "child")
        except schema.SchemaError as error:  # the child and this module disagree: a bug
            raise DocsBuildError(f"the example child wrote what the build cannot read "
                                 f"({error}); rebuild from one checkout of glassllm") from error
        answer.seconds = time.perf_counter() - start
        if entry is not None:
            cache.seal(work, key)
            cache.store(work, root, entry)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return answer
