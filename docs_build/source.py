"""Highlighted source pages of the engine: one anchor per line (``#L123``), markers highlighted.

The site carries its own copy of the code it documents, so a step's source link works
offline and in ``mkdocs serve`` and always shows the lines this build's markers point at.
"""

from __future__ import annotations

import functools
import posixpath
import subprocess
from html import escape
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer


def source_page_uri(module_file: str, prefix: str = "") -> str:
    """``glassllm/nn.py`` -> ``source/glassllm/nn.md`` (URL ``source/glassllm/nn/``)."""
    return f"{prefix}source/{posixpath.splitext(module_file)[0]}.md"


def module_files(package_dir: Path) -> list[str]:
    """The engine's immediate modules, as ``glassllm/x.py``, sorted."""
    package_dir = Path(package_dir)
    return [f"{package_dir.name}/{p.name}" for p in sorted(package_dir.glob("*.py"))]


@functools.lru_cache(maxsize=64)  # each module is shown in every language
def highlighted_lines(code: str) -> tuple[str, ...]:
    """Pygments HTML of each source line; Pygments closes its spans at every line end."""
    html = highlight(code, PythonLexer(stripnl=False, ensurenl=True), HtmlFormatter(nowrap=True))
    lines = html.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(lines)


def code_block_html(code: str, markers: dict[int, tuple[str, str]]) -> str:
    """The module as one highlighted block; ``markers`` maps a line to (step ID, step URL).

    Each line is a span with ``id="L<n>"``; the number is drawn by CSS from ``data-line`` so
    copying the code does not copy the numbers.
    """
    out = []
    for number, html in enumerate(highlighted_lines(code), start=1):
        marker = markers.get(number)
        cls = "gl-line gl-marker" if marker else "gl-line"
        link = ""
        if marker:
            step_id, url = marker
            # text drawn by CSS from data-step: copying the code copies no link text
            link = (f'<a class="gl-step-link" href="{escape(url)}" data-step="{escape(step_id)}" '
                    f'aria-label="{escape(step_id)}"></a>')
        out.append(f'<span class="{cls}" id="L{number}"><a class="gl-ln" href="#L{number}" '
                   f'data-line="{number}" aria-label="L{number}"></a>{html}{link}</span>')
    return ('<div class="highlight gl-source" data-search-exclude><pre><code>'
            + "\n".join(out) + "</code></pre></div>")


def _git_output(repo_dir: Path, *args: str) -> str | None:
    """What a git command prints, or None outside git (a tarball, git not installed)."""
    try:
        result = subprocess.run(["git", *args], cwd=repo_dir, capture_output=True, text=True,
                                timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def git_commit(repo_dir: Path) -> str | None:
    """The full hash of HEAD, or None outside git."""
    commit = _git_output(repo_dir, "rev-parse", "HEAD")
    return commit if commit and len(commit) == 40 else None


def git_commit_date(repo_dir: Path) -> str | None:
    """HEAD's commit date (YYYY-MM-DD): a build date that is the same on every rebuild."""
    date = _git_output(repo_dir, "log", "-1", "--format=%cs")
    return date if date and len(date) == 10 else None


DEFAULT_REPO_TEMPLATE = "{repo_url}/blob/{ref}/{path}#L{line}"


def repo_line_url(template: str | None, repo_url: str, ref: str, path: str, line: int) -> str:
    """The repository's page of one line, e.g. GitHub's ``.../blob/<commit>/glassllm/nn.py#L12``."""
    return (template or DEFAULT_REPO_TEMPLATE).format(
        repo_url=repo_url.rstrip("/"), ref=ref, path=path, line=line)


def branch_from_edit_uri(edit_uri: str | None) -> str | None:
    """``edit/main/docs/`` -> ``main``: the branch the site says its pages live on."""
    parts = [p for p in (edit_uri or "").split("/") if p]
    if len(parts) >= 2 and parts[0] in ("edit", "blob", "tree", "-"):
        return parts[1] if parts[0] != "-" or len(parts) < 3 else parts[2]
    return None
