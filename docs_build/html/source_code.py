"""A module of the engine as one highlighted block: an anchor per line (``#L123``), the
markers' lines marked and linked to their step pages."""

from __future__ import annotations

import functools
from html import escape

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer


@functools.lru_cache(maxsize=64)  # each module is shown in every language
def highlighted_lines(code: str) -> tuple[str, ...]:
    """Pygments HTML of each source line; Pygments closes its spans at every line end."""
    html = highlight(code, PythonLexer(stripnl=False, ensurenl=True), HtmlFormatter(nowrap=True))
    lines = html.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(lines)


def code_block_html(code: str, markers: dict[int, tuple[str, str]]) -> str:
    """The module as one highlighted block; ``markers`` maps a line to (step ID, step URL).

    Each line is a span with ``id="L<n>"``; the number is drawn by CSS from ``data-line`` so
    copying the code does not copy the numbers.
    """
    out = []
    for number, html in enumerate(highlighted_lines(code), start=1):
        marker = markers.get(number)
        cls = "gl-line gl-marker" if marker else "gl-line"
        link = ""
        if marker:
            step_id, url = marker
            # text drawn by CSS from data-step: copying the code copies no link text
            link = (f'<a class="gl-step-link" href="{escape(url)}" data-step="{escape(step_id)}" '
                    f'aria-label="{escape(step_id)}"></a>')
        out.append(f'<span class="{cls}" id="L{number}"><a class="gl-ln" href="#L{number}" '
                   f'data-line="{number}" aria-label="L{number}"></a>{html}{link}</span>')
    return ('<div class="highlight gl-source" data-search-exclude><pre><code>'
            + "\n".join(out) + "</code></pre></div>")
