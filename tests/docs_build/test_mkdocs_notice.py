"""Material's end-of-life notice: documented (README, docs/building.md in both languages) and
left out of every MkDocs run the project makes itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests import hosts

ROOT = Path(__file__).resolve().parents[2]
NOTICE = "reaches end of life"


@pytest.mark.parametrize("doc", ["README.md", "docs/building.md", "docs/pt/building.md"])
def test_the_setting_that_silences_it_is_documented(doc):
    assert "NO_MKDOCS_2_WARNING=1" in (ROOT / doc).read_text(encoding="utf-8")


def test_a_build_the_tests_run_prints_no_notice(tmp_path):
    """A command the tests run with the environment as it is (tests/hosts.py sets it)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Hello\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\ntheme:\n  name: material\n",
                                         encoding="utf-8")
    done = subprocess.run(hosts.cli("build", "--strict", "-d", str(tmp_path / "site")),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert NOTICE not in done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()


@pytest.mark.parametrize("script", ["scripts/bench_browser.py", "scripts/bench_replay.py"])
def test_the_benchmarks_build_without_it(script):
    source = (ROOT / script).read_text(encoding="utf-8")
    build = source.index('"mkdocs", "build"')
    assert '"NO_MKDOCS_2_WARNING": "1"' in source[build:build + 300]


def test_ci_sets_it():
    assert "export NO_MKDOCS_2_WARNING=1" in (ROOT / ".ci/run").read_text(encoding="utf-8")
