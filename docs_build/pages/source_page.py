"""The source page of one engine module in one language: the steps it marks, then the
highlighted module with an anchor per line.

The site carries its own copy of the code it documents, so a step's source link works
offline and in ``mkdocs serve`` and always shows the lines this build's markers point at.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from ..data.catalog import StepCatalog
from ..html.source_code import code_block_html
from ..text.languages import Language
from ..text.markdown import fmt, md_code, md_escape, md_rel
from .stash import Stash
from .urls import Links, source_page_uri, step_page_uri


def module_files(package_dir: Path) -> list[str]:
    """The engine's modules, its layers' folders' too, as ``glassllm/x.py`` and
    ``glassllm/learning/optim.py``, sorted: the package's own modules first, then each folder's."""
    package_dir = Path(package_dir)
    found = [path.relative_to(package_dir) for path in package_dir.rglob("*.py")
             if "__pycache__" not in path.parts]
    return [f"{package_dir.name}/{path.as_posix()}"
            for path in sorted(found, key=lambda path: (len(path.parts) > 1, path.parts))]


def source_nav(uris: list[str], prefix: str = "") -> list:
    """The source pages of one language as the navigation shows them: the package's own
    modules, then a section per folder titled by its path (``glassllm/learning/``), nested as
    the folders are. Each item is a page's URI or a ``(title, items)`` pair."""
    root: list = []
    folders: dict[str, list] = {}
    for uri in uris:
        parts = posixpath.dirname(uri.removeprefix(f"{prefix}source/")).split("/")
        items = root
        for depth in range(2, len(parts) + 1):  # glassllm/ itself is no section
            folder = "/".join(parts[:depth]) + "/"
            if folder not in folders:
                folders[folder] = []
                items.append((folder, folders[folder]))
            items = folders[folder]
        items.append(uri)
    return root


def render_source_page(module_file: str, code: str, catalog: StepCatalog,
                       labels: dict[str, str], ui: dict[str, str], lang: Language,
                       links: Links, stash: Stash) -> str:
    me = source_page_uri(module_file, lang.prefix)
    marked = [step for step in catalog.steps if step.file == module_file]
    markers = {step.line: (step.id, links.rel(me, step_page_uri(step.id, lang)))
               for step in marked}
    lines = [f"# {md_escape(fmt(ui, 'source.title', file=module_file))}", "",
             md_escape(fmt(ui, "source.intro", file=module_file)), ""]
    if marked:
        lines += [md_escape(ui["source.steps"]), ""]
        lines += [f"- [{md_code(step.id)} — {md_escape(labels[step.id])}]"
                  f"({md_rel(me, step_page_uri(step.id, lang))}) · [L{step.line}](#L{step.line})"
                  for step in sorted(marked, key=lambda s: s.line)]
    else:
        lines.append(md_escape(ui["source.no_steps"]))
    block = code_block_html(code, markers)
    lines += ["", stash.put(block, anchors=[f"L{n}" for n in range(1, len(code.splitlines()) + 1)]), ""]
    return "\n".join(lines)
