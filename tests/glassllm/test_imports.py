"""glassllm's imports go one way: from the entry points down to the leaves, never back and
never in a circle. Every import counts, at the top of a module, inside a function or under
TYPE_CHECKING, read from the source with ``ast`` (issue 16)."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "glassllm"

# Bottom to top; a module imports only modules of its own layer or of the layers below.
LAYERS = [
    # leaves: nothing of glassllm
    {"glassllm.steps", "glassllm.tokenizer", "glassllm.config", "glassllm.safe_json",
     "glassllm.regular_file", "glassllm._folder_swap", "glassllm._snapshot_pool", "glassllm._heap",
     "glassllm.bpe_classes"},
    # watching a run; reading a weights file, a checkpoint's tokenizer; the backward catalog
    {"glassllm.trace", "glassllm.safetensors_reader", "glassllm.hf_tokenizer", "glassllm.bpe",
     "glassllm.backward"},
    # changing a run at its marked steps (it reads a StepRecord as a patch's source)
    {"glassllm.edits"},
    # the block's functions; checkpoints as (config, state)
    {"glassllm.nn", "glassllm.checkpoint"},
    {"glassllm.model"},
    # what runs a model: its probes and circuits, its recordings
    {"glassllm.probes", "glassllm.circuits", "glassllm.recording.events", "glassllm.recording.arrays",
     "glassllm.recording.document", "glassllm.recording.json_v1",
     "glassllm.recording.binary_v2", "glassllm.recording.files", "glassllm.recording.size",
     "glassllm.recording.capture", "glassllm.recording"},
    # learning: the update rule, then training from text files
    {"glassllm.optim", "glassllm.batches", "glassllm.train"},
    # lessons: a model trained while the reader watches, checked by its circuits
    {"glassllm.lessons"},
    # the entry points
    {"glassllm", "glassllm.__main__"},
]


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
    seen, todo = set(), ["glassllm.checkpoint"]
    while todo:  # everything checkpoint reaches, directly or not
        for target in GRAPH[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    assert "glassllm.model" not in seen and "glassllm.nn" not in seen
