"""Tabs in the HTML pymdownx.tabbed writes, so Material styles them like any other."""

from __future__ import annotations

from html import escape


def tabs_html(group: str, labels: list[str], blocks: list[str],
              featured: int | None = None) -> str:
    """Tabs in the HTML form pymdownx.tabbed (alternate style) writes, so Material styles them;
    the ``featured`` tab (else the first) is open first, and marked ``gl-featured``."""
    opened = 0 if featured is None else featured
    inputs = "".join(
        f'<input{" checked" if i == opened else ""} id="{group}-{i}" name="{group}" type="radio">'
        for i in range(len(labels)))
    tab_labels = "".join(f'<label for="{group}-{i}"'
                         + (' class="gl-featured"' if i == featured else "")
                         + f">{escape(label)}</label>" for i, label in enumerate(labels))
    contents = "".join(f'<div class="tabbed-block">\n{block}\n</div>' for block in blocks)
    return (f'<div class="tabbed-set tabbed-alternate" data-tabs="{len(labels)}">{inputs}'
            f'<div class="tabbed-labels">{tab_labels}</div>'
            f'<div class="tabbed-content">{contents}</div></div>')
