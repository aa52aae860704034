"""Each way the docs build must refuse to publish a wrong site, in a temporary copy.

The build must fail (plain and --strict) with a message that says what to do.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import copy_checkout, run_build


def _edit(path: Path, pattern: str, replacement: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    new, done = re.subn(pattern, replacement, text, count=count, flags=re.M)
    assert done == count, f"{path}: {pattern!r} not found"
    path.write_text(new, encoding="utf-8")


def stale_index(root: Path) -> None:
    # one blank line after the module docstring moves every marker below it
    _edit(root / "glassllm" / "nn.py", r'^(from __future__ import annotations)$', r"\n\1")


def missing_marker(root: Path) -> None:
    _edit(root / "glassllm" / "nn.py", r"\s*#\s*@step attn\.v\b.*$", "")


def unknown_marker(root: Path) -> None:
    _edit(root / "glassllm" / "nn.py", r"#\s*@step attn\.v\b", "# @step attn.value")


def missing_text(root: Path) -> None:
    (root / "docs" / "_texts" / "pt" / "steps" / "attn.q.md").unlink()


def missing_label(root: Path) -> None:
    (root / "docs" / "_texts" / "en" / "steps" / "mlp.up.md").write_text(
        "---\ntitle: no label here\n---\nSome explanation.\n", encoding="utf-8")


def example_raises(root: Path) -> None:
    # appended, so no marker line moves and the index stays fresh
    with (root / "glassllm" / "model.py").open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef _broken_loss(self, *args, **kwargs):\n"
                     "    raise RuntimeError('loss is broken on purpose')\n\n\n"
                     "GlassLM.loss = _broken_loss\n")


def missing_page_translation(root: Path) -> None:
    (root / "docs" / "pt" / "model.md").unlink()


def katex_missing(root: Path) -> None:
    (root / "node_modules").unlink()


def ui_string_missing(root: Path) -> None:
    _edit(root / "docs" / "_texts" / "pt" / "ui.yml", r"^nav\.next:.*$", "")


def no_theme_overrides(root: Path) -> None:
    _edit(root / "mkdocs.yml", r"^  custom_dir: overrides$", "")


CASES = {
    "stale index": (stale_index, ["step_index.json is stale", "attn.norm is indexed at",
                                  "run python scripts/build_step_index.py"]),
    "missing marker": (missing_marker, ["attn.v", "no '# @step <id>' marker",
                                        "python scripts/build_step_index.py"]),
    "unknown marker": (unknown_marker, ["glassllm/nn.py:", "unknown step ID 'attn.value'",
                                        "use one of the IDs in glassllm.STEPS"]),
    "missing text": (missing_text, ["missing 'pt' text for step(s) attn.q",
                                    "write ", "docs/_texts/pt/steps/attn.q.md"]),
    "missing label": (missing_label, ["mlp.up.md", "needs a non-empty 'label:'"]),
    "example raises": (example_raises, ["example run raised RuntimeError",
                                        "loss is broken on purpose", "glassllm/model.py"]),
    "page without translation": (missing_page_translation, ["write docs/pt/model.md"]),
    "KaTeX missing": (katex_missing, ["KaTeX is not installed", "run 'npm ci'"]),
    "UI string missing": (ui_string_missing, ["pt/ui.yml lacks the string(s) nav.next"]),
    "theme overrides unset": (no_theme_overrides, ["per-language template",
                                                   "set 'theme: custom_dir: overrides'"]),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return copy_checkout(tmp_path_factory.mktemp("pristine") / "repo")


def test_the_pristine_copy_builds(pristine):
    result = run_build(pristine)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (pristine / "site" / "steps" / "attn.mask" / "index.html").is_file()


@pytest.mark.parametrize("case", CASES)
def test_broken_checkout_fails_with_what_to_do(case, pristine, tmp_path):
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(pristine, root, symlinks=True, ignore=shutil.ignore_patterns("site"))
    breaker, messages = CASES[case]
    breaker(root)
    result = run_build(root)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "Aborted" in output or "Error" in output
    for message in messages:
        assert message in output, f"{case}: {message!r} not in:\n{output[-3000:]}"
