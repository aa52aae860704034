"""A step page's exercises as HTML: each question, and its answer in a ``<details>`` block the
reader opens after working it out (``data/exercises.py`` computes the numbers; the words are
``docs/_texts/<lang>/exercises.yml``). Each exercise carries its numeric answer in
``data-answer`` (Python's repr of the float), for tests and tools, whatever the language
writes."""

from __future__ import annotations

import string
from html import escape
from pathlib import Path

import numpy as np

from ..data.exercises import Exercise, exercises
from ..errors import DocsBuildError
from ..text.files import load_sentences
from ..text.languages import Language
from ..text.markdown import md_escape
from ..text.numbers import format_value

FILENAME = "exercises.yml"
PAGE_KEYS = ("title", "backward_title", "intro", "number", "answer", "list_sep")


def load_exercise_texts(docs_dir: Path, lang: Language) -> dict[str, str]:
    """``docs/_texts/<lang>/exercises.yml`` as a flat dict of strings."""
    return load_sentences(docs_dir, lang.code, FILENAME, "the step pages' exercises", PAGE_KEYS)


def _value(value, texts, decimal: str, group: str) -> str:
    if isinstance(value, (list, tuple)):
        return texts["list_sep"].join(_value(v, texts, decimal, group) for v in value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"{int(value):,}".replace(",", group) if abs(int(value)) >= 10000 else str(int(value))
    if isinstance(value, (float, np.floating)):
        return format_value(value, decimal)
    return str(value)


def _sentence(texts, key: str, fields: dict, decimal: str, group: str) -> str:
    template = texts.get(key)
    if not isinstance(template, str):
        raise DocsBuildError(f"{texts['_path']} lacks {key}; add the sentence")
    names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    unknown = sorted(names - set(fields))
    if unknown:
        raise DocsBuildError(f"{texts['_path']}: {key} uses {', '.join(unknown)}, which the "
                             f"exercise does not give (it gives {', '.join(sorted(fields))})")
    return template.format(**{k: _value(v, texts, decimal, group) for k, v in fields.items()})


def exercise_html(exercise: Exercise, n: int, texts, decimal: str, group: str) -> str:
    fields = {**exercise.fields, "answer": exercise.answer}
    question = _sentence(texts, f"{exercise.kind}.q", fields, decimal, group)
    answer = _sentence(texts, f"{exercise.kind}.a", fields, decimal, group)
    number = texts["number"].format(n=n)
    return (f'<div class="gl-exercise" data-kind="{escape(exercise.kind)}" '
            f'data-answer="{float(exercise.answer)!r}"><p><strong>{escape(number)}</strong> '
            f'{escape(question)}</p><details><summary>{escape(texts["answer"])}</summary>'
            f'<p>{escape(answer)}</p></details></div>')


def exercises_html(exercises: list[Exercise], texts, decimal: str, group: str,
                   first: int = 1) -> str:
    """One section's exercises, numbered from ``first``."""
    step = escape(exercises[0].step_id) if exercises else ""
    section = escape(exercises[0].section) if exercises else ""
    items = "".join(exercise_html(e, first + k, texts, decimal, group) for k, e in enumerate(exercises))
    return (f'<div class="gl-exercises" data-step="{step}" data-section="{section}">'
            f'<p class="gl-note">{escape(texts["intro"])}</p>{items}</div>')


def exercise_section(step_id: str, run, study, texts, ui, put) -> list[str]:
    """The Markdown lines of a step page's exercises: per section of ``data.exercises
    .SECTIONS`` with exercises for this step, its heading (``title`` for the forward pass,
    ``<section>_title`` for the others) and its block (through ``put``, the page's stash)."""
    found = exercises(step_id, run, study)
    lines, n = [], 1
    for section in dict.fromkeys(e.section for e in found):
        mine = [e for e in found if e.section == section]
        title = texts["title" if section == "forward" else f"{section}_title"]
        lines += [f"## {md_escape(title)}", "", put(exercises_html(mine, texts, ui["number.decimal"],
                                                                  ui["number.group"], n)), ""]
        n += len(mine)
    return lines
