"""The steps the site documents, in execution order: ``STEPS`` as the engine's child checked
them against the markers and the packaged index, with each step's facts
(``glassllm.steps.step_table``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..engine.schema import Step


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
