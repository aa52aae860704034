"""The docs host the site tests build with: MkDocs 1.6 (the default) or ProperDocs, its
maintained 1.x fork, chosen for a whole test session by ``GLASSLLM_DOCS_HOST``.

    GLASSLLM_DOCS_HOST=properdocs python -m pytest tests/docs_build tests/replay

ProperDocs answers ``import mkdocs.x`` with its own ``properdocs.x`` once
``properdocs.replacement`` is imported (its command does that first), so our plugin and
Material, which import ``mkdocs.*``, run on it unchanged. ``activate()`` does the same for the
builds a test runs in its own process; it must run before anything imports ``mkdocs``.
"""

from __future__ import annotations

import importlib
import os
import sys

# Material for MkDocs prints a notice of its end of life whenever `mkdocs` runs unless this is
# set: the builds the tests run (in this process or as commands) leave it out of their output
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")

HOSTS = ("mkdocs", "properdocs")
HOST = os.environ.get("GLASSLLM_DOCS_HOST", "mkdocs")
if HOST not in HOSTS:
    raise RuntimeError(f"GLASSLLM_DOCS_HOST is {HOST!r}; use one of {', '.join(HOSTS)}")

# Python source that a child process runs first to build with the same host; the host's
# messages go to the logger HOST_LOGGER (its plugins' loggers are children of it).
SCRIPT_PREAMBLE = (("import properdocs.replacement\n" if HOST == "properdocs" else "")
                   + f"HOST_LOGGER = {HOST!r}\n")


def activate() -> None:
    if HOST == "properdocs":
        importlib.import_module("properdocs.replacement")


def cli(*args: str) -> list[str]:
    """The host's command line, e.g. ``cli("build", "--strict")``, run by this Python."""
    return [sys.executable, "-m", HOST, *args]


def build_functions():
    """The host's ``build`` and ``load_config``, as ``mkdocs build`` calls them."""
    activate()
    build = importlib.import_module(f"{HOST}.commands.build").build
    load_config = importlib.import_module(f"{HOST}.config").load_config
    return build, load_config
