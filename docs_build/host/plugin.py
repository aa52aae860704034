"""The ``glassllm`` MkDocs plugin: MkDocs' events, each a call into the site's orchestration
(``site/build.py``). Events, in build order:

* ``on_config``  – check the example settings, KaTeX and the theme's templates, watch the
  engine and the plugin, add KaTeX and the site's CSS/JS to every page;
* ``on_files``   – the steps (markers vs index vs ``STEPS``), the example run, the head study
  and the replay's recordings, from the engine's child process (cached in memory across
  ``mkdocs serve`` rebuilds and on disk); every step page, the catalog, the model card and
  the source pages in both languages, plus the asset files and the replay's data;
* ``on_nav``     – split the navigation per language and expand the steps section;
* ``on_page_markdown`` – put the map of the model where a hand-written page has the line
  ``<!-- glassllm:model-map -->`` (``... small -->`` for the thumbnail);
* ``on_page_context`` – give each page its own language's navigation, ``<html lang>`` and
  language switcher (to the same page in the other language);
* ``on_page_content`` – note the page's formulas (its own and its big HTML blocks');
* ``on_env``     – typeset every formula of the site in one batch of KaTeX (``site/katex.py``);
* ``on_post_page`` – put each page's big HTML blocks into its finished HTML, and its formulas
  as KaTeX typeset them (a formula KaTeX refuses is a warning naming the page: ``--strict``
  fails on it).

Nothing is ever written into ``docs/``: every page is a ``File.generated``. The engine runs
only in a child process, so this process never imports ``glassllm``: under ``mkdocs serve`` an
edited engine is simply the code the next child runs. The ``docs_build`` modules themselves
are imported once: after editing them (other than the child's), restart ``mkdocs serve``.
Under serve the child may take ``serve_timeout`` seconds, and a problem shows on every page
instead of stopping the server (``host/serve.py``); ``mkdocs build`` still stops.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.nav import Navigation

from ..engine.runner import TIMEOUT_OPTION
from ..errors import DocsBuildError
from ..site import assets, build, git, katex
from ..text import languages
from . import serve
from .config import GlassLMConfig
from .nav import language_navs

log = get_plugin_logger("glassllm")

PLUGIN_DIR = Path(__file__).resolve().parents[1]
SERVE_TIMEOUT_OPTION = ("plugins.glassllm.serve_timeout in mkdocs.yml: under mkdocs serve the "
                        "pages show the last good build meanwhile")


def _actionable(method):
    """Turn the build's errors into PluginError, so plain and --strict builds stop."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except PluginError:
            raise
        except DocsBuildError as error:
            raise PluginError(f"glassllm: {error}") from error
    return wrapper


