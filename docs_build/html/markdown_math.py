"""The texts' ``$…$`` and ``$$…$$`` found in Markdown, and replaced there by KaTeX's output,
for ``generate``: a host that runs no plugin never shows us its HTML, so its pages get their
math typeset in their Markdown before it converts them.

The formulas are the ones pymdownx.arithmatex would find (its own patterns: smart dollars,
``\\(…\\)``, ``$$…$$`` blocks), outside code (fenced blocks, inline code, HTML ``<pre>``)
and HTML comments, which Markdown leaves alone. The typeset HTML is made inert for Markdown: the characters it
could read as emphasis, links, code or math are written as character references.
"""

from __future__ import annotations

import re

from pymdownx.arithmatex import RE_BRACKET_INLINE, RE_SMART_DOLLAR_INLINE

from .math import Formula

# what Markdown leaves as it is: fenced code, inline code, HTML comments, HTML <pre> blocks
_PROTECTED = re.compile(
    r"(?P<fence>^(?P<indent>[ \t]*)(?P<mark>`{3,}|~{3,})[^\n]*\n.*?^(?P=indent)?[ \t]*(?P=mark)[ \t]*$)"
    r"|(?P<code>(?<!\\)(?P<ticks>`+).+?(?<!`)(?P=ticks)(?!`))"
    r"|(?P<comment><!--.*?-->)"
    r"|(?P<pre><pre\b.*?</pre>)", re.S | re.M)  # raw HTML code (the source listings)
_BLOCK = re.compile(r"^(?P<indent>[ \t]*)\$\$(?P<tex>(?:\\.|[^\\])+?)\$\$[ \t]*$", re.S | re.M)
_INLINE = re.compile(f"(?:{RE_SMART_DOLLAR_INLINE}|{RE_BRACKET_INLINE})")
# KaTeX's text between tags: characters Markdown (and arithmatex) would read
_INERT = {ch: f"&#{ord(ch)};" for ch in "\\`*_[]{}$~^!|"}
_TEXT = re.compile(r">([^<]+)<")


def _segments(markdown: str):
    """(text, protected) pieces of ``markdown``, in order."""
    at = 0
    for match in _PROTECTED.finditer(markdown):
        if match.start() > at:
            yield markdown[at:match.start()], False
        yield match.group(0), True
        at = match.end()
    if at < len(markdown):
        yield markdown[at:], False


def _inline_tex(match: re.Match) -> str | None:
    """The formula of an inline match, or None for escaped backslashes before a dollar."""
    groups = match.groups()  # smart dollar: (escapes, $, tex); bracket: (escapes, \(, tex)
    if groups[0] or groups[3]:
        return None
    return groups[2] if groups[2] is not None else groups[5]


def _replace_in_text(text: str, typeset_of) -> str:
    def block(match: re.Match) -> str:
        html = typeset_of(Formula(match.group("tex").strip(), True))
        return f'{match.group("indent")}<div class="arithmatex">{html}</div>'

    def inline(match: re.Match) -> str:
        tex = _inline_tex(match)
        return match.group(0) if tex is None else typeset_of(Formula(tex.strip(), False))

    pieces = []
    at = 0
    for match in _BLOCK.finditer(text):
        pieces.append(_INLINE.sub(inline, text[at:match.start()]))
        pieces.append(block(match))
        at = match.end()
    pieces.append(_INLINE.sub(inline, text[at:]))
    return "".join(pieces)


def markdown_formulas(markdown: str) -> list[Formula]:
    """The formulas arithmatex would find in ``markdown``, in order."""
    found: list[Formula] = []

    def note(formula: Formula) -> str:
        found.append(formula)
        return ""
    for text, protected in _segments(markdown):
        if not protected:
            _replace_in_text(text, note)
    return found


def inert(html: str) -> str:
    """KaTeX's HTML with the text between its tags safe from Markdown."""
    return _TEXT.sub(lambda m: ">" + "".join(_INERT.get(ch, ch) for ch in m.group(1)) + "<", html)


def typeset_markdown(markdown: str, typeset_of) -> str:
    """``markdown`` with each formula replaced by ``inert(typeset_of(formula))``."""
    return "".join(text if protected else _replace_in_text(text, lambda f: inert(typeset_of(f)))
                   for text, protected in _segments(markdown))
