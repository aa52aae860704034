"""What the site says about its repository: the commit and date it was built from, and the
repository's page of a source line (``repo_url``)."""

from __future__ import annotations

import string
import subprocess
from pathlib import Path


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
TEMPLATE_FIELDS = ("repo_url", "ref", "path", "line")


def check_url_template(template: str) -> str:
    """``template`` if ``repo_line_url`` can fill it, else ``ValueError`` naming the allowed
    fields: checked when the config is read, so a bad template never reaches a page."""
    allowed = ", ".join("{" + name + "}" for name in TEMPLATE_FIELDS)
    advice = f"use only the fields {allowed}, e.g. '{DEFAULT_REPO_TEMPLATE}' (write {{{{ and }}}} for a brace)"
    try:
        fields = [(field, spec, conversion)
                  for _, field, spec, conversion in string.Formatter().parse(template)
                  if field is not None]
    except ValueError as error:  # an unclosed or lone brace
        raise ValueError(f"{template!r} is not a valid template ({error}); {advice}") from None
    for field, spec, conversion in fields:
        if field not in TEMPLATE_FIELDS:
            raise ValueError(f"{template!r} has the unknown field {{{field}}}; {advice}")
        if spec or conversion:  # a width could make every link megabytes long
            raise ValueError(f"{template!r} gives {{{field}}} a format spec or conversion; "
                             f"write {{{field}}} alone; {advice}")
    return template


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
