"""The site's content as plain functions: each generated page and file as ``{uri: str | bytes}``.

One orchestration, two hosts: the MkDocs plugin (``host/plugin.py``) turns these into
generated files, and ``python -m docs_build generate OUTDIR`` (``site/generate.py``) writes
them to a folder that a host without plugins builds. Nothing here knows a host.

- ``load_inputs``: the ONE place the site's data comes from (steps, example run, head study,
  text facts, replay recordings);
- ``generate_pages``: step pages, catalogs, model cards and source pages of every language;
- ``fill_maps``: a hand-written page's ``<!-- glassllm:model-map -->`` lines as the map;
- ``asset_files`` (KaTeX and the site's CSS/JS) and ``extra_files`` (the replay's data);
- ``runtime_files``: the browser runtime (Pyodide, the wheels and their lock, window.glassllm);
- ``expanded_nav``: mkdocs.yml's navigation with the generated pages, written out.

The large HTML blocks of a page (value tables, heatmaps, code listings) go either to a
``pages.stash.Stash`` that the plugin puts into the finished HTML (``on_post_page``), or, for
a host that runs no plugin, ``inline`` into the Markdown (``InlineStash``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..data import facts, training_record
from ..data.catalog import StepCatalog
from ..data.example import ExampleData, load_example
from ..data.heads import HeadStudy
from ..data.run import ExampleRun
from ..engine import runner
from ..engine.schema import ReplayFile
from ..engine.settings import ExampleSettings, settings_from_options
from ..errors import DocsBuildError
from ..html import math, timelapse
from ..html.exercises import load_exercise_texts
from ..pages.backward_section import load_backward_texts
from ..pages import (cache_check, catalog_page, journey, lesson, maps, model_card, prose_pages,
                     replay, source_page, step_page, training_page)
from ..pages.stash import InlineStash, Stash
from ..pages.urls import (Links, catalog_page_uri, model_card_uri, source_page_uri,
                          step_page_uri, timelapse_strip_uri)
from ..runtime import PyodideSources, pyodide_sources
from ..runtime import runtime_files as _runtime_files
from ..text import languages
from ..text.step_texts import load_step_texts
from ..text.ui import load_ui
from . import assets, git


@dataclass
class SiteInputs:
    """What every page is built from (``recordings``: the replay's, as the child wrote them)."""

    catalog: StepCatalog
    run: ExampleRun
    study: HeadStudy
    facts: dict
    recordings: list[tuple[ReplayFile, bytes]]
    source: str = "child"  # where the engine's answer came from: "child", "memory", "disk"
    seconds: float = 0.0  # the engine child's wall time, when this build ran it


@dataclass(frozen=True)
class SiteSetup:
    """What the plugin's options resolve to: the engine's folder, the example's settings (sizes
    from the checkpoint, if any), KaTeX's files, and the browser runtime's Pyodide and NumPy."""

    package_dir: Path
    settings: ExampleSettings
    katex_dist: Path
    runtime: PyodideSources


def site_setup(root: Path, options) -> SiteSetup:
    """The plugin's options (``plugins.glassllm`` of the mkdocs.yml in ``root``) checked and
    resolved, without running the engine; ``DocsBuildError`` says what to fix."""
    package_dir = (Path(root) / options.package_dir).resolve()
    if not (package_dir / "__init__.py").is_file():
        raise DocsBuildError(f"package_dir '{options.package_dir}' is not the engine package "
                             f"({package_dir} has no __init__.py); set plugins.glassllm."
                             f"package_dir in mkdocs.yml to its folder, relative to mkdocs.yml "
                             f"(default: glassllm)")
    settings = settings_from_options(dict(options.example), Path(root), package_dir)
    settings.check()
    dist = assets.katex_dist(Path(root), options.katex_dir)
    # Pyodide, which `npm ci` installs beside KaTeX, and the checkout's NumPy: checked
    runtime = pyodide_sources(assets.npm_dir_of(Path(root), options.katex_dir), package_dir.parent)
    return SiteSetup(package_dir, settings, dist, runtime)


def runtime_files(setup: SiteSetup, ui: dict[str, dict[str, str]]) -> dict[str, bytes]:
    """The browser runtime's files (``docs_build/runtime``): Pyodide, the glassllm wheel of
    this checkout, NumPy, their lock, window.glassllm's code and what each page knows."""
    return _runtime_files(setup.runtime, setup.package_dir, ui,
                          {lang.html_lang: lang.code for lang in languages.LANGUAGES})


def ui_strings(docs_dir: Path) -> dict[str, dict[str, str]]:
    """Every language's UI strings (``docs/_texts/<lang>/ui.yml``), by language code."""
    return {lang.code: load_ui(docs_dir, lang) for lang in languages.LANGUAGES}


def load_inputs(settings: ExampleSettings, package_dir: Path, *, allow_stale: bool = False,
                timeout: float = runner.DEFAULT_TIMEOUT,
                timeout_option: str = runner.TIMEOUT_OPTION,
                previous: SiteInputs | None = None, report=None) -> SiteInputs:
    """Check the markers against the index and ``STEPS``, run the example, study its heads
    and record the replay's runs (all in the engine's child process, ``data.example
    .load_example``), then compute the texts' facts: all the site's data, in one call.
    ``previous``: the inputs of the build before (``mkdocs serve``), see ``site_inputs``;
    ``report``: the build's log, told what the engine's child does as it does it."""
    return site_inputs(load_example(settings, package_dir, allow_stale=allow_stale,
                                    timeout=timeout, timeout_option=timeout_option,
                                    report=report), previous)


def site_inputs(data: ExampleData, previous: SiteInputs | None = None) -> SiteInputs:
    """``load_example``'s data as the pages take it, with the texts' facts, computed once per
    run: ``previous``, if it holds the same run (reused from memory under ``mkdocs serve``),
    lends its facts."""
    computed = (previous.facts if previous is not None and previous.run is data.run
                else facts.compute_facts(data.run, data.study))
    return SiteInputs(data.catalog, data.run, data.study, computed, data.replay, data.source,
                      data.seconds)


@dataclass(frozen=True)
class PageOptions:
    docs_dir: Path  # the hand-written pages and docs/_texts
    package_dir: Path  # the engine, whose modules get source pages
    use_directory_urls: bool = True
    repo_url_of: Callable[[str, int], str] | None = None  # (path, line) -> URL, or None
    limits: tuple[int, int] = (12, 12)  # rows and columns a value table shows at most
    inline: bool = False  # big HTML blocks in the Markdown (no plugin to put them back)


@dataclass
class Pages:
    """The generated pages and what the navigation and the hand-written pages need of them."""

    markdown: dict[str, str] = field(default_factory=dict)  # src uri -> Markdown
    stashes: dict[str, Stash] = field(default_factory=dict)  # src uri -> its big HTML blocks
    step_uris: dict[str, list[str]] = field(default_factory=dict)  # language code -> pages
    source_uris: dict[str, list[str]] = field(default_factory=dict)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # code -> step ID -> label

    def new_stash(self, uri: str, inline: bool):
        if inline:
            return InlineStash()
        stash = self.stashes[uri] = Stash()
        return stash


def generate_pages(inputs: SiteInputs, ui: dict[str, dict[str, str]],
                   options: PageOptions) -> Pages:
    """Step pages, catalogs, model cards and source pages, in every language (``ui``: the
    UI strings per language code)."""
    catalog, run, study = inputs.catalog, inputs.run, inputs.study
    links = Links(options.use_directory_urls)
    package_dir = Path(options.package_dir)
    modules = source_page.module_files(package_dir)
    codes = {m: (package_dir.parent / m).read_text(encoding="utf-8") for m in modules}
    src = step_page.Source(repo_url_of=options.repo_url_of, codes=codes, links=links)
    out = Pages()
    for lang in languages.LANGUAGES:
        lang_ui = ui[lang.code]
        step_texts = load_step_texts(Path(options.docs_dir), lang.code, catalog.ids)
        decimal = lang_ui["number.decimal"]
        step_texts = {sid: dataclasses.replace(t, body=facts.fill(t.body, inputs.facts, t.path,
                                                                  decimal))
                      for sid, t in step_texts.items()}
        labels = out.labels[lang.code] = {sid: t.label for sid, t in step_texts.items()}
        out.step_uris[lang.code] = []
        exercise_texts = load_exercise_texts(Path(options.docs_dir), lang)
        backward_texts = load_backward_texts(Path(options.docs_dir), lang)
        for step in catalog.steps:
            uri = step_page_uri(step.id, lang)
            stash = out.new_stash(uri, options.inline)
            small_map = maps.model_map_html(catalog, run, labels, lang_ui, lang, links, uri,
                                            current=step.id, small=True)
            out.markdown[uri] = step_page.render_step_page(
                step, catalog, run, step_texts[step.id], labels, lang_ui, lang, src, stash,
                options.limits, study, small_map, strip_urls(links, uri), exercise_texts,
                backward_texts)
            out.step_uris[lang.code].append(uri)
        if run.training is not None:  # the training step, end to end
            out.markdown[training_page.training_page_uri(lang)] = training_page.render_training_page(
                run, catalog, labels, lang_ui, backward_texts, lang)
        out.markdown[catalog_page_uri(lang)] = catalog_page.render_catalog_page(
            catalog, run, labels, lang_ui, lang, links)
        card_text = model_card.load_prose(Path(options.docs_dir), lang)
        out.markdown[model_card_uri(lang)] = model_card.render_model_card(
            run, study, card_text.label, facts.fill(card_text.body, inputs.facts, card_text.path, decimal),
            lang_ui, lang, strip_urls(links, model_card_uri(lang)))
        for page in prose_pages.PROSE_PAGES:  # the GPT-2 comparison, the lecture path
            out.markdown[prose_pages.prose_page_uri(page, lang)] = prose_pages.render_prose_page(
                Path(options.docs_dir), page, lang, run, inputs.facts, decimal)
        out.source_uris[lang.code] = []
        for module in modules:
            uri = source_page_uri(module, lang.prefix)
            stash = out.new_stash(uri, options.inline)
            out.markdown[uri] = source_page.render_source_page(module, codes[module], catalog, labels,
                                                          lang_ui, lang, links, stash)
            out.source_uris[lang.code].append(uri)
    return out


def strip_urls(links: Links, page_uri: str) -> dict[str, str]:
    """The time-lapse's film strips (``timelapse_files``), as URLs from ``page_uri``."""
    return {kind: links.rel(page_uri, timelapse_strip_uri(kind)) for kind in training_record.KINDS}


def timelapse_files(inputs: SiteInputs) -> dict[str, bytes]:
    """One film strip per featured head of the checkpoint's training record, if it has one."""
    record = inputs.study.record
    if record is None:
        return {}
    return {timelapse_strip_uri(kind): timelapse.strip_png(record.attention[kind])
            for kind in training_record.KINDS}


def fill_maps(markdown: str, page_uri: str, inputs: SiteInputs, pages: Pages,
              ui: dict[str, dict[str, str]], use_directory_urls: bool, *,
              inline: bool = False) -> str:
    """A hand-written page's Markdown with its map markers filled, and its cache-check markers
    (``pages/cache_check.py``); a page without one comes back unchanged. Its stash (unless
    ``inline``) goes to ``pages.stashes[page_uri]``."""
    lang = languages.language_of(page_uri)
    markdown = cache_check.fill_cache_check(markdown, inputs.run, ui[lang.code])
    markdown = journey.fill_journey(markdown, page_uri, inputs.study.circuit, inputs.run.labels,
                                    ui[lang.code])
    markdown = lesson.fill_lesson(markdown, page_uri, ui[lang.code], use_directory_urls)
    if not maps.MAP_MARKER.search(markdown):
        return markdown
    return maps.fill_map_markers(markdown, page_uri, inputs.catalog, inputs.run,
                                 pages.labels[lang.code], ui[lang.code], lang,
                                 Links(use_directory_urls), pages.new_stash(page_uri, inline))


def page_language(page_uri: str, ui: dict[str, dict[str, str]],
                  use_directory_urls: bool) -> dict:
    """What the site's templates (``overrides/partials``) need to show a page in its own
    language: Material's language for the theme's words, ``<html lang>``, and the language
    menu's links to the same page in each language (site-relative)."""
    lang = languages.language_of(page_uri)
    links = Links(use_directory_urls)
    return {
        "glassllm_theme_language": lang.theme_language,
        "glassllm_html_lang": lang.html_lang,
        "glassllm_alternate": [
            {"name": ui[other.code]["language_name"], "lang": other.html_lang,
             "link": links.url(languages.counterpart(page_uri, other)) or "./",
             "current": other == lang}
            for other in languages.LANGUAGES]}


def check_translations(page_uris) -> None:
    """Every hand-written page must exist in each language."""
    missing = languages.missing_translations(page_uris)
    if missing:
        listed = "; ".join(f"docs/{other} (for docs/{uri})" for uri, other in missing[:6])
        raise DocsBuildError(f"every page needs a version in each language; write {listed}")


def repo_url_of(repo_url: str | None, edit_uri: str | None, package_dir: Path,
                source_ref: str | None = None, template: str | None = None):
    """(path, line) -> the line's page in the repository, pinned to ``source_ref`` (default:
    the commit of HEAD); None without ``repo_url``."""
    if not repo_url:
        return None
    repo_dir = Path(package_dir).parent
    ref = (source_ref or git.git_commit(repo_dir) or git.branch_from_edit_uri(edit_uri)
           or "main")
    return lambda path, line: git.repo_line_url(template, repo_url, ref, path, line)


def extra_files(inputs: SiteInputs, docs_dir: Path,
                use_directory_urls: bool = True) -> dict[str, bytes]:
    """Further site files built from the example, after the pages: the replay page's
    recordings (as the engine's child wrote them), per-language labels and links, the step
    table and its player (``pages/replay.py``).

    Other parts of the site add their generated data here, one call each.
    """
    return {**replay.replay_files(Path(docs_dir), inputs.catalog.steps, inputs.run.labels,
                                  inputs.recordings, use_directory_urls),
            **timelapse_files(inputs)}


def expanded_nav(nav: list, pages: Pages, ui: dict[str, dict[str, str]]) -> list:
    """mkdocs.yml's ``nav`` (one top-level section per language) with each language's step
    pages after its catalog and its source pages at the end, as the plugin's ``on_nav``
    shows them, written out for a host that runs no plugin."""
    out = []
    for section in nav:
        title, items = (next(iter(section.items())) if isinstance(section, dict)
                        and len(section) == 1 else (None, None))
        langs = {languages.language_of(u).code for u in _nav_uris(items or [])}
        if not isinstance(items, list) or len(langs) != 1:
            raise DocsBuildError("the nav in mkdocs.yml must hold one top-level section per "
                                 "language (e.g. 'English:' with index.md ... and 'Português:' "
                                 f"with pt/index.md ...); {section!r} is not one")
        code = langs.pop()
        lang = next(lg for lg in languages.LANGUAGES if lg.code == code)
        catalog_uri = catalog_page_uri(lang)
        steps = {ui[lang.code]["nav.steps"]: [catalog_uri, *pages.step_uris[lang.code]]}
        items = [steps if _nav_uris([item]) == [catalog_uri] else item for item in items]
        if steps not in items:
            items.append(steps)
        items.append({ui[lang.code]["nav.source"]: _nav_items(
            source_page.source_nav(pages.source_uris[lang.code], lang.prefix))})
        out.append({title: items})
    return out


def _nav_items(items: list) -> list:
    """``source_page.source_nav``'s items as mkdocs.yml writes a nav: a section is a one-key
    mapping."""
    return [item if isinstance(item, str) else {item[0]: _nav_items(item[1])} for item in items]


def _nav_uris(items) -> list[str]:
    uris = []
    for item in items:
        if isinstance(item, str):
            uris.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                uris += [value] if isinstance(value, str) else _nav_uris(value)
    return uris


# -- math: every formula typeset at build by KaTeX (site/katex.py) ------------------------------

def page_formulas(page_html: str, stash: Stash | None = None) -> list:
    """The formulas of a page's HTML and of its stashed blocks."""
    blocks = stash.blocks if stash is not None else []
    return [f for block in [page_html, *blocks] for f in math.formulas_in(block)]


def math_problem(page_uri: str, formula, error: str) -> str:
    return (f"KaTeX cannot typeset a formula on docs/{page_uri}: {formula.short()} "
            f"({error}); fix it where the page gets it: the page itself, its text in "
            f"docs/_texts, the step's equation (glassllm/steps.py) or its worked numbers "
            f"(docs_build/data/worked.py)")


def typeset_page(page_html: str, page_uri: str, typeset: dict) -> tuple[str, list[str]]:
    """``page_html`` with its formulas as KaTeX typeset them (``typeset``: formula ->
    ``katex.Typeset``), and a problem for each formula KaTeX refused."""
    problems: list[str] = []

    def of(formula):
        done = typeset[formula]
        if done.error is not None:
            problems.append(math_problem(page_uri, formula, done.error))
        return done.html
    return math.typeset(page_html, of), list(dict.fromkeys(problems))
