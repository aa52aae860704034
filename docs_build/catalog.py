"""Collect the steps the site documents: ``STEPS`` checked against the markers and the index.

Everything here reads the engine through ``import glassllm`` at call time (never at import
time), so ``mkdocs serve`` can drop the engine's modules after an edit and see the new code.
"""

from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass
from pathlib import Path

INDEX_COMMAND = "python scripts/build_step_index.py"


class DocsBuildError(ValueError):
    """A problem the person building the site must fix; the message says how."""


@dataclass(frozen=True)
class Step:
    id: str
    position: int  # 0-based place in execution order
    latex: str
    plain: str
    file: str  # "glassllm/nn.py"
    line: int  # 1-based line of the `# @step` marker
    is_layer_step: bool
    has_head_axis: bool


@dataclass(frozen=True)
class StepCatalog:
    steps: tuple[Step, ...]
    package_dir: Path
    # with allow_stale: how the index disagrees with the markers (the lines are the markers')
    stale_index: str | None = None

    @property
    def ids(self) -> list[str]:
        return [step.id for step in self.steps]

    def __getitem__(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    def neighbours(self, step_id: str) -> tuple[Step | None, Step | None]:
        """The previous and next step in execution order (None at either end)."""
        position = self[step_id].position
        previous = self.steps[position - 1] if position > 0 else None
        following = self.steps[position + 1] if position + 1 < len(self.steps) else None
        return previous, following


def check_engine_syntax(package_dir: Path) -> None:
    """Compile every engine module, so a syntax error is named by its file and line.

    Also the modules the package does not import: the marker scan reads them all.
    """
    package_dir = Path(package_dir)
    for path in sorted(package_dir.glob("*.py")):
        try:
            compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:  # ValueError: a NUL byte (Python < 3.12)
            line = getattr(error, "lineno", None)
            place = f"{package_dir.name}/{path.name}" + (f":{line}" if line else "")
            message = getattr(error, "msg", None) or str(error)
            raise DocsBuildError(f"{place}: {type(error).__name__}: {message}; fix the engine "
                                 f"module, then build again") from error


def import_engine(package_dir: Path):
    """Import ``glassllm`` and make sure it is the package in ``package_dir``.

    A site built from one checkout with the engine of another would show wrong lines and
    values, so a mismatch is an error that says how to point Python at this checkout.
    """
    check_engine_syntax(package_dir)
    try:
        engine = importlib.import_module("glassllm")
    except ModuleNotFoundError as error:
        if error.name != "glassllm":
            raise _import_failure(error) from error
        raise DocsBuildError(f"cannot import glassllm ({error}); install this checkout with "
                             f"'pip install -e .' from the repository root") from error
    except Exception as error:  # the engine's own code failed while importing
        raise _import_failure(error) from error
    imported = Path(engine.__file__).resolve().parent
    if imported != Path(package_dir).resolve():
        raise DocsBuildError(
            f"the glassllm that Python imports is {imported}, not the engine of this site "
            f"({Path(package_dir).resolve()}); run 'pip install -e .' in this checkout or build "
            f"with 'python -m mkdocs build' from its root")
    return engine


def _import_failure(error: Exception) -> DocsBuildError:
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return DocsBuildError(f"importing glassllm raised {type(error).__name__}: {error} (at "
                          f"{frame.filename}:{frame.lineno}); fix the engine, then build again")


def collect_steps(package_dir: Path, allow_stale: bool = False) -> StepCatalog:
    """Check ``scan_markers()`` against ``load_step_index()`` and ``STEPS``; list the steps.

    Raises ``DocsBuildError`` when a marker names an unknown ID or is repeated, a step has
    no marker, or the packaged index is stale — each with the fix in the message. With
    ``allow_stale`` (``mkdocs serve``) a stale index is not raised but noted in the catalog's
    ``stale_index``, and the steps carry the markers' own lines.
    """
    import_engine(package_dir)
    steps_module = importlib.import_module("glassllm.steps")
    try:
        markers = steps_module.scan_markers(Path(package_dir))
    except ValueError as error:  # unknown ID, repeated ID, marker without ID
        raise DocsBuildError(f"bad '# @step' marker: {error}") from error
    missing = [step_id for step_id in steps_module.STEPS if step_id not in markers]
    if missing:
        raise DocsBuildError(
            f"step(s) {', '.join(missing)} have no '# @step <id>' marker in "
            f"{Path(package_dir).name}/*.py; add the comment on the line of the operation "
            f"that computes each one, then run {INDEX_COMMAND}")
    try:
        index = steps_module.load_step_index()
    except (OSError, ValueError) as error:
        raise DocsBuildError(f"cannot read glassllm/step_index.json ({error}); "
                             f"run {INDEX_COMMAND}") from error
    stale = None
    if index != markers:
        changes = steps_module.describe_index_changes(index, markers)
        stale = ("glassllm/step_index.json is stale (" + "; ".join(changes[:5])
                 + ("; …" if len(changes) > 5 else "")
                 + f"): run {INDEX_COMMAND} and commit the result")
        if not allow_stale:
            raise DocsBuildError(stale)
    layer_steps = set(steps_module.LAYER_STEPS)
    head_steps = set(steps_module.HEAD_STEPS)
    steps = tuple(
        Step(id=step_id, position=position, latex=info.latex, plain=info.plain,
             file=markers[step_id]["file"], line=int(markers[step_id]["line"]),
             is_layer_step=step_id in layer_steps, has_head_axis=step_id in head_steps)
        for position, (step_id, info) in enumerate(steps_module.STEPS.items()))
    return StepCatalog(steps=steps, package_dir=Path(package_dir).resolve(), stale_index=stale)
