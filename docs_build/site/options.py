"""The glassllm plugin's options (``plugins: - glassllm:`` in mkdocs.yml), declared once: the
MkDocs host validates them from this table (``host/config.py``), and ``generate``, which runs
no host, with ``read_options``."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..engine.runner import DEFAULT_TIMEOUT, SERVE_TIMEOUT
from ..errors import DocsBuildError
from . import git


@dataclass(frozen=True)
class Option:
    types: tuple[type, ...]
    default: object = None  # None: the option is optional and has no default
    count: bool = False  # a whole number of at least 1
    minimum: int | None = None  # an integer option's least value
    maximum: int | None = None  # ... and its greatest
    positive: bool = False  # a number option: finite and above 0
    check: Callable | None = None  # a text option's own check: value -> value or ValueError


def _text(default=None) -> Option:
    return Option((str,), default)


def _number(default=None, minimum: int | None = None, maximum: int | None = None) -> Option:
    return Option((int,), default, minimum=minimum, maximum=maximum)


def _count(default: int) -> Option:
    return Option((int,), default, count=True)


# plugins.glassllm.example: the model and inputs of the run the pages show
EXAMPLE: dict[str, Option] = {
    # "demo", "random" or a checkpoint folder relative to mkdocs.yml (engine/model_source.py)
    "model": _text("demo"),
    # sizes of `model: random` only (default 32, 2, 4, 2, 64); a checkpoint has its own
    "d_model": _number(minimum=1), "n_layers": _number(minimum=1), "n_heads": _number(minimum=1),
    "n_kv_heads": _number(minimum=1), "max_len": _number(minimum=1),
    # random weights (and the untrained model beside a checkpoint): NumPy's default_rng takes
    # no negative seed
    "seed": _number(0, minimum=0),
    "prompt": _text("The cat sat"),
    "tokens": _number(4, minimum=1),
    "traced_step": _number(0, minimum=0),  # below tokens, checked with it (engine/settings.py)
    "greedy": Option((bool,), False),
    "temperature": Option((int, float), 1.0, positive=True),
    "top_k": _number(minimum=1),  # at most the vocabulary: the engine's child checks it
    "sampling_seed": _number(0, minimum=0),
    "loss_text": _text("The cat sat."),
}

# plugins.glassllm (besides example)
PLUGIN: dict[str, Option] = {
    "package_dir": _text("glassllm"),  # the engine, relative to mkdocs.yml
    "katex_dir": _text("node_modules/katex"),  # where `npm ci` puts KaTeX
    # The repository page of one line; placeholders {repo_url}, {ref}, {path}, {line}.
    # Default: {repo_url}/blob/{ref}/{path}#L{line} (GitHub's form). Used only with repo_url.
    "source_url_template": Option((str,), check=git.check_url_template),
    "source_ref": _text(),  # default: the full commit hash of HEAD
    "table_rows": _count(12),  # rows and columns a value table shows at most
    "table_cols": _count(12),
    # seconds the engine's child process may take in a build (engine/runner.py)
    "example_timeout": _count(DEFAULT_TIMEOUT),
    # ... and under `mkdocs serve`, where every page waits for the rebuild: after it, the
    # pages show the last good build and say why
    "serve_timeout": _count(SERVE_TIMEOUT),
}


def check_count(value) -> int:
    """A count option's value, or ``ValueError`` saying what it must be."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"must be a whole number of at least 1, got {value!r}")
    return value


def check_value(spec: Option, value):
    """``value`` (not None) as ``spec`` allows it, or ``ValueError`` saying what it must be.
    YAML's true and false are no numbers here, though Python counts bool as int."""
    expected = "a number" if float in spec.types else " or ".join(
        _TYPE_NAMES.get(t, t.__name__) for t in spec.types)
    if isinstance(value, bool) and bool not in spec.types:
        raise ValueError(f"must be {expected}, got {value!r} (true and false are no numbers)")
    if not isinstance(value, spec.types):
        raise ValueError(f"must be {expected}, got {value!r}")
    if spec.count:
        return check_count(value)
    if spec.check is not None:
        return spec.check(value)
    if spec.positive and not 0 < value < math.inf:
        raise ValueError(f"must be a positive finite number, got {value!r}")
    low, high = spec.minimum, spec.maximum
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            wanted = "a non-negative integer" if low == 0 else f"an integer of at least {low}"
        else:
            wanted = f"an integer in [{low}, {high}]"
        raise ValueError(f"must be {wanted}, got {value!r}")
    return value


_TYPE_NAMES = {int: "an integer", str: "a text", bool: "true or false"}


class Options:
    """Validated options with attribute access: ``options.table_rows``, ``options.example``
    (a dict of the example's options)."""

    def __init__(self, values: dict) -> None:
        self.__dict__.update(values)


def read_options(raw: dict | None, where: str = "plugins.glassllm") -> Options:
    """``raw`` (the plugin's entry in mkdocs.yml) checked against ``PLUGIN`` and ``EXAMPLE``,
    with the defaults filled in. Raises ``DocsBuildError`` naming the option."""
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise DocsBuildError(f"{where} in mkdocs.yml must be a mapping of options")
    values = _read(raw, PLUGIN, where, nested={"example"})
    example = raw.get("example") or {}
    if not isinstance(example, dict):
        raise DocsBuildError(f"{where}.example in mkdocs.yml must be a mapping of options")
    values["example"] = _read(example, EXAMPLE, f"{where}.example")
    return Options(values)


def _read(raw: dict, table: dict[str, Option], where: str, nested=()) -> dict:
    unknown = sorted(set(raw) - set(table) - set(nested))
    if unknown:
        raise DocsBuildError(f"{where} in mkdocs.yml has no option {', '.join(unknown)}; "
                             f"the options are {', '.join(sorted(set(table) | set(nested)))}")
    out = {}
    for name, option in table.items():
        value = raw.get(name, option.default)
        if value is None:
            out[name] = None
            continue
        try:
            out[name] = check_value(option, value)
        except ValueError as error:
            raise DocsBuildError(f"{where}.{name} in mkdocs.yml {error}") from None
    return out
