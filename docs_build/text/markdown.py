"""Plain text made safe for Markdown, code spans, relative page links and UI sentences."""

from __future__ import annotations

import posixpath
import re

import numpy as np

from .numbers import format_value

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#+!|$.-])")


def md_escape(text: str) -> str:
    """Plain text safe inside Markdown: no emphasis, links, math or raw HTML from it."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_code(text: str) -> str:
    """A Markdown code span holding ``text`` verbatim, whatever backticks it contains."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_rel(from_uri: str, to_uri: str) -> str:
    """A Markdown link target from one source page to another (the host rewrites it)."""
    return posixpath.relpath(to_uri, posixpath.dirname(from_uri) or ".")


def number(ui: dict[str, str], value) -> str:
    """A number as the language of ``ui`` writes it: ``format_value``'s digits with the
    language's decimal mark (``number.decimal`` in its ui.yml)."""
    return format_value(value, ui["number.decimal"])


def grouped(ui: dict[str, str], count: int) -> str:
    """A whole number of thousands or more with the language's group separator
    (``number.group``): 434,816 in English, 434 816 in Portuguese."""
    return f"{int(count):,}".replace(",", ui["number.group"])


def fmt(ui: dict[str, str], key: str, /, **fields) -> str:
    """The UI sentence ``key`` with its placeholders filled (``text.ui`` checked them); a
    float field is written with ``number``, in the sentence's language."""
    return ui[key].format(**{name: number(ui, value) if isinstance(value, (float, np.floating))
                             else value for name, value in fields.items()})
