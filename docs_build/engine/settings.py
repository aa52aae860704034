"""The example run's settings: ``plugins.glassllm.example`` of mkdocs.yml, checked, with the
model's sizes resolved (from the checkpoint, if any) without importing the engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import DocsBuildError
from . import model_source

SETTINGS_HINT = "the example settings under plugins.glassllm.example in mkdocs.yml"


@dataclass(frozen=True)
class ExampleSettings:
    """The example as the run uses it: sizes resolved (from the checkpoint, if any).

    ``ExampleSettings()`` is the random model; the plugin builds its settings from mkdocs.yml
    with ``settings_from_options`` (whose default is the demo checkpoint).
    """

    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    max_len: int = 64
    seed: int = 0  # model weights
    prompt: str = "The cat sat"
    tokens: int = 4  # tokens to generate
    traced_step: int = 0  # which generation step the forward snapshots come from
    greedy: bool = False
    temperature: float = 1.0
    top_k: int | None = None
    sampling_seed: int = 0
    loss_text: str = "The cat sat."  # the loss predicts each next token of this text
    model: str = model_source.RANDOM  # as mkdocs.yml gives it: "demo", "random" or a path
    checkpoint: str | None = None  # the checkpoint folder (absolute); None for random weights
    checkpoint_hash: str | None = None  # of the checkpoint's files: part of the cache key

    def check(self) -> None:
        """Reject settings the run cannot use, naming the option to change."""
        if not self.prompt:
            raise DocsBuildError(f"example.prompt is empty; give a few words in {SETTINGS_HINT}")
        if self.tokens < 1:
            raise DocsBuildError(f"example.tokens must be at least 1 (got {self.tokens}): the "
                                 f"probs and sample steps need a generated token")
        if not 0 <= self.traced_step < self.tokens:
            raise DocsBuildError(f"example.traced_step must be in [0, {self.tokens - 1}] "
                                 f"(one of the {self.tokens} generated tokens), got {self.traced_step}")
        if self.sampling_seed < 0:
            raise DocsBuildError(f"example.sampling_seed must be a non-negative integer (got "
                                 f"{self.sampling_seed}); change it in {SETTINGS_HINT}")
        if self.top_k is not None and self.top_k < 1:
            raise DocsBuildError(f"example.top_k must be at least 1 (got {self.top_k}) or left "
                                 f"out; change it in {SETTINGS_HINT}")
        # the prompt's and the loss text's lengths, and top_k against the vocabulary, are
        # counted in the model's own tokens: the engine's child checks them
        # (engine/child.py: check_lengths), since this module never imports glassllm


def settings_from_options(options: dict, root: Path,
                          package_dir: Path | None = None) -> ExampleSettings:
    """``ExampleSettings`` from ``plugins.glassllm.example`` of mkdocs.yml (``root`` is its
    folder, ``package_dir`` the engine's, by default ``root/glassllm``): resolves ``model``
    and takes the sizes from the checkpoint, if any, without importing the engine.

    Raises ``DocsBuildError`` for a bad ``model`` or size options set beside a checkpoint.
    """
    options = dict(options)
    model = options.pop("model", model_source.DEMO)
    package_dir = Path(package_dir) if package_dir is not None else Path(root) / "glassllm"
    folder = model_source.checkpoint_folder(model, Path(root), package_dir)
    options.update(model_source.resolve_sizes(model, folder, options))
    options["temperature"] = float(options.get("temperature", 1.0))
    return ExampleSettings(**options, model=model,
                           checkpoint=None if folder is None else str(folder),
                           checkpoint_hash=None if folder is None else model_source.folder_hash(folder))
