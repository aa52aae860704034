"""Rebuilds as ``mkdocs serve`` runs them (one process, one plugin instance), and reproducibility."""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
import tempfile
import threading

import pytest

from tests import hosts

from .conftest import REPO_URL, ROOT, _env, copy_checkout, set_serve_timeout

# Minutes each on 2 cores (a dozen builds of a copy, a real `mkdocs serve`): --run-slow runs them
pytestmark = pytest.mark.slow

# Runs inside a copy of the checkout: builds the way `mkdocs serve` rebuilds (config reloaded,
# the plugin instance kept because it defines on_startup), editing files between builds.
SERVE_SCRIPT = hosts.SCRIPT_PREAMBLE + r'''
import json, logging, re, subprocess, sys
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config

root = Path.cwd()
messages = []

class Keep(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())

logging.getLogger(HOST_LOGGER).addHandler(Keep())
logging.getLogger(HOST_LOGGER).setLevel(logging.INFO)
started = []
builds = []

def rebuild():
    import time
    begun = time.monotonic()
    messages.clear()
    config = load_config("mkdocs.yml", site_dir=str(root / "site"), strict=True)
    if not started:
        config.plugins.on_startup(command="serve", dirty=False)
        started.append(config)
    build(config)
    builds.append(time.monotonic() - begun)
    # a line the test passes on to the terminal as it comes (run_reporting)
    ran = [m[m.index("example run:"):][:70] for m in messages if "example run:" in m]
    print(f"PROGRESS build {len(builds)} in {builds[-1]:.0f} s" + (f" ({ran[0]})" if ran else ""),
          flush=True)
    return config, [m for m in messages if "glassllm" in m]

def page(url):
    return (root / "site" / url / "index.html").read_text(encoding="utf-8")

def first_cell(url):
    # the first cell of the first value table: row 0, column 0 of its slice
    return re.search(r'<table class="gl-values"[^>]*data-rows="0[ "][^>]*data-cols="0[ "].*?'
                     r'<tbody><tr><th[^>]*>[^<]*</th><td[^>]*>([^<]*)</td>', page(url), re.S).group(1)

def source_line(url):
    return int(re.search(r'href="[^"]*source/[^"]*#L(\d+)"', page(url)).group(1))

def edit(path, pattern, repl):
    text = (root / path).read_text(encoding="utf-8")
    new, n = re.subn(pattern, repl, text, count=1, flags=re.M)
    assert n == 1, (path, pattern)
    (root / path).write_text(new, encoding="utf-8")

import atexit
finished = []

@atexit.register
def report_messages():
    # a strict build stops with mkdocs' Abort, a SystemExit that prints nothing, and its
    # reason went to the logger this script keeps: say it, so a failing run shows why
    if not finished:
        sys.stderr.write("host messages of the last build:\n" + "\n".join(messages) + "\n")

out = {}
config, out["first"] = rebuild()
out["watch"] = list(config.watch)
out["same_plugin"] = config.plugins["glassllm"] is started[0].plugins["glassllm"]
out["embed_before"] = first_cell("steps/embed")
out["norm_line_before"] = source_line("steps/attn.norm")

with (root / "docs/_texts/en/steps/embed.md").open("a", encoding="utf-8") as f:
    f.write("\n\nEDITED-TEXT-SENTINEL\n")
config, out["after_text"] = rebuild()
out["text_shown"] = "EDITED-TEXT-SENTINEL" in page("steps/embed")
out["embed_after_text"] = first_cell("steps/embed")

edit("glassllm/model.py", r"^(\s*\w+ = )(.*# @step embed\b)", r"\g<1>2 * \g<2>")
config, out["after_engine"] = rebuild()
out["embed_after_engine"] = first_cell("steps/embed")

edit("glassllm/nn.py", r"^(from __future__ import annotations)$", r"\n\1")
subprocess.run([sys.executable, "scripts/build_step_index.py"], check=True, capture_output=True)
config, out["after_lines"] = rebuild()
out["norm_line_after"] = source_line("steps/attn.norm")

edit("docs_build/engine/child.py", r"^PROBE_LENGTH = 24\b", "PROBE_LENGTH = 20")
config, out["after_child"] = rebuild()
out["probe_caption_after_child"] = "random sequence of 20 tokens" in page("steps/attn.mask")
print("RESULT " + json.dumps(out))
finished.append(True)
'''


