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
_WORD = re.compile(r"<mi>([^<]+)</mi>")


def _word(match: re.Match) -> str:
    """A name of several letters (``\\cos``) is upright in MathML by default; said outright,
    so that the site's CSS for inline MathML sets it upright, single letters italic."""
    text = match.group(1)
    return (f'<mi mathvariant="normal">{text}</mi>' if len(html_lib.unescape(text)) > 1
            else match.group(0))


_WRAPPER = re.compile(r'^<span class="katex">(<math\b.*</math>)</span>$', re.S)


def _sole_mrow(math_html: str) -> str:
    """``<math><mrow>…</mrow></math>`` as ``<math>…</math>`` (``<math>`` is an mrow itself),
    when that one ``<mrow>`` holds the whole formula."""
    head = math_html.index(">") + 1
    if not math_html.startswith("<mrow>", head):
        return math_html
    depth, at = 0, head
    for tag in re.finditer(r"<(/?)mrow>", math_html[head:]):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            at = head + tag.end()
            break
    if math_html[at:] != "</math>":
        return math_html
    return math_html[:head] + math_html[head + len("<mrow>"):at - len("</mrow>")] + "</math>"


# TeX's spacing, which KaTeX's MathML leaves to the browser and MathML Core does not infer:
# a thin space after a function name before its argument (\\cos\\Theta), none where the
# argument is bracketed; and a minus after an operator, a relation or an opening bracket is
# a sign (TeX makes it an ordinary symbol), not a binary minus with space on both sides.
_APPLY = re.compile(r"<mo>\u2061</mo>(?=<m(?:i|n|sub|sup|subsup|under|over|style|frac)\b)")
_SIGN = re.compile(r"(<mo[^>]*>([^<]*)</mo>)<mo>\u2212</mo>")
_CLOSERS = set(")]}|\u2223\u230b\u2309\u27e9\u2032")


def _sign(match: re.Match) -> str:
    if match.group(2) in _CLOSERS:
        return match.group(0)
    return match.group(1) + '<mo lspace="0em" rspace="0em">\u2212</mo>'


def compact(katex_html: str) -> str:
    """KaTeX's MathML as a page carries it: a bare ``<math>`` (``display="block"`` for a
    display formula), without the copy of the TeX source KaTeX keeps for copy-and-paste (the
    ``<annotation>`` and its ``<semantics>``), the MathML namespace HTML implies, KaTeX's
    ``<span class="katex">`` around it (the site's CSS styles ``math`` itself), a redundant
    outer ``<mrow>``, ``separator="true"`` (MathML Core spaces a comma by its operator
    dictionary) and ``stretchy="false"`` (KaTeX's bracket for a plain ``(``: a browser
    stretches a bracket only from a font's MATH table, which KaTeX's fonts do not have, so
    it draws the same); names of several letters marked upright, and TeX's spacing of
    function names and signs written out (``_APPLY``, ``_SIGN``). KaTeX's error span (a formula it
    refused) is left as it is."""
    out = _ANNOTATION.sub("", katex_html)
    out = out.replace("<semantics>", "").replace("</semantics>", "")
    out = _WORD.sub(_word, out)
    out = out.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")
    out = out.replace('<mo separator="true">', "<mo>").replace('<mo stretchy="false">', "<mo>")
    out = _SIGN.sub(_sign, _APPLY.sub('<mo rspace="0.1667em">\u2061</mo>', out))
    wrapped = _WRAPPER.match(out)
    return _sole_mrow(wrapped.group(1)) if wrapped else out


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
