"""What ``mkdocs serve`` shows while the build has a problem that ``mkdocs build`` stops on.

A failed rebuild would leave every browser request waiting, so a stale index (the pages take
the markers' live lines), a broken or endless engine (its child is stopped after
``serve_timeout`` seconds), or a bad text or ui.yml still gives a site: the last good part is
kept, the log warns once, and every page's banner (``overrides/main.html``) names the problem
and its fix.
"""

from __future__ import annotations

import logging

from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File, Files, InclusionLevel

from ..errors import DocsBuildError
from ..pages.prose_pages import PROSE_PAGES, prose_page_uri
from ..pages.training_page import training_page_uri
from ..pages.urls import catalog_page_uri, model_card_uri
from ..text import languages
from ..text.markdown import md_escape

log = get_plugin_logger("glassllm")


class Fallback:
    """The last good result of each part of the build, and what the banner says now."""

    def __init__(self) -> None:
        self.serving = False
        self.good: dict[str, object] = {}  # "ui", "steps", "pages", "extra"
        self.problems: list[str] = []

    def problem(self, message: str) -> None:
        """Note a problem that ``mkdocs build`` stops on: logged once, shown on every page."""
        if message in self.problems:  # e.g. a bad text, which the pages and the replay read
            return
        self.problems.append(message)
        log.warning("%s [mkdocs serve: shown on every page; mkdocs build stops here]", message)

    def or_last_good(self, part: str, compute):
        """(``compute()``, False), remembered as the last good ``part``; under serve, if it
        fails with a build error and an earlier build had one, (that one, True)."""
        try:
            self.good[part] = result = compute()
            return result, False
        except DocsBuildError as error:
            if not self.serving or part not in self.good:
                raise
            self.problem(f"{error} (until then the pages show the last good build)")
            return self.good[part], True


def problem_files(files: Files, config, ui: dict[str, dict[str, str]], problems: list[str],
                  assets: list[File]) -> Files:
    """Under serve, with no good pages yet: each language's catalog page (and model card)
    names the problems."""
    for lang in languages.LANGUAGES:
        md = (f"# {md_escape(ui[lang.code]['catalog.title'])}\n\n"
              + "\n\n".join(md_escape(p) for p in problems) + "\n")
        # the catalog, the model card, the training step and the prose pages are in
        # mkdocs.yml's nav: all must exist
        for uri in (catalog_page_uri(lang), model_card_uri(lang), training_page_uri(lang),
                    *(prose_page_uri(page, lang) for page in PROSE_PAGES)):
            files.append(File.generated(config, uri, content=md,
                                        inclusion=InclusionLevel.NOT_IN_NAV))
    for file in assets:
        files.append(file)
    # the hand-written pages' links to the missing step pages would add ~100 warnings
    # to the one above; this build's config only (serve reloads it for each rebuild)
    config.validation.links.not_found = logging.DEBUG
    return files