class GlassLMPlugin(BasePlugin[GlassLMConfig]):
    def __init__(self) -> None:
        # the example's data and the facts computed from it (build.SiteInputs); the engine's
        # answer stays in memory across `mkdocs serve` rebuilds, and site_inputs keeps the
        # facts of the same run, so that editing a text reruns neither
        self.inputs: build.SiteInputs | None = None
        self.root = Path.cwd()
        self.package_dir = self.root / "glassllm"
        self.command = "build"
        self.fallback = serve.Fallback()
        self.pages = build.Pages()
        self.typesetter: katex.Typesetter | None = None
        self.formulas: dict[str, list] = {}  # page src uri -> its formulas (on_page_content)
        self.typeset: dict = {}  # formula -> katex.Typeset, for this build's pages

    @property
    def problems(self) -> list[str]:
        """What the pages' banner says is wrong now (``mkdocs serve`` only)."""
        return self.fallback.problems

    def on_startup(self, *, command: str, dirty: bool) -> None:
        # Defining on_startup keeps this instance (and its cache) across `mkdocs serve` rebuilds.
        self.command = command
        self.fallback.serving = command == "serve"

    @_actionable
    def on_config(self, config):
        self.fallback.problems = []
        self.root = Path(config.config_file_path or "mkdocs.yml").resolve().parent
        setup = build.site_setup(self.root, self.config)
        self.setup = setup
        self.package_dir, self.settings, self.katex_dist = (setup.package_dir, setup.settings,
                                                            setup.katex_dist)
        if self.typesetter is None or self.typesetter.katex_dir != self.katex_dist.parent:
            self.typesetter = katex.Typesetter(self.katex_dist.parent)
        self.formulas = {}
        checkpoint = [Path(self.settings.checkpoint)] if self.settings.checkpoint else []
        for watched in (self.package_dir, PLUGIN_DIR, *checkpoint):
            if str(watched) not in config.watch:
                config.watch.append(str(watched))
        for css in assets.PAGE_CSS:
            if css not in config.extra_css:
                config.extra_css.append(css)
        for script in assets.PAGE_SCRIPTS:
            if script not in [str(s) for s in config.extra_javascript]:
                config.extra_javascript.append(script)
        assets.check_theme_overrides(config.theme.dirs)
        # true only switches Material's language menu on; overrides/partials/alternate.html
        # fills it per page (see there why it is not a list of links)
        config.extra["alternate"] = True
        self.ui, _ = self.fallback.or_last_good("ui", lambda: build.ui_strings(config.docs_dir))
        self.build_date = git.git_commit_date(self.package_dir.parent)
        return config

    @_actionable
    def on_files(self, files: Files, config) -> Files:
        try:
            return self._add_generated_files(files, config)
        except DocsBuildError as error:
            if self.command != "serve":
                raise
            self.fallback.problem(str(error))  # and no good build to show yet
            self.pages = build.Pages(step_uris={lang.code: [] for lang in languages.LANGUAGES},
                                     source_uris={lang.code: [] for lang in languages.LANGUAGES})
            return serve.problem_files(files, config, self.ui, self.problems,
                                       self.asset_files(config) + self.runtime_files(config))

    def _add_generated_files(self, files: Files, config) -> Files:
        start = time.perf_counter()
        (self.inputs, how), engine_broken = self._steps_and_run()
        build.check_translations([f.src_uri for f in files.documentation_pages()])
        generated = self._pages_or_last_good(config)
        generated += self.asset_files(config)
        generated += self.runtime_files(config)
        if engine_broken:  # the last good run: its last good files
            generated += self.fallback.good.get("extra", [])
        else:
            generated += self.fallback.or_last_good("extra", lambda: self.extra_files(config))[0]
        for file in generated:
            if file.is_documentation_page():
                # on_nav places them in each language's navigation itself
                file.inclusion = InclusionLevel.NOT_IN_NAV
            if files.get_file_from_path(file.src_uri) is not None:
                raise PluginError(f"glassllm: docs/{file.src_uri} clashes with a page the plugin "
                                  f"generates; remove or rename it")
            files.append(file)
        count = sum(1 for f in generated if f.is_documentation_page())
        log.info("generated %d pages (%d steps x %d languages, catalogs, source pages); "
                 "example run: %s; plugin: %.2f s", count, len(self.inputs.catalog.steps),
                 len(languages.LANGUAGES), how, time.perf_counter() - start)
        return files

    def _steps_and_run(self):
        """((the site's inputs, where the run came from), whether they are the last good).

        Under ``mkdocs serve`` a stale index is shown, not raised (the pages take the markers'
        live lines), the child has ``serve_timeout`` seconds, and a broken engine keeps the
        last good catalog and run.
        """
        serving = self.command == "serve"
        timeout, option = ((self.config.serve_timeout, SERVE_TIMEOUT_OPTION) if serving
                           else (self.config.example_timeout, TIMEOUT_OPTION))

        def collect_and_run():
            inputs = build.load_inputs(self.settings, self.package_dir, allow_stale=serving,
                                       timeout=timeout, timeout_option=option,
                                       previous=self.inputs, report=log.info)
            return inputs, {
                "memory": "reused from memory", "disk": "reused from the disk cache",
                "child": f"by the engine child, {inputs.seconds:.2f} s (its stages above)",
            }[inputs.source]

        (inputs, how), reused = self.fallback.or_last_good("steps", collect_and_run)
        if inputs.catalog.stale_index and not reused:
            self.fallback.problem(inputs.catalog.stale_index)
        return (inputs, "reused from the last good build" if reused else how), reused

    def _pages_or_last_good(self, config) -> list[File]:
        """``generate_pages``; under serve, after a text fails, the last good pages."""
        self.pages, _ = self.fallback.or_last_good("pages", lambda: build.generate_pages(
            self.inputs, self.ui, self._page_options(config)))
        return [File.generated(config, uri, content=md) for uri, md in self.pages.markdown.items()]

    def _page_options(self, config) -> build.PageOptions:
        return build.PageOptions(
            docs_dir=Path(config.docs_dir), package_dir=self.package_dir,
            use_directory_urls=config.use_directory_urls,
            repo_url_of=build.repo_url_of(config.repo_url, config.edit_uri, self.package_dir,
                                          self.config.source_ref,
                                          self.config.source_url_template),
            limits=(self.config.table_rows, self.config.table_cols))

    def asset_files(self, config) -> list[File]:
        """KaTeX from node_modules and the plugin's own CSS/JS, copied into the site."""
        return [File.generated(config, uri, abs_src_path=str(path))
                for uri, path in assets.asset_paths(self.katex_dist).items()]

    def runtime_files(self, config) -> list[File]:
        """The browser runtime: Pyodide, the wheels and their lock, window.glassllm's code."""
        return [File.generated(config, uri, content=data)
                for uri, data in build.runtime_files(self.setup, self.ui).items()]

    def extra_files(self, config) -> list[File]:
        """Further site files built from the example run (the replay's data), after the pages."""
        files = build.extra_files(self.inputs, Path(config.docs_dir), config.use_directory_urls)
        return [File.generated(config, uri, content=data) for uri, data in files.items()]

    @_actionable
    def on_nav(self, nav: Navigation, config, files: Files) -> Navigation:
        self.navs = language_navs(nav, files, self.ui, self.pages.step_uris,
                                  self.pages.source_uris)
        if self.build_date:
            # Pages carry the commit's date, not today's: two builds stay byte-identical
            # (sitemap.xml and its .gz timestamp come from it).
            for file in files.documentation_pages():
                if file.page is not None:
                    file.page.update_date = self.build_date
        return self.navs[languages.DEFAULT.code]

    def on_page_context(self, context, page, config, nav):
        lang = languages.language_of(page.file.src_uri)
        context["nav"] = self.navs[lang.code]
        context.update(build.page_language(page.file.src_uri, self.ui, config.use_directory_urls))
        context["glassllm_problems"] = self.problems  # overrides/main.html: the serve banner
        return context

    def on_page_markdown(self, markdown: str, page, config, files) -> str:
        """A hand-written page's ``<!-- glassllm:model-map -->`` line becomes the map."""
        lang = languages.language_of(page.file.src_uri)
        if page.file.generated_by or lang.code not in self.pages.labels:
            return markdown  # generated pages draw their own; no labels: a serve problem shows
        return build.fill_maps(markdown, page.file.src_uri, self.inputs, self.pages, self.ui,
                               config.use_directory_urls)

    def on_page_content(self, html: str, page, config, files) -> str:
        uri = page.file.src_uri
        self.formulas[uri] = build.page_formulas(html, self.pages.stashes.get(uri))
        return html

    @_actionable
    def on_env(self, env, config, files):
        start = time.perf_counter()
        runs = self.typesetter.node_runs
        wanted = [f for formulas in self.formulas.values() for f in formulas]
        self.typeset = self.typesetter.render(wanted)
        log.info("typeset %d formulas (%d distinct) with KaTeX %s: %s, %.2f s", len(wanted),
                 len(self.typeset), self.typesetter.version,
                 "one Node.js batch" if self.typesetter.node_runs > runs else "all cached",
                 time.perf_counter() - start)
        # Jinja's own whitespace control for the theme's templates: the newline after a block
        # tag and the indent before one are dropped, about 6 KB of blank lines and indents per
        # page of Material's navigation. The page's content is a variable, which this never touches.
        env.trim_blocks = env.lstrip_blocks = True
        return env

    @_actionable
    def on_post_page(self, output: str, page, config) -> str:
        uri = page.file.src_uri
        stash = self.pages.stashes.get(uri)
        output = stash.fill(output) if stash else output
        missing = [f for f in build.page_formulas(output) if f not in self.typeset]
        if missing:  # a formula no page had at on_page_content (none, as the site stands)
            self.typeset.update(self.typesetter.render(missing))
        output, problems = build.typeset_page(output, uri, self.typeset)
        for problem in problems:
            log.warning(problem)
        return output
