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


def unreferenced_definitions(modules: dict[str, str], elsewhere: str) -> list[str]:
    """The top-level functions and classes of ``modules`` (name -> source) that nothing names
    but their own definition: not the modules themselves, not ``elsewhere``."""
    everything = "\n".join(modules.values()) + "\n" + elsewhere
    found = []
    for module, text in modules.items():
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if len(re.findall(rf"\b{re.escape(node.name)}\b", everything)) <= 1:
                    found.append(f"{module}:{node.lineno}: {node.name}")
    return found


def test_the_dead_code_check_catches_a_function_nothing_calls():
    modules = {"a.py": "def used():\n    pass\n\ndef dead():\n    pass\n", "b.py": "used()\n"}
    assert unreferenced_definitions(modules, "") == ["a.py:4: dead"]


def test_docs_build_defines_nothing_only_tests_or_nobody_use():
    """docs_build is no library: a function or class of it that its own modules, its
    browser files, the templates, the scripts and the packaging never name is dead or lives for
    the tests alone, and goes (the tests keep their own helpers)."""
    package = ROOT / "docs_build"
    modules = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
               for path in sorted(package.rglob("*.py"))}
    elsewhere = "\n".join(path.read_text(encoding="utf-8") for path in sorted(
        [*package.rglob("*.js"), *package.rglob("*.mjs"), *(ROOT / "overrides").rglob("*.html"),
         *(ROOT / "scripts").rglob("*.py"), ROOT / "pyproject.toml", ROOT / "mkdocs.yml",
         ROOT / "properdocs.yml"]))
    assert unreferenced_definitions(modules, elsewhere) == []
