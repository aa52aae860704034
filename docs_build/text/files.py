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


def load_sentences(docs_dir: Path, lang_code: str, filename: str, needed_by: str,
                   keys: tuple[str, ...] = ()) -> dict[str, str]:
    """``docs/_texts/<lang>/<filename>``: a flat mapping of keys to sentences (strings).

    ``needed_by`` says in the error which pages need the file; ``keys`` must all be there.
    The file's path is kept under ``"_path"`` for later messages about one sentence.
    """
    path = Path(docs_dir) / TEXTS_DIRNAME / lang_code / filename
    try:
        texts = yaml.safe_load(read_text(path))
    except FileNotFoundError:
        raise TextError(f"{path} is missing: {needed_by} need their words in every "
                        f"language") from None
    except yaml.YAMLError as error:
        raise TextError(f"{path}{yaml_problem(error)}") from None
    if not isinstance(texts, dict) or not all(isinstance(v, str) for v in texts.values()):
        raise TextError(f"{path} must map keys to sentences (strings)")
    missing = [key for key in keys if key not in texts]
    if missing:
        raise TextError(f"{path} lacks {', '.join(missing)}; add them")
    texts["_path"] = str(path)
    return texts
