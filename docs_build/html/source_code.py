"""A module of the engine as one highlighted block: an anchor per line (``#L123``), the
markers' lines marked and linked to their step pages."""

from __future__ import annotations

import ast
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


@functools.lru_cache(maxsize=64)
def _statements(code: str) -> tuple[tuple[int, int], ...]:
    """(first line, last line) of every statement of the module; none where it does not
    parse (an engine edit under serve: the page shows the marker's line and the build's banner)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return ()
    return tuple((node.lineno, node.end_lineno) for node in ast.walk(tree)
                 if isinstance(node, ast.stmt))


def statement_at(code: str, line: int) -> tuple[int, int]:
    """The first and last line of the smallest statement that holds ``line`` (a marker's
    line may be the last of a statement written over several)."""
    spans = [(last - first, first, last) for first, last in _statements(code)
             if first <= line <= last]
    if not spans:
        return line, line
    _, first, last = min(spans)
    return first, last


def excerpt_html(code: str, first: int, last: int, page_url: str) -> str:
    """Lines ``first`` ... ``last`` of the module, highlighted and marked, each number a link
    to that line of the module's source page (``page_url``)."""
    out = [f'<span class="gl-line gl-marker"><a class="gl-ln" href="{escape(page_url)}#L{number}" '
           f'data-line="{number}" aria-label="L{number}"></a>{html}</span>'
           for number, html in enumerate(highlighted_lines(code)[first - 1:last], start=first)]
    return ('<div class="highlight gl-source gl-excerpt" data-search-exclude><pre><code>'
            + "\n".join(out) + "</code></pre></div>")
