"""The engine's child process, from the build's side: the request it gets, how it is started
and waited for, and its failures as one ``DocsBuildError`` naming the file and line.

The child gets its stdin from a pipe this process holds open while it waits: when this
process ends (``mkdocs serve`` stopped or killed), the child ends too (``child.py:
exit_with_the_build``). A child that outlives its time is killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from ..errors import DocsBuildError
from . import model_source, schema
from .settings import SETTINGS_HINT, ExampleSettings

CHILD_MODULE = "docs_build.engine.child"  # run as python -m, the engine's folder first
CHILD_FILE = Path(__file__).resolve().parent / "child.py"
# the docs_build files the child runs: with the engine, what decides its output
CHILD_SOURCES = (CHILD_FILE, Path(schema.__file__).resolve(),
                 CHILD_FILE.with_name("limits.py"), CHILD_FILE.with_name("training_step.py"))
DEFAULT_TIMEOUT = 600  # seconds the child may take in a build; the default example takes a few
SERVE_TIMEOUT = 30  # under mkdocs serve, where every page waits for the rebuild
INDEX_COMMAND = "python scripts/build_step_index.py"
REPLAY_TOKENS = 6  # the step pages trace one token; the replay shows several
# The format of the site's recordings: glassllm.recording.BINARY_SUFFIX, the binary format the
# replay page reads lazily (spelled out: the build's side does not import glassllm)
REPLAY_SUFFIX = ".glrec"
# How each recording stores its floats (write_recording's dtype; float32 if not listed). None
# is listed: recorded with the KV cache, all three hold the tracer's float32 values exactly
# within pages/replay.py's SIZE_BUDGET (float16 would halve a recording, at 3 digits)
REPLAY_DTYPES: dict[str, str] = {}
TIMEOUT_OPTION = "plugins.glassllm.example_timeout in mkdocs.yml"


def make_request(settings: ExampleSettings, package_dir: Path, allow_stale: bool) -> schema.Request:
    folder = None if settings.checkpoint is None else Path(settings.checkpoint)
    heldout = model_source.heldout_source(folder, package_dir)
    return schema.Request(
        package_dir=str(package_dir), child=str(CHILD_FILE), allow_stale=bool(allow_stale),
        settings=asdict(settings), heldout=None if heldout is None else str(heldout),
        card=model_source.load_card(folder), replay_tokens=REPLAY_TOKENS,
        replay_suffix=REPLAY_SUFFIX, replay_dtypes=REPLAY_DTYPES,
        hints={"settings": SETTINGS_HINT, "model": model_source.MODEL_HINT,
               "index": INDEX_COMMAND})


def run_child(work: Path, package_dir: Path, timeout: float,
              timeout_option: str = TIMEOUT_OPTION,
              report: Callable[[str], None] | None = None) -> None:
    """Run the child on ``work/request.json``; returns when ``work`` holds its output.

    ``timeout_option`` is the setting the timeout message tells the reader to raise.
    ``report`` (the build's log) hears each stage of the child's work as it starts, then the
    time of each, which add up to the child's whole time (``Stages``).
    """
    env = dict(os.environ)
    # the engine comes from the cwd (first on sys.path with -m); docs_build from beside it
    # or, for a site without one, from this package's folder
    env["PYTHONPATH"] = os.pathsep.join(
        [str(CHILD_FILE.parents[2])] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    command = [sys.executable, "-m", CHILD_MODULE, str(work)]
    with tempfile.TemporaryFile() as stderr:
        stages = Stages(report)
        child = subprocess.Popen(command, cwd=package_dir.parent, env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        reader = threading.Thread(target=stages.read, args=(child.stdout,), daemon=True,
                                  name="engine-child-stages")
        reader.start()
        try:
            returncode = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise DocsBuildError(
                f"the example child (python -m {CHILD_MODULE}) did not finish within "
                f"{timeout:g} s ({timeout_option}) and was stopped; raise that timeout, or make "
                f"the example smaller in {SETTINGS_HINT} (an engine that never returns, e.g. "
                f"an endless loop, ends the same way)") from None
        finally:
            if child.poll() is None:  # timed out, or this process was interrupted
                child.kill()
                child.wait()
            child.stdin.close()
            reader.join(timeout=5)  # the pipe ends with the child
            child.stdout.close()
        stderr.seek(0)
        stderr_text = stderr.read().decode("utf-8", errors="replace")
    failed = work / schema.ERROR
    if failed.is_file():
        raise DocsBuildError(error_message(schema.read_json(schema.ErrorReport, failed)))
    if returncode != 0 or not (work / schema.META).is_file():
        tail = "\n".join(stderr_text.strip().splitlines()[-8:]) or "(nothing on stderr)"
        how = (f"was killed by signal {-returncode}" if returncode < 0
               else f"exited with code {returncode}")
        raise DocsBuildError(f"the example child (python -m {CHILD_MODULE}) {how} and no error "
                             f"report; its last lines of stderr:\n{tail}")
    stages.summary()


class Stages:
    """The child's stages, from the lines it prints as each starts (``child.announce``),
    timed by this process's clock: Python's start until the first line, then each stage until
    the next line or the child's end, so the times add up to the child's whole time."""

    def __init__(self, report: Callable[[str], None] | None) -> None:
        self.report = report or (lambda message: None)
        self.started = time.perf_counter()
        self.marks: list[tuple[str, float]] = [("starting Python", self.started)]
        self.ended: float | None = None

    def read(self, stream) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line.startswith(schema.STAGE_PREFIX):  # else the engine's own print: not ours
                self.begin(line[len(schema.STAGE_PREFIX):])
        self.ended = time.perf_counter()

    def begin(self, stage: str, now: float | None = None) -> None:
        now = time.perf_counter() if now is None else now
        self.marks.append((stage, now))
        self.report(f"engine child: {stage} (at {now - self.started:.1f} s)")

    def times(self, end: float | None = None) -> list[tuple[str, float]]:
        """Each stage with its seconds, until ``end`` (default: when the child's output ended)."""
        end = end if end is not None else (self.ended or time.perf_counter())
        ends = [at for _, at in self.marks[1:]] + [end]
        return [(stage, stop - at) for (stage, at), stop in zip(self.marks, ends)]

    def summary(self) -> str:
        """One line of every stage's time and their sum, reported."""
        times = self.times()
        total = sum(seconds for _, seconds in times)
        line = (f"engine child: done in {total:.2f} s = "
                + " + ".join(f"{stage} {seconds:.2f} s" for stage, seconds in times))
        self.report(line)
        return line


def error_message(report: schema.ErrorReport) -> str:
    """One build error from the child's ``error.json``."""
    if report.type == "Refusal":  # the child's message is the whole story
        return report.message
    place = report.file + (f":{report.line}" if report.line else "") if report.file \
        else "an unknown place"
    if report.stage == schema.SYNTAX_STAGE:
        return (f"{place}: {report.type}: {report.message}; fix the engine module, then "
                f"build again")
    return (f"{report.stage} raised {report.type}: {report.message} (at {place}); "
            f"fix the engine or {SETTINGS_HINT}, then build again")
