"""docs_build is built in layers, and its imports only go down them: a module imports its own
layer or the ones below, never one above, and no import (inside a function too) closes a
cycle. The engine's child imports nothing of docs_build but the schema it shares."""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import ROOT

PACKAGE = ROOT / "docs_build"
# bottom to top; a module's layer is its first path part (a subpackage or a top module)
LAYERS = (
    ("__init__", "errors", "text"),  # error types, text helpers
    ("engine",),  # the child process, its runner, its cache, its settings, the schema
    ("data",),  # the site's data: run, heads, facts, worked numbers, shapes
    ("html",),  # HTML fragments that know no page
    ("pages",),  # the pages, one URL scheme
    ("runtime",),  # the browser runtime's files: the glassllm wheel, Pyodide, NumPy, the lock
    ("site",),  # the orchestration the plugin and generate call, options, generate
    ("host",),  # the MkDocs plugin: events, its config, navigation, serve's fallback
    ("__main__",),  # the command line
)
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path) -> set[str]:
    """The docs_build modules ``path`` imports, anywhere in it (functions included); a
    ``from package import name`` counts the submodule ``name`` when there is one."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "docs_build"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "docs_build":
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in MODULES else target)
    found.discard(module)
    return found


# assets/ holds files the site ships, not modules of the build (assets/runtime/bridge.py runs
# in the reader's browser and imports only glassllm)
MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))
           if path.relative_to(PACKAGE).parts[0] != "assets"}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def test_every_module_has_a_layer():
    assert {layer_of(name) for name in MODULES} <= set(RANK), (
        "a new top-level module or subpackage of docs_build needs its place in LAYERS")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{name} imports {target}" for name, targets in sorted(graph.items())
            for target in sorted(targets) if RANK[layer_of(target)] > RANK[layer_of(name)]]


def cycles_in(graph: dict[str, set[str]]) -> list[str]:
    cycles, state = [], {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph.get(name, ())):
            if state.get(target) == "open":
                cycles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in state:
                visit(target, trail + [target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return cycles


def test_every_import_goes_down_or_stays_in_its_layer():
    assert upward_imports(GRAPH) == []


def test_no_import_cycles():
    assert cycles_in(GRAPH) == []


def test_the_child_imports_only_the_schema_of_docs_build():
    # and engine/limits.py, its measurements of where copying holds; neither imports more,
    # and both are in the sources the engine cache's key hashes
    from docs_build.engine import runner

    # and engine/training_step.py, the example's training step (it imports the schema)
    assert GRAPH["docs_build.engine.child"] == {"docs_build.engine.schema",
                                                "docs_build.engine.limits",
                                                "docs_build.engine.training_step"}
    assert GRAPH["docs_build.engine.schema"] == set()
    assert GRAPH["docs_build.engine.limits"] == set()
    assert GRAPH["docs_build.engine.training_step"] == {"docs_build.engine.schema"}
    hashed = {p.name for p in runner.CHILD_SOURCES}
    assert {"child.py", "schema.py", "limits.py", "training_step.py"} <= hashed


def test_only_the_host_imports_a_docs_host():
    hosts = ("mkdocs", "properdocs", "material")
    importers = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            if any(n.split(".")[0] in hosts for n in names):
                importers.add(layer_of(name))
    assert importers == {"host"}


def test_the_checks_catch_an_upward_import_and_a_cycle():
    """The graph is the real one, and the checks catch what they are for on a copy of it with
    one upward edge added, which also closes a cycle (``ast.walk`` reads imports inside
    functions as well as at the top)."""
    assert "docs_build.text.languages" in GRAPH["docs_build.pages.urls"]
    broken = {name: set(targets) for name, targets in GRAPH.items()}
    broken["docs_build.text.languages"].add("docs_build.pages.urls")
    assert upward_imports(broken) == ["docs_build.text.languages imports docs_build.pages.urls"]
    assert [c for c in cycles_in(broken) if "docs_build.pages.urls" in c
            and "docs_build.text.languages" in c]
