"""Rebuilds as ``mkdocs serve`` runs them (one process, one plugin instance), and reproducibility."""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys

from .conftest import REPO_URL, ROOT, _env, copy_checkout

# Runs inside a copy of the checkout: builds the way `mkdocs serve` rebuilds (config reloaded,
# the plugin instance kept because it defines on_startup), editing files between builds.
SERVE_SCRIPT = r'''
import json, logging, re, subprocess, sys
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config

root = Path.cwd()
messages = []

class Keep(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())

logging.getLogger("mkdocs").addHandler(Keep())
logging.getLogger("mkdocs").setLevel(logging.INFO)
started = []

def rebuild():
    messages.clear()
    config = load_config("mkdocs.yml", site_dir=str(root / "site"), strict=True)
    if not started:
        config.plugins.on_startup(command="serve", dirty=False)
        started.append(config)
    build(config)
    return config, [m for m in messages if "glassllm" in m]

def page(url):
    return (root / "site" / url / "index.html").read_text(encoding="utf-8")

def first_cell(url):
    return re.search(r'<td data-index="0,0"[^>]*>([^<]*)</td>', page(url)).group(1)

def source_line(url):
    return int(re.search(r'href="[^"]*source/[^"]*#L(\d+)"', page(url)).group(1))

def edit(path, pattern, repl):
    text = (root / path).read_text(encoding="utf-8")
    new, n = re.subn(pattern, repl, text, count=1, flags=re.M)
    assert n == 1, (path, pattern)
    (root / path).write_text(new, encoding="utf-8")

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

edit("docs_build/values.py", r'^MINUS_INF, PLUS_INF, NOT_A_NUMBER = "−∞"', 'MINUS_INF, PLUS_INF, NOT_A_NUMBER = "MINUS-INF-EDITED"')
config, out["after_plugin"] = rebuild()
out["plugin_edit_shown"] = "MINUS-INF-EDITED" in page("steps/attn.mask")
print("RESULT " + json.dumps(out))
'''


def test_serve_rebuilds_reuse_the_run_and_pick_up_engine_text_and_plugin_edits(tmp_path):
    root = copy_checkout(tmp_path / "repo")
    result = subprocess.run([sys.executable, "-c", SERVE_SCRIPT], cwd=root, capture_output=True,
                            text=True, timeout=300, env=_env())
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.split("RESULT ", 1)[1])
    assert str(root / "glassllm") in out["watch"] and str(root / "docs_build") in out["watch"]
    assert out["same_plugin"]
    assert any("example run:" in m and "reused" not in m for m in out["first"])
    # a text edit rebuilds the page but not the example run
    assert out["text_shown"]
    assert any("reused from memory" in m for m in out["after_text"]), out["after_text"]
    assert out["embed_after_text"] == out["embed_before"]
    # an engine edit reruns it with the new code: the embedding doubled
    assert any("reloaded" in m for m in out["after_engine"]), out["after_engine"]
    assert not any("reused from memory" in m for m in out["after_engine"])
    before, after = float(out["embed_before"]), float(out["embed_after_engine"])
    assert abs(after - 2 * before) <= 2e-3 * abs(before)
    # moved lines (and a rebuilt index) move the source links
    assert out["norm_line_after"] == out["norm_line_before"] + 1
    # a plugin edit is picked up too
    assert out["plugin_edit_shown"]


def test_two_builds_of_the_same_checkout_are_byte_identical(site, tmp_path):
    """The session's site against a build in a fresh process with the same configuration."""
    code = ("import sys; from pathlib import Path; from tests.docs_build.conftest import build_site; "
            f"build_site(Path(sys.argv[1]), repo_url={REPO_URL!r})")
    other = tmp_path / "again"
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
