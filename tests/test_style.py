"""Two rules of the developer guide that a reader of any file meets (issue 16): a module is
imported under a name that says what it is, never a single letter (``as F``, ``as W``, ``as c``),
and a comment cites only what the repository holds (there is no SPEC file in it)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("glassllm", "docs_build", "scripts", "tests")


def sources(*suffixes: str) -> list[Path]:
    return sorted(path for folder in FOLDERS for suffix in suffixes
                  for path in (ROOT / folder).rglob(f"*{suffix}")
                  if "node_modules" not in path.parts)


def single_letter_aliases(text: str) -> list[str]:
    """Each ``import … as X`` / ``from … import … as X`` of ``text`` whose alias is one letter."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [f"{node.lineno}: {alias.name} as {alias.asname}" for alias in node.names
                      if alias.asname and len(alias.asname) == 1]
    return found


JS_ALIAS = re.compile(r"^\s*import\s+(?:\*\s+as\s+([A-Za-z_$])|([A-Za-z_$]))\s+from\b", re.M)
SPEC_CITATION = re.compile(r"\bSPEC\b")


def test_the_checks_catch_what_they_are_for():
    assert single_letter_aliases("from mkdocs.config import config_options as c\n"
                                 "def f():\n    import numpy as N\n") == [
        "1: config_options as c", "3: numpy as N"]
    assert single_letter_aliases("import numpy as np\nfrom . import wheel\n") == []
    assert JS_ALIAS.search('import * as V from "./values.js";')
    assert not JS_ALIAS.search('import * as values from "./values.js";')
    assert SPEC_CITATION.search("# the two kinds of run (SPEC 4)")
    assert not SPEC_CITATION.search("CODE_SPECIALS = ()")


def test_no_module_is_imported_under_a_single_letter():
    found = [f"{path.relative_to(ROOT)}:{hit}" for path in sources(".py")
             for hit in single_letter_aliases(path.read_text(encoding="utf-8"))]
    found += [f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
              for path in sources(".js", ".mjs")
              for match in JS_ALIAS.finditer(path.read_text(encoding="utf-8"))]
    assert found == []


def test_no_comment_cites_a_spec_file_the_repository_does_not_have():
    assert not list(ROOT.glob("SPEC*")) and not list((ROOT / "docs").glob("SPEC*"))
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sources(".py", ".js", ".mjs") if path != Path(__file__).resolve()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if SPEC_CITATION.search(line)]
    assert found == []
