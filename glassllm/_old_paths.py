"""The module paths glassllm had before its modules went into layers (issue 27), kept: each
names the same module object as its new path, ``glassllm.optim is glassllm.learning.optim``.

``glassllm/`` holds the model itself (config, steps, trace, backward, edits, nn, model) and the
entry points; the rest lives in folders named by what they are for: ``files`` (reading and
writing checkpoints, safely), ``text`` (tokenizers), ``interpret`` (probes, circuits, recordings
of a run) and ``learning`` (the optimiser, training, the lessons). The old paths are the
documented ones (``glassllm.optim.AdamW``, ``python -m glassllm train``), so they stay.

``install()`` puts a finder first on ``sys.meta_path``: asked for an old path (or a module
inside an old package path, ``glassllm.recording.events``), it imports the new one and hands
the import system that very module, which keeps its own ``__name__``, ``__spec__`` and
``__file__``. One file, one module object: a class keeps one identity, ``isinstance`` and
patching work through either path, and pickles name the class where it is defined. The finder
imports nothing until an old path is asked for, so ``import glassllm`` costs no more.
"""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import ModuleSpec

# old path -> new path; a package's modules follow it (glassllm.recording.files)
MOVED = {
    "glassllm._folder_swap": "glassllm.files._folder_swap",
    "glassllm.checkpoint": "glassllm.files.checkpoint",
    "glassllm.regular_file": "glassllm.files.regular_file",
    "glassllm.safe_json": "glassllm.files.safe_json",
    "glassllm.safetensors_reader": "glassllm.files.safetensors_reader",
    "glassllm.bpe": "glassllm.text.bpe",
    "glassllm.bpe_classes": "glassllm.text.bpe_classes",
    "glassllm.hf_tokenizer": "glassllm.text.hf_tokenizer",
    "glassllm.tokenizer": "glassllm.text.tokenizer",
    "glassllm.circuits": "glassllm.interpret.circuits",
    "glassllm.probes": "glassllm.interpret.probes",
    "glassllm.recording": "glassllm.interpret.recording",
    "glassllm.batches": "glassllm.learning.batches",
    "glassllm.lessons": "glassllm.learning.lessons",
    "glassllm.optim": "glassllm.learning.optim",
    "glassllm.train": "glassllm.learning.train",
}


def new_path(name: str) -> str | None:
    """The module an old path names now (``glassllm.recording.events`` ->
    ``glassllm.interpret.recording.events``), or None for a path that did not move."""
    old = name
    while old.count(".") >= 1:
        if old in MOVED:
            return MOVED[old] + name[len(old):]
        old = old.rpartition(".")[0]
    return None


class OldPathFinder:
    """Finder and loader of the old paths: the module it loads is the new path's, already
    executed, so nothing runs twice."""

    def find_spec(self, name, path=None, target=None):
        return None if new_path(name) is None else ModuleSpec(name, self)

    def create_module(self, spec):
        # the import system keeps this module's own __name__, __file__ and __path__ (it sets
        # only those a module lacks) and files it under the old path too; its __spec__ it
        # replaces with the old path's, which exec_module puts back
        module = importlib.import_module(new_path(spec.name))
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module) -> None:
        """Nothing to run, the new path's import ran the module: only its own spec goes back
        (relative imports and ``importlib.reload`` read it)."""
        module.__spec__ = module.__spec__.loader_state


FINDER = OldPathFinder()


def install() -> None:
    """First on ``sys.meta_path``, before the path finder that would otherwise find a moved
    package's modules a second time through its ``__path__`` (``glassllm.recording.files``)."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, FINDER)


def moved_attribute(name: str):
    """``glassllm.optim`` read as an attribute of the package, before anything imported it."""
    if f"glassllm.{name}" not in MOVED:
        raise AttributeError(f"module 'glassllm' has no attribute {name!r}")
    return importlib.import_module(f"glassllm.{name}")
