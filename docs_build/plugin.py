"""The ``glassllm`` MkDocs plugin: a thin shell over the plain functions of ``docs_build``.

Events, in build order:

* ``on_config``  – check the example settings and KaTeX, watch the engine and the plugin,
  add KaTeX and the site's CSS/JS to every page;
* ``on_files``   – ``example.load_example``: the steps (markers vs index vs ``STEPS``), the
  example run, the head study and the replay's recordings, from the engine's child process
  (cached in memory across ``mkdocs serve`` rebuilds and on disk); generate every step page,
  the catalog and the source pages in both languages, plus the asset files and any extra
  generated files;
* ``on_nav``     – split the navigation per language and expand the steps section;
* ``on_page_markdown`` – put the map of the model where a hand-written page has the line
  ``<!-- glassllm:model-map -->`` (``... small -->`` for the thumbnail);
* ``on_page_context`` – give each page its own language's navigation, ``<html lang>`` and
  language switcher (to the same page in the other language).

Nothing is ever written into ``docs/``: every page is a ``File.generated``.

The engine runs only in a child process (``docs_build.example.load_example``, which starts
``docs_build/example_child.py``), so this process never imports ``glassllm``: under
``mkdocs serve`` an edited engine is simply the code the next child runs. The ``docs_build``
modules themselves are imported once: after editing them (other than the child module),
restart ``mkdocs serve``.

Under ``mkdocs serve`` a failed rebuild would leave every browser request waiting, so a
stale index (the pages take the markers' live lines), a broken engine, or a bad text or
ui.yml still gives a site: the last good part is kept, the log warns once, and every page's
banner (``overrides/main.html``) names the problem and its fix. ``mkdocs build`` still stops.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from html import escape
from pathlib import Path

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

from . import example, i18n, model_card, pipeline, render, runtime, source
from .catalog import DocsBuildError
from .example import DEFAULT_TIMEOUT
from .pipeline import KATEX_FILES, KATEX_SITE_DIR, OWN_SITE_DIR
from .texts import TextError

log = get_plugin_logger("glassllm")

PLUGIN_DIR = Path(__file__).resolve().parent


class ExampleOptions(base.Config):
    """``plugins.glassllm.example``: the model and inputs of the run the pages show."""

    # "demo", "random" or a checkpoint folder relative to mkdocs.yml (docs_build/model_source.py)
    model = c.Type(str, default="demo")
    # sizes of `model: random` only (default 32, 2, 4, 2, 64); a checkpoint has its own
    d_model = c.Optional(c.Type(int))
    n_layers = c.Optional(c.Type(int))
    n_heads = c.Optional(c.Type(int))
    n_kv_heads = c.Optional(c.Type(int))
    max_len = c.Optional(c.Type(int))
    seed = c.Type(int, default=0)  # random weights (and the untrained model beside a checkpoint)
    prompt = c.Type(str, default="The cat sat")
    tokens = c.Type(int, default=4)
    traced_step = c.Type(int, default=0)
    greedy = c.Type(bool, default=False)
    temperature = c.Type((int, float), default=1.0)
    top_k = c.Optional(c.Type(int))
    sampling_seed = c.Type(int, default=0)
    loss_text = c.Type(str, default="The cat sat.")


class _CountOption(c.Type):
    """A positive ``int`` option; MkDocs names the option when it refuses a value."""

    def __init__(self, default: int) -> None:
        super().__init__(int, default=default)

    def run_validation(self, value):
        value = super().run_validation(value)
        if isinstance(value, bool) or value < 1:
            raise base.ValidationError(f"must be a whole number of at least 1, got {value!r}")
        return value


class GlassLMConfig(base.Config):
    example = c.SubConfig(ExampleOptions)
    package_dir = c.Type(str, default="glassllm")  # the engine, relative to mkdocs.yml
    katex_dir = c.Type(str, default="node_modules/katex")  # where `npm ci` puts KaTeX
    # The repository page of one line; placeholders {repo_url}, {ref}, {path}, {line}.
    # Default: {repo_url}/blob/{ref}/{path}#L{line} (GitHub's form). Used only with repo_url.
    source_url_template = c.Optional(c.Type(str))
    source_ref = c.Optional(c.Type(str))  # default: the full commit hash of HEAD
    table_rows = _CountOption(default=12)  # rows and columns a value table shows at most
    table_cols = _CountOption(default=12)
    # seconds the engine's child process may take (docs_build/example.py: load_example)
    example_timeout = _CountOption(default=DEFAULT_TIMEOUT)


def _actionable(method):
    """Turn the plain functions' errors into PluginError, so plain and --strict builds stop."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except PluginError:
            raise
        except (DocsBuildError, TextError) as error:
            raise PluginError(f"glassllm: {error}") from error
    return wrapper


