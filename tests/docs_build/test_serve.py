"""``mkdocs serve`` never stalls: an engine edit that loops forever is stopped after
``serve_timeout`` seconds, the pages answer with a banner that says what happened, and
stopping serve stops the engine's child."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests import hosts

from .conftest import _env, copy_checkout, set_serve_timeout

pytestmark = pytest.mark.slow  # a real `mkdocs serve` of a copy, for minutes: --run-slow runs it

# seconds: the default example's child takes 2 on a quiet machine, 10 under load, and more
# than 20 on CI's 2 cores with other browser tests running (then the first build had no pages)
SERVE_TIMEOUT = 60
LOOP = "\nwhile True:  # an edit that never returns\n    pass\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _engine_children(pid: int) -> list[int]:
    """The docs build's engine children of process ``pid`` (from /proc; not its git calls)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == pid and any(b"docs_build" in part for part in command):
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(predicate, seconds: float, step: float = 0.2):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def _get(url: str, timeout: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode("utf-8")


def test_an_endless_engine_does_not_stall_serve_and_stopping_serve_stops_its_child(tmp_path,
                                                                                   progress):
    root = copy_checkout(tmp_path / "repo")
    set_serve_timeout(root, SERVE_TIMEOUT)
    port = _free_port()
    base = f"http://127.0.0.1:{port}/"
    env = {**_env(), "GLASSLLM_DOCS_CACHE": "off"}
    serve = subprocess.Popen(hosts.cli("serve", "-a", f"127.0.0.1:{port}"), cwd=root, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # serve answers with the step pages of a good build first
        progress("mkdocs serve: waiting for its first build ...")
        assert _wait_for(lambda: _answers(base + "steps/embed/"), 300, 0.5), "serve never answered"
        tokenizer = root / "glassllm" / "text" / "tokenizer.py"
        with tokenizer.open("a", encoding="utf-8") as handle:
            handle.write(LOOP)  # the next child loops while importing the engine
        # every page still answers, within the short timeout, and says what happened
        progress(f"the engine now loops: waiting for the {SERVE_TIMEOUT} s limit's banner ...")
        start = time.monotonic()
        page = _wait_for(lambda: _page_with_banner(base + "steps/embed/"), 240, 0.5)
        assert page, "no page named the endless engine"
        assert time.monotonic() - start < 240  # not the build's own 600 s
        assert f"did not finish within {SERVE_TIMEOUT} s" in page
        assert "plugins.glassllm.serve_timeout" in page
        # one more edit: a new child loops; stopping serve meanwhile stops it too
        with tokenizer.open("a", encoding="utf-8") as handle:
            handle.write("# another edit\n")
        progress("stopping serve while a new child loops ...")
        child = _wait_for(lambda: _engine_children(serve.pid), 60, 0.1)
        assert child, "the rebuild started no child"
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=30)
        assert _wait_for(lambda: not any(_alive(pid) for pid in child), 15), (
            "the engine's child outlived mkdocs serve")
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()


def _answers(url: str) -> bool:
    try:
        _get(url, timeout=5)
    except OSError:
        return False
    return True


def _page_with_banner(url: str) -> str | None:
    try:
        page = _get(url, timeout=SERVE_TIMEOUT + 60)
    except OSError:
        return None
    return page if "gl-serve-banner" in page else None