def slow_machine_config(root):
    """The copy's mkdocs.yml with serve's time limit for the engine's child raised from 30 s:
    on a loaded 2-core machine an example run can take longer, and a child stopped by the
    limit is a warning that stops these strict rebuilds (what they test is not the limit)."""
    set_serve_timeout(root, 600)


def run_reporting(script: str, root, progress, timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run`` of ``script`` in ``root`` (output kept, killed after ``timeout`` s),
    passing each ``PROGRESS`` line of its stdout on to ``progress`` as it comes: the five to
    seven builds take minutes, and a newcomer sees each one end."""
    timed_out = []

    def stop():
        timed_out.append(True)
        child.kill()

    with tempfile.TemporaryFile("w+", encoding="utf-8") as errors:
        child = subprocess.Popen([sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE,
                                 stderr=errors, text=True, env=_env())
        timer = threading.Timer(timeout, stop)
        timer.start()
        kept = []
        try:
            for line in child.stdout:
                if line.startswith("PROGRESS "):
                    progress(line[len("PROGRESS "):].rstrip())
                else:
                    kept.append(line)
            child.wait()
        finally:
            timer.cancel()
        errors.seek(0)
        stderr = errors.read()
    assert not timed_out, f"still running after {timeout} s:\n{stderr[-4000:]}"
    return subprocess.CompletedProcess(child.args, child.returncode, "".join(kept), stderr)


def test_serve_rebuilds_reuse_the_run_and_pick_up_engine_text_and_child_edits(tmp_path, progress):
    root = copy_checkout(tmp_path / "repo")
    slow_machine_config(root)
    progress("5 builds as mkdocs serve runs them, with edits between them ...")
    result = run_reporting(SERVE_SCRIPT, root, progress, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.split("RESULT ", 1)[1])
    assert str(root / "glassllm") in out["watch"] and str(root / "docs_build") in out["watch"]
    assert out["same_plugin"]
    assert any("example run:" in m and "reused from memory" not in m for m in out["first"])
    # a text edit rebuilds the page but not the example run
    assert out["text_shown"]
    assert any("reused from memory" in m for m in out["after_text"]), out["after_text"]
    assert out["embed_after_text"] == out["embed_before"]
    # an engine edit reruns it in a new child, with the new code: the embedding doubled
    assert any("engine child:" in m for m in out["after_engine"]), out["after_engine"]
    before, after = float(out["embed_before"]), float(out["embed_after_engine"])
    assert abs(after - 2 * before) <= 2e-3 * abs(before)
    # moved lines (and a rebuilt index) move the source links
    assert out["norm_line_after"] == out["norm_line_before"] + 1
    # an edit of the child module reruns it too (its source is part of the cache key)
    assert any("engine child:" in m for m in out["after_child"]), out["after_child"]
    assert out["probe_caption_after_child"]


def test_two_builds_of_the_same_checkout_are_byte_identical(site, tmp_path, progress):
    """The session's site against a build in a fresh process with the same configuration."""
    code = ("import sys; from pathlib import Path; from tests.docs_build.conftest import build_site; "
            f"build_site(Path(sys.argv[1]), repo_url={REPO_URL!r})")
    other = tmp_path / "again"
    progress("building the site again in a fresh process, to compare byte for byte ...")
    result = subprocess.run([sys.executable, "-c", code, str(other)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env=_env())
    assert result.returncode == 0, result.stderr[-3000:]
    mismatch = _diff(filecmp.dircmp(site.dir, other))
    assert not mismatch, mismatch[:10]


def _diff(cmp: filecmp.dircmp) -> list[str]:
    problems = [f"only in one build: {name}" for name in cmp.left_only + cmp.right_only]
    _, differ, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
    problems += [f"differs: {cmp.left}/{name}" for name in differ + errors]
    for sub in cmp.subdirs.values():
        problems += _diff(sub)
    return problems


# `mkdocs serve` rebuilds while the checkout has a problem `mkdocs build` stops on. A failed
# rebuild would leave every browser request waiting, so each one must still give a site.
# Without --strict, as `mkdocs serve` runs by default: its warnings must not stop it.
SERVE_PROBLEMS_SCRIPT = SERVE_SCRIPT.split("out = {}", 1)[0].replace(
    "strict=True", "strict=False") + r'''
import html as H

def banner(url):
    found = re.search(r'<div class="gl-serve-banner"[^>]*>(.*?)</div>', page(url), re.S)
    return H.unescape(re.sub(r"<[^>]+>", "", found.group(1))) if found else None

def pages_without_banner():
    return sorted(str(p.relative_to(root / "site")) for p in (root / "site").rglob("index.html")
                  if 'class="gl-serve-banner"' not in p.read_text(encoding="utf-8"))

def warnings(messages):
    return [m for m in messages if "mkdocs build stops here" in m]

class Warnings(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            all_warnings.append(record.getMessage())

all_warnings = []
logging.getLogger(HOST_LOGGER).addHandler(Warnings())

def state(name, messages):
    out[name] = {"catalog_banner": banner("steps"), "catalog": page("steps"),
                 "without_banner": pages_without_banner(), "warnings": warnings(messages),
                 "step_pages": (root / "site/steps/embed/index.html").is_file()}
    if out[name]["step_pages"]:
        out[name].update(banner=banner("steps/embed"), pt_banner=banner("pt/steps/attn.norm"),
                         embed=first_cell("steps/embed"), norm_line=source_line("steps/attn.norm"))

nn = (root / "glassllm/nn.py").read_text(encoding="utf-8")
broken = nn + "\n\ndef broken(:\n    pass\n"
out = {}
(root / "glassllm/nn.py").write_text(broken, encoding="utf-8")
config, messages = rebuild()          # serve starts on a broken engine: no good run yet
state("broken_at_start", messages)
out["broken_at_start"]["all_warnings"] = list(all_warnings)
(root / "glassllm/nn.py").write_text(nn, encoding="utf-8")
config, messages = rebuild()
state("fixed", messages)
edit("glassllm/nn.py", r"^(from __future__ import annotations)$", r"\n\1")  # index now stale
config, messages = rebuild()
state("stale", messages)
stale_nn = (root / "glassllm/nn.py").read_text(encoding="utf-8")
(root / "glassllm/nn.py").write_text(stale_nn + "\n\ndef broken(:\n    pass\n", encoding="utf-8")
config, messages = rebuild()
state("broken_after_good", messages)
(root / "glassllm/nn.py").write_text(stale_nn, encoding="utf-8")
subprocess.run([sys.executable, "scripts/build_step_index.py"], check=True, capture_output=True)
text = (root / "docs/_texts/pt/steps/embed.md").read_text(encoding="utf-8")
(root / "docs/_texts/pt/steps/embed.md").write_text("---\nlabel: [x\n---\nx\n", encoding="utf-8")
config, messages = rebuild()
state("bad_text", messages)
(root / "docs/_texts/pt/steps/embed.md").write_text(text, encoding="utf-8")
edit("docs/_texts/en/ui.yml", r'^layer: "Layer \{layer\}"$', 'layer: "Layer {layer:>99999999}"')
config, messages = rebuild()
state("bad_ui", messages)
edit("docs/_texts/en/ui.yml", r'^layer: .*$', 'layer: "Layer {layer}"')
config, messages = rebuild()
state("all_fixed", messages)
print("RESULT " + json.dumps(out))
finished.append(True)
'''


def test_serve_shows_a_stale_index_or_broken_engine_on_every_page_instead_of_stalling(tmp_path,
                                                                                     progress):
    root = copy_checkout(tmp_path / "repo")
    slow_machine_config(root)
    progress("7 builds as mkdocs serve runs them, breaking and mending the checkout ...")
    result = run_reporting(SERVE_PROBLEMS_SCRIPT, root, progress, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.split("RESULT ", 1)[1])
    syntax = "glassllm/nn.py:"
    # no good run yet: the catalog page and every page's banner name the problem and the fix
    start = out["broken_at_start"]
    assert not start["step_pages"] and not start["without_banner"]
    assert syntax in start["catalog_banner"] and "SyntaxError" in start["catalog_banner"]
    assert "fix the engine module" in start["catalog"]
    assert len(start["warnings"]) == 1 and syntax in start["warnings"][0]
    assert len(start["all_warnings"]) == 1, start["all_warnings"][:5]  # none per missing link
    good = out["fixed"]
    assert good["step_pages"] and good["banner"] is None and not good["warnings"]
    assert len(good["without_banner"]) > 60  # no banner anywhere
    # a stale index: the pages take the markers' live lines, and say what to run
    stale = out["stale"]
    assert stale["norm_line"] == good["norm_line"] + 1 and stale["embed"] == good["embed"]
    assert not stale["without_banner"]
    for banner in (stale["banner"], stale["pt_banner"], stale["catalog_banner"]):
        assert "step_index.json is stale" in banner
        assert "run python scripts/build_step_index.py" in banner
    assert len(stale["warnings"]) == 1 and "step_index.json is stale" in stale["warnings"][0]
    # a broken engine after a good build: the last good pages, with the banner
    after = out["broken_after_good"]
    assert after["step_pages"] and after["embed"] == good["embed"]
    assert after["norm_line"] == stale["norm_line"] and not after["without_banner"]
    assert syntax in after["banner"] and "last good build" in after["banner"]
    assert len(after["warnings"]) == 1
    # a bad step text: the last good pages, with the banner naming the file and line
    bad = out["bad_text"]
    assert bad["step_pages"] and not bad["without_banner"]
    assert "pt/steps/embed.md:2: not valid YAML" in bad["banner"]
    assert "last good build" in bad["banner"]
    assert len(bad["warnings"]) == 1
    # a bad ui.yml: the last good UI strings, and the banner naming the key
    bad_ui = out["bad_ui"]
    assert bad_ui["step_pages"] and not bad_ui["without_banner"]
    assert "en/ui.yml: layer: the placeholder {layer:>99999999}" in bad_ui["banner"]
    assert len(bad_ui["warnings"]) == 1
    fixed = out["all_fixed"]
    assert fixed["step_pages"] and fixed["banner"] is None and not fixed["warnings"]
    assert fixed["norm_line"] == stale["norm_line"]


def test_a_real_mkdocs_serve_answers_at_once_after_an_edit_makes_the_index_stale(tmp_path,
                                                                                progress):
    """``mkdocs serve`` itself: before, the failed rebuild left this request hanging for good."""
    import re
    import socket
    import time
    import urllib.request

    root = copy_checkout(tmp_path / "repo")
    slow_machine_config(root)
    with socket.socket() as probe:  # a free port for this server only
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/steps/attn.norm/"
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(hosts.cli("serve", "-a", f"127.0.0.1:{port}"),
                              cwd=root, stdout=log, stderr=subprocess.STDOUT, env=_env())

    def get() -> str:
        with urllib.request.urlopen(url, timeout=90) as response:  # a stall raises here
            return response.read().decode("utf-8")

    def line_of(page: str) -> int:
        return int(re.search(r'href="[^"]*source/[^"]*#L(\d+)"', page).group(1))

    try:
        progress("mkdocs serve: waiting for its first build ...")
        deadline = time.monotonic() + 240  # the first build; generous for a loaded machine
        while True:  # the first build, then the server comes up
            assert server.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "serve.log").read_text()[-3000:]
            try:
                page = get()
                break
            except OSError:
                time.sleep(0.5)
        assert "gl-serve-banner" not in page
        before = line_of(page)
        progress("serve answered; editing glassllm/nn.py, waiting for the rebuild ...")
        nn = root / "glassllm" / "nn.py"
        nn.write_text("\n" + nn.read_text(encoding="utf-8"), encoding="utf-8")  # markers move
        edited = time.monotonic()
        while "gl-serve-banner" not in page:  # until the rebuild after the edit is served
            assert time.monotonic() - edited < 150, (tmp_path / "serve.log").read_text()[-3000:]
            time.sleep(0.5)
            page = get()
        assert "step_index.json is stale" in page and "python scripts/build_step_index.py" in page
        assert line_of(page) == before + 1
    finally:
        server.terminate()  # this server only, by its own process
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert output.count("step_index.json is stale") == 1, output[-3000:]