class GlassLMPlugin(BasePlugin[GlassLMConfig]):
    def __init__(self) -> None:
        # the example's data and the facts computed from it (pipeline.SiteInputs);
        # load_example keeps the data in memory across `mkdocs serve` rebuilds, and
        # site_inputs the facts of the same run, so that editing a text reruns neither
        self.inputs: pipeline.SiteInputs | None = None
        self.root = Path.cwd()
        self.package_dir = self.root / "glassllm"
        self.command = "build"
        # under `mkdocs serve`, where a failed rebuild leaves the browser waiting: the last
        # good result of each part ("ui", "steps", "pages", "extra"), and what the pages'
        # banner says is wrong now
        self._good: dict[str, object] = {}
        self.problems: list[str] = []
        self.labels: dict[str, dict[str, str]] = {}  # language code -> step ID -> label

    def on_startup(self, *, command: str, dirty: bool) -> None:
        # Defining on_startup keeps this instance (and its cache) across `mkdocs serve` rebuilds.
        self.command = command

    # -- config ---------------------------------------------------------------------------

    @_actionable
    def on_config(self, config):
        self.problems = []
        self.root = Path(config.config_file_path or "mkdocs.yml").resolve().parent
        self.package_dir = (self.root / self.config.package_dir).resolve()
        if not (self.package_dir / "__init__.py").is_file():
            raise PluginError(f"glassllm: package_dir '{self.config.package_dir}' is not the "
                              f"engine package ({self.package_dir} has no __init__.py); set "
                              f"plugins.glassllm.package_dir in mkdocs.yml to its folder, "
                              f"relative to mkdocs.yml (default: glassllm)")
        self.settings = self._settings()
        self.settings.check()
        self.katex_dist = self._katex_dist()
        # Pyodide, which `npm ci` installs beside KaTeX, and the checkout's NumPy: checked
        self.runtime_sources = runtime.pyodide_sources(
            self._npm_dir((self.root / self.config.katex_dir).resolve()), self.package_dir.parent)
        checkpoint = [Path(self.settings.checkpoint)] if self.settings.checkpoint else []
        for watched in (self.package_dir, PLUGIN_DIR, *checkpoint):
            if str(watched) not in config.watch:
                config.watch.append(str(watched))
        for css in (f"{KATEX_SITE_DIR}/katex.min.css", f"{OWN_SITE_DIR}/glassllm.css"):
            if css not in config.extra_css:
                config.extra_css.append(css)
        for script in (f"{KATEX_SITE_DIR}/katex.min.js",
                       f"{KATEX_SITE_DIR}/contrib/auto-render.min.js",
                       f"{OWN_SITE_DIR}/katex-init.js"):
            if script not in [str(s) for s in config.extra_javascript]:
                config.extra_javascript.append(script)
        self._check_theme_overrides(config)
        # true only switches Material's language menu on; overrides/partials/alternate.html
        # fills it per page (see there why it is not a list of links)
        config.extra["alternate"] = True
        self.ui, _ = self._or_last_good("ui", lambda: {
            lang.code: i18n.load_ui(config.docs_dir, lang) for lang in i18n.LANGUAGES})
        self.build_date = source.git_commit_date(self.package_dir.parent)
        return config

    @staticmethod
    def _check_theme_overrides(config) -> None:
        """The site's templates (per-page language, serve banner) must win over Material's own."""
        for name, marker in (("partials/language.html", "glassllm_theme_language"),
                             ("partials/alternate.html", "glassllm_alternate"),
                             ("main.html", "glassllm_problems")):
            found = next((Path(d) / name for d in config.theme.dirs if (Path(d) / name).is_file()), None)
            if found is None or marker not in found.read_text(encoding="utf-8"):
                raise PluginError(f"glassllm: the theme uses {found or name} instead of the site's "
                                  f"per-language template; set 'theme: custom_dir: overrides' in "
                                  f"mkdocs.yml (the folder with the glassllm {name})")

    def _settings(self):
        return example.settings_from_options(dict(self.config.example), self.root,
                                             self.package_dir)

    def _katex_dist(self) -> Path:
        katex_dir = (self.root / self.config.katex_dir).resolve()
        npm_dir = self._npm_dir(katex_dir)
        fix = (f"run 'npm ci' in {npm_dir}, or set plugins.glassllm.katex_dir in mkdocs.yml "
               f"(now '{self.config.katex_dir}') to an installed katex package")
        dist = katex_dir / "dist"
        missing = [name for name in KATEX_FILES if not (dist / name).is_file()]
        if missing or not list((dist / "fonts").glob("*.woff2")):
            raise PluginError(f"glassllm: KaTeX is not installed ({dist} lacks "
                              f"{', '.join(missing) or 'fonts/*.woff2'}): {fix}")
        wanted = self._pinned_katex(npm_dir)
        try:
            manifest = json.loads((katex_dir / "package.json").read_text(encoding="utf-8"))
            installed = manifest["version"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise PluginError(f"glassllm: cannot read KaTeX's version from "
                              f"{katex_dir}/package.json ({error}): {fix}") from error
        if wanted and installed != wanted:
            raise PluginError(f"glassllm: node_modules holds KaTeX {installed} but package.json "
                              f"pins {wanted}: run 'npm ci' in {npm_dir}")
        return dist

    def _npm_dir(self, katex_dir: Path) -> Path:
        """Where ``npm ci`` installs this KaTeX: beside node_modules/, else the site's root."""
        return katex_dir.parent.parent if katex_dir.parent.name == "node_modules" else self.root

    @staticmethod
    def _pinned_katex(npm_dir: Path) -> str | None:
        manifest = npm_dir / "package.json"
        if not manifest.is_file():
            return None
        return json.loads(manifest.read_text(encoding="utf-8")).get("dependencies", {}).get("katex")

    # -- files ----------------------------------------------------------------------------

    @_actionable
    def on_files(self, files: Files, config) -> Files:
        try:
            return self._add_generated_files(files, config)
        except (DocsBuildError, TextError) as error:
            if self.command != "serve":
                raise
            self._serve_problem(str(error))  # and no good build to show yet
            return self._add_problem_files(files, config)

    def _add_generated_files(self, files: Files, config) -> Files:
        start = time.perf_counter()
        (self.inputs, how), engine_broken = self._steps_and_run()
        self._check_translations(files)
        generated = self._pages_or_last_good(config)
        generated += self.asset_files(config)
        generated += self.runtime_files(config)
        if engine_broken:  # the last good run: its last good files
            generated += self._good.get("extra", [])
        else:
            generated += self._or_last_good("extra", lambda: self.extra_files(config))[0]
        for file in generated:
            if file.is_documentation_page():
                # on_nav places them in each language's navigation itself
                file.inclusion = InclusionLevel.NOT_IN_NAV
            if files.get_file_from_path(file.src_uri) is not None:
                raise PluginError(f"glassllm: docs/{file.src_uri} clashes with a page the plugin "
                                  f"generates; remove or rename it")
            files.append(file)
        pages = sum(1 for f in generated if f.is_documentation_page())
        log.info("generated %d pages (%d steps x %d languages, catalogs, source pages); "
                 "example run: %s; plugin: %.2f s", pages, len(self.inputs.catalog.steps),
                 len(i18n.LANGUAGES), how, time.perf_counter() - start)
        return files

    def _steps_and_run(self):
        """((the site's inputs, where the run came from), whether they are the last good).

        Under ``mkdocs serve`` a stale index is shown, not raised (the pages take the markers'
        live lines), and a broken engine keeps the last good catalog and run.
        """
        serving = self.command == "serve"

        def collect_and_run():
            data = example.load_example(self.settings, self.package_dir, allow_stale=serving,
                                        timeout=self.config.example_timeout)
            return pipeline.site_inputs(data, self.inputs), {
                "memory": "reused from memory", "disk": "reused from the disk cache",
                "child": f"{data.run.seconds:.2f} s (engine child: {data.seconds:.2f} s)",
            }[data.source]

        (inputs, how), reused = self._or_last_good("steps", collect_and_run)
        if inputs.catalog.stale_index and not reused:
            self._serve_problem(inputs.catalog.stale_index)
        return (inputs, "reused from the last good build" if reused else how), reused

    def _pages_or_last_good(self, config) -> list[File]:
        """``generate_pages``; under serve, after a text fails, the last good pages."""
        def generate():
            pages = self.generate_pages(config)
            return ([(f.src_uri, f.content_string) for f in pages], self.stashes,
                    self.step_uris, self.source_uris)

        (pages, self.stashes, self.step_uris, self.source_uris), _ = self._or_last_good(
            "pages", generate)
        return [File.generated(config, uri, content=md) for uri, md in pages]

    # -- mkdocs serve: a site even while the build has a problem ----------------------------

    def _serve_problem(self, message: str) -> None:
        """Note a problem that ``mkdocs build`` stops on: logged once, shown on every page."""
        if message in self.problems:  # e.g. a bad text, which the pages and the replay read
            return
        self.problems.append(message)
        log.warning("%s [mkdocs serve: shown on every page; mkdocs build stops here]", message)

    def _or_last_good(self, part: str, compute):
        """(``compute()``, False), remembered as the last good ``part``; under serve, if it
        fails with a build error and an earlier build had one, (that one, True)."""
        try:
            self._good[part] = result = compute()
            return result, False
        except (DocsBuildError, TextError) as error:
            if self.command != "serve" or part not in self._good:
                raise
            self._serve_problem(f"{error} (until then the pages show the last good build)")
            return self._good[part], True

    def _add_problem_files(self, files: Files, config) -> Files:
        """Under serve, with no good pages yet: each language's catalog page (and model card)
        names the problem."""
        self.stashes, self.step_uris, self.source_uris = {}, {}, {}
        for lang in i18n.LANGUAGES:
            self.step_uris[lang.code] = self.source_uris[lang.code] = []
            md = (f"# {render.md_escape(self.ui[lang.code]['catalog.title'])}\n\n"
                  + "\n\n".join(render.md_escape(p) for p in self.problems) + "\n")
            # the catalog and the model card are in mkdocs.yml's nav: both must exist
            for uri in (render.catalog_page_uri(lang), model_card.model_card_uri(lang)):
                files.append(File.generated(config, uri, content=md,
                                            inclusion=InclusionLevel.NOT_IN_NAV))
        for file in self.asset_files(config) + self.runtime_files(config):
            files.append(file)
        # the hand-written pages' links to the missing step pages would add ~100 warnings
        # to the one above; this build's config only (serve reloads it for each rebuild)
        config.validation.links.not_found = logging.DEBUG
        return files

    def _check_translations(self, files: Files) -> None:
        pipeline.check_translations([f.src_uri for f in files.documentation_pages()])

    def generate_pages(self, config) -> list[File]:
        """Step pages, catalogs and source pages, in every language, as generated files."""
        options = pipeline.PageOptions(
            docs_dir=Path(config.docs_dir), package_dir=self.package_dir,
            use_directory_urls=config.use_directory_urls,
            repo_url_of=pipeline.repo_url_of(config.repo_url, config.edit_uri, self.package_dir,
                                             self.config.source_ref,
                                             self.config.source_url_template),
            limits=(self.config.table_rows, self.config.table_cols))
        pages = pipeline.generate_pages(self.inputs, self.ui, options)
        self.stashes, self.labels = pages.stashes, pages.labels
        self.step_uris, self.source_uris = pages.step_uris, pages.source_uris
        return [File.generated(config, uri, content=md) for uri, md in pages.markdown.items()]

    def asset_files(self, config) -> list[File]:
        """KaTeX from node_modules and the plugin's own CSS/JS, copied into the site."""
        return [File.generated(config, uri, abs_src_path=str(path))
                for uri, path in pipeline.asset_paths(self.katex_dist).items()]

    def runtime_files(self, config) -> list[File]:
        """The browser runtime: Pyodide, the wheels and their lock, window.glassllm's code."""
        files = runtime.runtime_files(self.runtime_sources, self.package_dir, self.ui,
                                      {lang.html_lang: lang.code for lang in i18n.LANGUAGES})
        return [File.generated(config, uri, content=data) for uri, data in files.items()]

    def extra_files(self, config) -> list[File]:
        """Further site files built from the example run (the replay's data), after the pages."""
        files = pipeline.extra_files(self.inputs, Path(config.docs_dir), config.use_directory_urls)
        return [File.generated(config, uri, content=data) for uri, data in files.items()]

    # -- navigation -----------------------------------------------------------------------

    @_actionable
    def on_nav(self, nav: Navigation, config, files: Files) -> Navigation:
        self.navs = {}
        sections = self._language_sections(nav)
        for lang in i18n.LANGUAGES:
            ui = self.ui[lang.code]
            items = list(sections[lang.code].children)
            catalog_uri = render.catalog_page_uri(lang)
            step_pages = [files.get_file_from_path(u).page for u in self.step_uris[lang.code]]
            source_pages = [files.get_file_from_path(u).page for u in self.source_uris[lang.code]]
            # section titles are HTML in the theme's navigation: the UI text is escaped
            steps_title, source_title = escape(ui["nav.steps"]), escape(ui["nav.source"])
            for i, item in enumerate(items):
                if isinstance(item, Page) and item.file.src_uri == catalog_uri:
                    items[i] = Section(steps_title, [item, *step_pages])
                    break
            else:
                items.append(Section(steps_title, [files.get_file_from_path(catalog_uri).page,
                                                   *step_pages]))
            if source_pages:  # none while serve shows a problem instead of the pages
                items.append(Section(source_title, source_pages))
            pages = _pages_of(items)
            _link(items, parent=None)
            for previous, page, following in zip([None, *pages[:-1]], pages, [*pages[1:], None]):
                page.previous_page, page.next_page = previous, following
            lang_nav = Navigation(items, pages)
            home = files.get_file_from_path(f"{lang.prefix}index.md")
            lang_nav.homepage = home.page if home else None
            self.navs[lang.code] = lang_nav
        if self.build_date:
            # Pages carry the commit's date, not today's: two builds stay byte-identical
            # (sitemap.xml and its .gz timestamp come from it).
            for file in files.documentation_pages():
                if file.page is not None:
                    file.page.update_date = self.build_date
        return self.navs[i18n.DEFAULT.code]

    def _language_sections(self, nav: Navigation) -> dict[str, Section]:
        found = {}
        for item in nav.items:
            langs = {i18n.language_of(p.file.src_uri).code for p in _pages_of([item])}
            if not isinstance(item, Section) or len(langs) != 1:
                raise PluginError(
                    "glassllm: the nav in mkdocs.yml must hold one top-level section per "
                    "language (e.g. 'English:' with index.md ... and 'Português:' with "
                    f"pt/index.md ...); '{getattr(item, 'title', item)}' is not one")
            found[langs.pop()] = item
        missing = [lang.code for lang in i18n.LANGUAGES if lang.code not in found]
        if missing:
            raise PluginError(f"glassllm: the nav in mkdocs.yml has no section for "
                              f"language(s) {', '.join(missing)}")
        return found

    # -- per page -------------------------------------------------------------------------

    def on_page_context(self, context, page, config, nav):
        lang = i18n.language_of(page.file.src_uri)
        context["nav"] = self.navs[lang.code]
        context.update(pipeline.page_language(page.file.src_uri, self.ui,
                                                       config.use_directory_urls))
        context["glassllm_problems"] = self.problems  # overrides/main.html: the serve banner
        return context

    def on_page_markdown(self, markdown: str, page, config, files) -> str:
        """A hand-written page's ``<!-- glassllm:model-map -->`` line becomes the map."""
        lang = i18n.language_of(page.file.src_uri)
        if page.file.generated_by or lang.code not in self.labels:
            return markdown  # generated pages draw their own; no labels: a serve problem shows
        pages = pipeline.Pages(stashes=self.stashes, labels=self.labels)
        return pipeline.fill_maps(markdown, page.file.src_uri, self.inputs, pages,
                                  self.ui, config.use_directory_urls)

    def on_post_page(self, output: str, page, config) -> str:
        stash = self.stashes.get(page.file.src_uri)
        return stash.fill(output) if stash else output


def _pages_of(items) -> list[Page]:
    pages = []
    for item in items:
        if isinstance(item, Page):
            pages.append(item)
        if getattr(item, "children", None):
            pages.extend(_pages_of(item.children))
    return pages


def _link(items, parent) -> None:
    for item in items:
        item.parent = parent
        if isinstance(item, Section):
            _link(item.children, item)
