"""Formulas in a page: written as arithmatex's generic markers, found again, and replaced by
what KaTeX typeset at build (``site/katex.py`` runs KaTeX).

The site's own fragments (equations, worked numbers, the catalog) write the same markers as
pymdownx.arithmatex writes for the texts' ``$…$`` and ``$$…$$``: ``<span class="arithmatex">
\\(…\\)</span>`` and ``<div class="arithmatex">\\[…\\]</div>``. ``formulas_in`` finds them in a
page's HTML and ``typeset`` puts KaTeX's output in their place.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Formula:
    tex: str
    display: bool

    def short(self, limit: int = 160) -> str:
        """The formula as a message quotes it."""
        text = " ".join(self.tex.split())
        text = text if len(text) <= limit else text[:limit - 1] + "…"
        return f"$${text}$$" if self.display else f"${text}$"


def display_math(latex: str) -> str:
    """Display math in arithmatex's generic output form."""
    return f'<div class="arithmatex gl-equation">\\[{escape(latex, quote=False)}\\]</div>'


def inline_math(latex: str) -> str:
    return f'<span class="arithmatex">\\({escape(latex, quote=False)}\\)</span>'


# A marker: its tag, its attributes (a class "arithmatex ..."), \( … \) or \[ … \] inside.
MARKER = re.compile(
    r'<(?P<tag>span|div)(?P<attrs>[^>]*?\sclass="arithmatex(?:\s[^"]*)?"[^>]*)>'
    r'\s*\\(?P<open>[(\[])(?P<tex>.*?)\\[)\]]\s*</(?P=tag)>', re.S)
BARE_INLINE = ' class="arithmatex"'


def _formula(match: re.Match) -> Formula:
    return Formula(html_lib.unescape(match.group("tex")).strip(), match.group("open") == "[")


def formulas_in(page_html: str) -> list[Formula]:
    """The formulas of a page's HTML, in order (repeats included)."""
    return [_formula(m) for m in MARKER.finditer(page_html)]


_ANNOTATION = re.compile(r'<annotation encoding="application/x-tex">.*?</annotation>', re.S)


def compact(katex_html: str) -> str:
    """KaTeX's output without the copy of the TeX source it keeps for copy-and-paste (the
    ``<annotation>`` and its ``<semantics>``) and the MathML namespace, which HTML implies."""
    out = _ANNOTATION.sub("", katex_html)
    out = out.replace("<semantics>", "").replace("</semantics>", "")
    return out.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")


def typeset(page_html: str, typeset_of) -> str:
    """``page_html`` with every marker replaced by its formula's HTML, ``typeset_of(formula)``
    (a bare inline marker by the formula alone; a display one, or one with more classes,
    keeps its element and classes)."""
    def replace(match: re.Match) -> str:
        rendered = typeset_of(_formula(match))
        if match.group("attrs") == BARE_INLINE:
            return rendered
        return f'<{match.group("tag")}{match.group("attrs")}>{rendered}</{match.group("tag")}>'
    return MARKER.sub(replace, page_html)
