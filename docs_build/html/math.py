"""Equations in arithmatex's generic output form, which KaTeX typesets in the browser."""

from __future__ import annotations

from html import escape


def display_math(latex: str) -> str:
    """Display math in arithmatex's generic output form, typeset by KaTeX in the browser."""
    return f'<div class="arithmatex gl-equation">\\[{escape(latex, quote=False)}\\]</div>'


def inline_math(latex: str) -> str:
    return f'<span class="arithmatex">\\({escape(latex, quote=False)}\\)</span>'
