"""Read the per-language step texts that live under ``docs/_texts/<lang>/steps/<id>.md``.

Each file starts with a YAML-style front matter block holding ``label:`` (a short name for
the step) and continues with the explanation in Markdown. The texts are site content, so they
live under ``docs/`` and not in the package; ``_texts/`` is excluded from the pages MkDocs
renders by ``exclude_docs`` in ``mkdocs.yml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import TextError
from .files import TEXTS_DIRNAME, read_text, yaml_problem


@dataclass(frozen=True)
class StepText:
    label: str
    body: str  # Markdown: what the step computes, why the model needs it, what to notice
    path: Path


def step_text_path(docs_dir: Path, lang: str, step_id: str) -> Path:
    return Path(docs_dir) / TEXTS_DIRNAME / lang / "steps" / f"{step_id}.md"


def parse_step_text(path: Path) -> StepText:
    text = read_text(path)
    if not text.startswith("---\n"):
        raise TextError(f"{path}: must start with a '---' front matter block holding 'label:'")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise TextError(f"{path}: the front matter block is not closed by a '---' line")
    try:
        meta = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError as error:
        raise TextError(f"{path}{yaml_problem(error, first_line=2)}; the front matter holds "
                        f"'label: <short name of the step>'") from error
    label = meta.get("label") if isinstance(meta, dict) else None
    if not isinstance(label, str) or not label.strip():
        raise TextError(f"{path}: the front matter needs a non-empty 'label:'")
    body = text[end + len("\n---\n"):].strip()
    if not body:
        raise TextError(f"{path}: the explanation after the front matter is empty")
    return StepText(label=label.strip(), body=body + "\n", path=path)


def load_step_texts(docs_dir: Path, lang: str, step_ids) -> dict[str, StepText]:
    """The label and explanation of every step in ``step_ids`` for one language.

    Raises ``TextError`` naming each missing file, so a build can say exactly what to write.
    """
    missing = [step_id for step_id in step_ids
               if not step_text_path(docs_dir, lang, step_id).is_file()]
    if missing:
        paths = ", ".join(str(step_text_path(docs_dir, lang, s)) for s in missing)
        raise TextError(f"missing {lang!r} text for step(s) {', '.join(missing)}: "
                        f"write {paths} (front matter 'label:', then the explanation)")
    return {step_id: parse_step_text(step_text_path(docs_dir, lang, step_id))
            for step_id in step_ids}
