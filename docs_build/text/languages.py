"""The site's two languages: where each one's pages live and how a page finds its counterpart.

English lives at the site root and Portuguese under ``pt/``; one build renders both
(mkdocs-static-i18n would drop the plugin's generated pages, its issue #263).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    code: str  # folder of its texts: docs/_texts/<code>/
    prefix: str  # where its pages live in docs/ and in the site
    html_lang: str  # <html lang>, hreflang
    theme_language: str  # Material's partials/languages/<name>.html for the theme's own words


LANGUAGES = (
    Language("en", "", "en", "en"),
    Language("pt", "pt/", "pt-BR", "pt-BR"),
)
DEFAULT = LANGUAGES[0]


def language_of(src_uri: str) -> Language:
    for lang in LANGUAGES:
        if lang.prefix and src_uri.startswith(lang.prefix):
            return lang
    return DEFAULT


def counterpart(src_uri: str, target: Language) -> str:
    """The same page in another language: ``pt/model.md`` <-> ``model.md``."""
    own = language_of(src_uri)
    return target.prefix + src_uri[len(own.prefix):]


def missing_translations(src_uris) -> list[tuple[str, str]]:
    """(page, its missing counterpart) for every Markdown page lacking a language."""
    present = set(src_uris)
    missing = []
    for uri in sorted(present):
        for lang in LANGUAGES:
            other = counterpart(uri, lang)
            if other not in present:
                missing.append((uri, other))
    return missing
