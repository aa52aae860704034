"""Reading the site's hand-written text files: UTF-8 with or without a BOM, YAML errors in
one line."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import TextError

TEXTS_DIRNAME = "_texts"  # docs/_texts/<lang>/: the texts of the generated pages


def read_text(path: Path) -> str:
    """A text file as UTF-8, with or without the byte order mark some editors write."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise TextError(f"{path}: not UTF-8 text (byte {error.start}); save it as UTF-8") from error


def yaml_problem(error: yaml.YAMLError, first_line: int = 1) -> str:
    """``:<line>: not valid YAML (<problem>)`` in one line, the line counted in the file.

    ``first_line`` is the file's line where the YAML began (2 for a front matter block).
    """
    mark = getattr(error, "problem_mark", None)
    where = f":{mark.line + first_line}" if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{where}: not valid YAML ({problem})"
