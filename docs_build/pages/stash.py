"""Where a page's large HTML blocks go: kept out of its Markdown and put into the finished HTML
(``Stash``, with a plugin), or left in the Markdown (``InlineStash``, for a host without one)."""

from __future__ import annotations

import re
from html import escape


class Stash:
    """Large HTML (value tables, heatmaps, code listings) kept out of the Markdown.

    Markdown's raw-HTML parsing and the search indexer would spend seconds on tens of
    thousands of tags that are neither Markdown nor searchable text, so a page's Markdown
    holds a placeholder per block and ``fill`` puts the blocks into the finished HTML
    (the plugin does so in ``on_post_page``). ``anchors`` are ids the block carries,
    repeated in the placeholder so MkDocs can still validate links to them.
    """

    _SLOT = re.compile(r'<div class="gl-slot" data-gl-slot="(\d+)">.*?</div>', re.S)

    def __init__(self) -> None:
        self.blocks: list[str] = []

    def put(self, html: str, anchors=()) -> str:
        self.blocks.append(html)
        ids = "".join(f'<span id="{escape(a)}"></span>' for a in anchors)
        return f'<div class="gl-slot" data-gl-slot="{len(self.blocks) - 1}">{ids}</div>'

    def fill(self, html: str) -> str:
        return self._SLOT.sub(lambda m: self.blocks[int(m.group(1))], html)


class InlineStash:
    """A ``Stash`` that keeps each block in the Markdown itself, for a host that runs
    no plugin: the HTML carries its own ids, so ``anchors`` need no placeholder."""

    def put(self, html: str, anchors=()) -> str:
        return html
