"""glassllm's imports go one way: from the entry points down to the leaves, never back and
never in a circle. Every import counts, at the top of a module, inside a function or under
TYPE_CHECKING, read from the source with ``ast`` (issue 16)."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "glassllm"

# Bottom to top; a module imports only modules of its own layer or of the layers below. The
# folders are layers too: each subpackage holds one layer or a run of adjacent ones
# (test_each_folder_is_a_layer_or_a_band_of_them), glassllm/ itself the model and the entry points.
LAYERS = [
    # leaves: nothing of glassllm
    {"glassllm.steps", "glassllm.config", "glassllm._snapshot_pool", "glassllm._heap",
     "glassllm._old_paths", "glassllm.files", "glassllm.files.safe_json",
     "glassllm.files.regular_file", "glassllm.files._folder_swap", "glassllm.text",
     "glassllm.text.tokenizer", "glassllm.text.bpe_classes", "glassllm.interpret",
     "glassllm.learning"},
    # watching a run, the backward catalog; reading a weights file, a checkpoint's tokenizer
    {"glassllm.trace", "glassllm.backward", "glassllm.files.safetensors_reader",
     "glassllm.text.hf_tokenizer", "glassllm.text.bpe"},
    # changing a run at its marked steps (it reads a StepRecord as a patch's source);
    # checkpoints as (config, state)
    {"glassllm.edits", "glassllm.files.checkpoint"},
    # the block's functions
    {"glassllm.nn"},
    {"glassllm.model"},
    # what runs a model: its probes and circuits, its recordings
    {"glassllm.interpret.probes", "glassllm.interpret.circuits",
     "glassllm.interpret.recording.events", "glassllm.interpret.recording.arrays",
     "glassllm.interpret.recording.document", "glassllm.interpret.recording.json_v1",
     "glassllm.interpret.recording.binary_v2", "glassllm.interpret.recording.files",
     "glassllm.interpret.recording.size", "glassllm.interpret.recording.capture",
     "glassllm.interpret.recording"},
    # learning: the update rule, then training from text files
    {"glassllm.learning.optim", "glassllm.learning.batches", "glassllm.learning.train"},
    # lessons: a model trained while the reader watches, checked by its circuits
    {"glassllm.learning.lessons"},
    # the entry points
    {"glassllm", "glassllm.__main__"},
]
# glassllm's folders; an __init__.py that imports nothing sits with the leaves, being one
SUBPACKAGES = {"glassllm.files", "glassllm.text", "glassllm.interpret",
               "glassllm.interpret.recording", "glassllm.learning"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str) -> set[str]:
    """The glassllm modules ``name`` imports anywhere in its source."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from . import safe_json` names a module; `from .trace import Tracer` a name
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES
                       else module for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # glassllm.recording.files.os -> ...files
                target = target.rpartition(".")[0]
            if target.split(".")[0] == "glassllm" and target != name:
                found.add(target)
    return found


GRAPH = {name: imported(name) for name in MODULES}


def test_every_module_has_its_layer():
    layered = set().union(*LAYERS)
    assert set(MODULES) - layered == set(), "place the new module in LAYERS"
    assert layered - set(MODULES) == set(), "a module in LAYERS no longer exists"


def test_imports_never_go_up_a_layer():
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    upward = sorted(f"{name} imports {target}" for name, targets in GRAPH.items()
                    for target in targets if rank[target] > rank[name])
    assert upward == []


def test_there_is_no_import_cycle():
    try:
        order = list(TopologicalSorter(GRAPH).static_order())
    except CycleError as error:
        raise AssertionError(f"import cycle: {' -> '.join(error.args[1])}") from None
    assert set(order) == set(MODULES)


def test_the_leaves_import_nothing_of_glassllm():
    assert {name: sorted(GRAPH[name]) for name in LAYERS[0] if GRAPH[name]} == {}


def test_checkpoint_never_imports_the_model():
    seen, todo = set(), ["glassllm.files.checkpoint"]
    while todo:  # everything checkpoint reaches, directly or not
        for target in GRAPH[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    assert "glassllm.model" not in seen and "glassllm.nn" not in seen


def test_each_folder_is_a_layer_or_a_band_of_them():
    """The modules of a subpackage (an ``__init__.py`` that imports nothing aside) fill one
    layer or adjacent layers: a folder is a layer you can see, never scattered between others."""
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    found = {name for name, path in MODULES.items() if path.name == "__init__.py"} - {"glassllm"}
    assert found == SUBPACKAGES, "name the new folder in SUBPACKAGES"
    scattered = {}
    for package in SUBPACKAGES:
        ranks = {rank[name] for name in MODULES if name.startswith(package + ".")}
        if GRAPH[package]:  # an __init__.py that gathers its modules' names counts as one
            ranks.add(rank[package])
        if ranks != set(range(min(ranks), max(ranks) + 1)):
            scattered[package] = sorted(ranks)
    assert scattered == {}


def test_no_module_imports_a_path_from_before_the_layers():
    """Inside glassllm an import names where a module is (``..learning.optim``); the old paths
    (glassllm/_old_paths.py) are for the package's users."""
    import sys
    sys.path.insert(0, str(PACKAGE.parent))
    try:
        from glassllm._old_paths import MOVED
    finally:
        sys.path.remove(str(PACKAGE.parent))
    old = {name.rpartition(".")[2] for name in MOVED}
    found = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
                names = [f"{module}.{alias.name}" for alias in node.names] + [module]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""])
            else:
                continue
            found += [f"{name}: {target}" for target in names
                      if target.startswith("glassllm.") and target not in MODULES
                      and target.split(".")[1] in old]
    assert found == []
