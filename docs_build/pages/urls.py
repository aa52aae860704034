"""The site's one URL scheme: where each generated page lives (its source path, ``*.md``) and
the URL a host gives that source, as MkDocs computes it, with relative links between them.

Every link the build writes goes through here: the pages, the map, the replay's site.json.
"""

from __future__ import annotations

import functools
import posixpath
from urllib.parse import quote

from ..text.languages import Language

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkdn", ".mkd")  # a host's pages
CARD_PAGE = "model-card.md"


def step_page_uri(step_id: str, lang: Language) -> str:
    return f"{lang.prefix}steps/{step_id}.md"


def catalog_page_uri(lang: Language) -> str:
    return f"{lang.prefix}steps/index.md"


def source_page_uri(module_file: str, prefix: str = "") -> str:
    """``glassllm/nn.py`` -> ``source/glassllm/nn.md`` (URL ``source/glassllm/nn/``)."""
    return f"{prefix}source/{posixpath.splitext(module_file)[0]}.md"


def model_card_uri(lang: Language) -> str:
    return f"{lang.prefix}{CARD_PAGE}"


def timelapse_strip_uri(kind: str) -> str:
    """The film strip of one featured head's attention through training (html/timelapse.py)."""
    return f"assets/glassllm/timelapse/{kind}.png"


def page_url(src_uri: str, use_directory_urls: bool = True) -> str:
    """The URL of a source file, site-relative: ``steps/embed.md`` -> ``steps/embed/`` (or
    ``steps/embed.html`` without directory URLs); an index page is its folder; any other file
    keeps its path. MkDocs' ``File.url``, which a test holds this to."""
    if src_uri.endswith(MARKDOWN_SUFFIXES):
        parent, filename = posixpath.split(src_uri)
        stem = posixpath.splitext(filename)[0]
        name = "index" if stem == "README" else stem
        if use_directory_urls:
            url = (parent or ".") + "/" if name == "index" else posixpath.join(parent, name) + "/"
        else:
            url = posixpath.join(parent, name + ".html")
    else:
        url = src_uri
    return quote(url)


def relative_url(url: str, other: str) -> str:
    """``url`` relative to the page at ``other`` (both site-relative); the last part of
    ``other`` is dropped if it has a dot (a file). MkDocs' ``get_relative_url``."""
    dirname, _, basename = other.rpartition("/")
    if "." in basename:
        other = dirname
    other_parts, dest_parts = _parts(other), _parts(url)
    common = 0
    for a, b in zip(other_parts, dest_parts):
        if a != b:
            break
        common += 1
    relative = "/".join([".."] * (len(other_parts) - common) + dest_parts[common:]) or "."
    return relative + "/" if url.endswith("/") else relative


@functools.lru_cache(maxsize=None)
def _parts(path: str) -> list[str]:
    if not path.startswith("/"):
        path = "/" + path
    path = posixpath.normpath(path)[1:]
    return path.split("/") if path else []


class Links:
    """Site URLs of source files and relative links between them, for raw HTML (Markdown
    links are written as ``.md`` targets, which the host checks and rewrites)."""

    def __init__(self, use_directory_urls: bool = True) -> None:
        self.use_directory_urls = use_directory_urls

    def url(self, src_uri: str) -> str:
        return page_url(src_uri, self.use_directory_urls)

    def rel(self, from_uri: str, to_uri: str, anchor: str | None = None) -> str:
        url = relative_url(self.url(to_uri), self.url(from_uri))
        return url + (f"#{anchor}" if anchor else "")
