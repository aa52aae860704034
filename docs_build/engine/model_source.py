"""Which weights the example runs on: ``example.model`` of mkdocs.yml.

``model: demo`` (the default) is the trained checkpoint shipped in the package
(``glassllm.DEMO_CHECKPOINT``), ``model: random`` the deterministic random weights of
``Config(seed=...)`` with the size options, and any other value a checkpoint folder in Hugging
Face's layout (``config.json`` + ``model.safetensors``), relative to mkdocs.yml.

With a checkpoint the model's sizes are the checkpoint's: the size options
(``SIZE_OPTIONS``) are refused rather than silently ignored, so a reader of mkdocs.yml never
sees sizes that are not the ones the site shows.

Resolving ``model`` never imports the engine (the plugin does it in ``on_config``, where a
broken engine must not stop ``mkdocs serve``): the sizes are read from ``config.json``, and
``GlassLM.from_pretrained`` checks the whole checkpoint when the example runs (in the child,
``docs_build/engine/child.py``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import DocsBuildError

DEMO, RANDOM = "demo", "random"
DEMO_FOLDER = ("checkpoints", "demo")  # inside the engine package: glassllm.DEMO_CHECKPOINT
SIZE_OPTIONS = ("d_model", "n_layers", "n_heads", "n_kv_heads", "max_len")
# where config.json (a LlamaForCausalLM config) holds each size option
HF_SIZE_KEYS = {"d_model": "hidden_size", "n_layers": "num_hidden_layers",
                "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
                "max_len": "max_position_embeddings"}
# the sizes of `model: random` when mkdocs.yml leaves them out (small, readable tables)
RANDOM_SIZES = {"d_model": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "max_len": 64}
HELDOUT_FILE = "heldout.txt"  # held-out text beside a checkpoint's weights
CARD_FILE = "report.json"  # the checkpoint's measured report: the model card's figures
MODEL_HINT = ("example.model in mkdocs.yml must be 'demo' (the trained checkpoint in the "
              "package), 'random' (random weights for example.seed) or the path of a checkpoint "
              "folder holding config.json and model.safetensors, relative to mkdocs.yml")


def checkpoint_folder(model: str, root: Path, package_dir: Path) -> Path | None:
    """The checkpoint folder ``example.model`` names (``None`` for ``random``); ``demo`` is
    the one in the engine package ``package_dir``.

    Raises ``DocsBuildError`` when the value is empty or the folder is missing.
    """
    if not isinstance(model, str) or not model.strip():
        raise DocsBuildError(f"example.model is empty; {MODEL_HINT}")
    if model == RANDOM:
        return None
    if model == DEMO:
        folder = Path(package_dir).joinpath(*DEMO_FOLDER)
        if not folder.is_dir():
            raise DocsBuildError(f"the demo checkpoint {folder} is missing from the glassllm "
                                 f"package; reinstall it, or set example.model: random")
        return folder
    folder = (Path(root) / model).resolve()
    if not folder.is_dir():
        raise DocsBuildError(f"example.model is {model!r}, but {folder} is not a folder; "
                             f"{MODEL_HINT}")
    return folder


def folder_hash(folder: Path) -> str:
    """A hash of every file in ``folder`` and its subfolders (relative paths and bytes): the
    checkpoint's weights, config, card, held-out text and training record (its initial weights
    are "before training"), so a changed checkpoint reruns the example."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            name = path.relative_to(folder).as_posix()
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def resolve_sizes(model: str, folder: Path | None, options: dict) -> dict:
    """The five size options the example runs with: from the checkpoint, or from ``options``
    (defaults ``RANDOM_SIZES``) for ``model: random``."""
    given = {name: options.get(name) for name in SIZE_OPTIONS if options.get(name) is not None}
    if folder is None:
        return {**RANDOM_SIZES, **given}
    if given:
        names = ", ".join(f"example.{name}" for name in given)
        raise DocsBuildError(f"{names} cannot be set with example.model: {model}: the sizes come "
                             f"from the checkpoint ({folder / 'config.json'}); remove them, or "
                             f"set example.model: random to choose the sizes of random weights")
    return checkpoint_sizes(folder)


def checkpoint_sizes(folder: Path) -> dict:
    """The size options of a checkpoint, read from its ``config.json``."""
    path = Path(folder) / "config.json"
    try:
        hf = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DocsBuildError(f"example.model: {folder} has no config.json, so it is not a "
                             f"checkpoint; {MODEL_HINT}") from None
    except (OSError, ValueError) as error:
        raise DocsBuildError(f"example.model: {path} is not readable JSON ({error}); fix the "
                             f"checkpoint or {MODEL_HINT}") from error
    sizes = {}
    for name, key in HF_SIZE_KEYS.items():
        value = hf.get(key) if isinstance(hf, dict) else None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DocsBuildError(f"example.model: {path} needs a positive integer {key!r} "
                                 f"(got {value!r}); fix the checkpoint or {MODEL_HINT}")
        sizes[name] = value
    return sizes


def heldout_source(folder: Path | None, package_dir: Path) -> Path | None:
    """The held-out text: the checkpoint's own, else the demo checkpoint's (as the text the
    random model is measured on), else ``None``."""
    candidates = [Path(folder)] if folder is not None else []
    candidates.append(Path(package_dir).joinpath(*DEMO_FOLDER))
    for candidate in candidates:
        if (candidate / HELDOUT_FILE).is_file():
            return candidate / HELDOUT_FILE
    return None


def load_card(folder: Path | None) -> dict | None:
    """The checkpoint's ``report.json`` (``scripts/train_demo.py``'s measurements on
    held-out texts, a JSON object with ``measures``, ``criteria`` and ``training``), or
    ``None`` if it has none."""
    if folder is None or not (Path(folder) / CARD_FILE).is_file():
        return None
    path = Path(folder) / CARD_FILE
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise DocsBuildError(f"{path} is not valid JSON ({error}); fix it or delete it (the "
                             f"model card page then says the model has no report)") from error
    missing = [key for key in ("measures", "criteria", "training")
               if not isinstance(card, dict) or not isinstance(card.get(key), dict)]
    if missing:
        raise DocsBuildError(f"{path} must hold a JSON object with the objects "
                             f"{', '.join(missing)} (the report scripts/train_demo.py "
                             f"writes); rewrite it with that script or delete it")
    return card
