"""The navigation per language: mkdocs.yml's ``nav`` holds one top-level section per
language, and each page shows only its own language's, with the steps section expanded and
the source pages at the end."""

from __future__ import annotations

from html import escape

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

from ..pages import source_page
from ..pages.urls import catalog_page_uri
from ..text import languages


def language_navs(nav: Navigation, files: Files, ui: dict[str, dict[str, str]],
                  step_uris: dict[str, list[str]],
                  source_uris: dict[str, list[str]]) -> dict[str, Navigation]:
    """One ``Navigation`` per language code, from the site's whole ``nav``."""
    navs = {}
    sections = language_sections(nav)
    for lang in languages.LANGUAGES:
        strings = ui[lang.code]
        items = list(sections[lang.code].children)
        catalog_uri = catalog_page_uri(lang)
        step_pages = [files.get_file_from_path(u).page for u in step_uris[lang.code]]
        source_pages = _sections(files, source_page.source_nav(source_uris[lang.code], lang.prefix))
        # section titles are HTML in the theme's navigation: the UI text is escaped
        steps_title, source_title = escape(strings["nav.steps"]), escape(strings["nav.source"])
        for i, item in enumerate(items):
            if isinstance(item, Page) and item.file.src_uri == catalog_uri:
                items[i] = Section(steps_title, [item, *step_pages])
                break
        else:
            items.append(Section(steps_title, [files.get_file_from_path(catalog_uri).page,
                                               *step_pages]))
        if source_pages:  # none while serve shows a problem instead of the pages
            items.append(Section(source_title, source_pages))
        pages = pages_of(items)
        _link(items, parent=None)
        for previous, page, following in zip([None, *pages[:-1]], pages, [*pages[1:], None]):
            page.previous_page, page.next_page = previous, following
        lang_nav = Navigation(items, pages)
        home = files.get_file_from_path(f"{lang.prefix}index.md")
        lang_nav.homepage = home.page if home else None
        navs[lang.code] = lang_nav
    return navs


def language_sections(nav: Navigation) -> dict[str, Section]:
    found = {}
    for item in nav.items:
        langs = {languages.language_of(p.file.src_uri).code for p in pages_of([item])}
        if not isinstance(item, Section) or len(langs) != 1:
            raise PluginError(
                "glassllm: the nav in mkdocs.yml must hold one top-level section per "
                "language (e.g. 'English:' with index.md ... and 'Português:' with "
                f"pt/index.md ...); '{getattr(item, 'title', item)}' is not one")
        found[langs.pop()] = item
    missing = [lang.code for lang in languages.LANGUAGES if lang.code not in found]
    if missing:
        raise PluginError(f"glassllm: the nav in mkdocs.yml has no section for "
                          f"language(s) {', '.join(missing)}")
    return found


def _sections(files: Files, items: list) -> list:
    """``source_page.source_nav``'s items as pages and sections (a folder's path as its title,
    escaped as the theme wants section titles)."""
    return [files.get_file_from_path(item).page if isinstance(item, str)
            else Section(escape(item[0]), _sections(files, item[1])) for item in items]


def pages_of(items) -> list[Page]:
    pages = []
    for item in items:
        if isinstance(item, Page):
            pages.append(item)
        if getattr(item, "children", None):
            pages.extend(pages_of(item.children))
    return pages


def _link(items, parent) -> None:
    for item in items:
        item.parent = parent
        if isinstance(item, Section):
            _link(item.children, item)
