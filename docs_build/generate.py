"""``python -m docs_build generate OUTDIR``: the whole site as plain Markdown, for a host that
runs no plugin (Zensical, MkDocs 2, or MkDocs itself without the glassllm plugin).

The same pipeline as the plugin (``pipeline.py``): the markers are checked against the index
and ``STEPS``, the example runs, and every page and asset of both languages is made. OUTDIR
gets ``docs/`` (the hand-written pages with their map markers filled, the generated pages,
KaTeX, the site's CSS/JS and the replay's data), the theme's ``overrides/``, and a
``mkdocs.yml`` without the glassllm plugin: its navigation written out per language and the
CSS/JS the plugin adds to every page listed. Nothing post-processes the built HTML, so the
big tables that the plugin keeps out of the Markdown (``render.Stash``) are inline here.

OUTDIR is written beside itself first and renamed into place, so a failure leaves the
previous output (or none); an existing OUTDIR is replaced only if an earlier run made it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import i18n, pipeline, runtime
from .catalog import DocsBuildError

STAMP = ".glassllm-generate"  # marks a folder this command wrote (it may replace it)
CONFIG_NAME = "mkdocs.yml"
DOCS_DIRNAME = "docs"
OVERRIDES_DIRNAME = "overrides"
PLUGIN_NAME = "glassllm"
# Zensical resolves a relative link inside raw HTML (the map, the tables, the catalog) from the
# page's source file, MkDocs leaves it as written, relative to the page's URL. With
# ``page.html`` URLs, not ``page/``, a page's URL sits in its source file's folder, so the
# links the pipeline computes work under both hosts.
DIRECTORY_URLS = False
HEADER = ("# Written by `python -m docs_build generate` from {source}; do not edit: run the "
          "command again.\n# Build in this folder: mkdocs build   or: zensical build\n")


@dataclass(frozen=True)
class Generated:
    outdir: Path
    pages: int  # Markdown pages written (hand-written and generated)
    files: int  # every file under docs/
    markdown_bytes: int  # of all the Markdown pages
    seconds: float


def generate(outdir: Path, config_file: Path = Path(CONFIG_NAME)) -> Generated:
    """Write the site for ``config_file`` (an mkdocs.yml with the glassllm plugin) to
    ``outdir``. Raises ``DocsBuildError`` (or ``texts.TextError``) with what to do."""
    start = time.perf_counter()
    outdir = Path(outdir).resolve()
    _check_outdir(outdir)
    config, plugin = _load_config(Path(config_file))
    site = site_files(config, plugin)
    nav = pipeline.expanded_nav(_raw_config(config)["nav"], site.pages, plugin.ui)
    text = _host_config(config, nav, Path(config_file))
    tmp = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=outdir.parent))
    try:
        tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would make OUTDIR private
        docs = tmp / DOCS_DIRNAME
        for uri, content in site.files.items():
            target = docs / uri
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                target.write_text(content, encoding="utf-8")
            else:
                target.write_bytes(content)
        custom_dir = config.theme.custom_dir
        if custom_dir:
            shutil.copytree(custom_dir, tmp / OVERRIDES_DIRNAME)
        (tmp / CONFIG_NAME).write_text(text, encoding="utf-8")
        (tmp / STAMP).write_text(json.dumps({"config": str(Path(config_file).resolve())}) + "\n",
                                 encoding="utf-8")
        _replace(outdir, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    markdown = [c for u, c in site.files.items() if u.endswith(".md")]
    return Generated(outdir, len(markdown), len(site.files),
                     sum(len(m.encode("utf-8")) for m in markdown), time.perf_counter() - start)


@dataclass
class SiteFiles:
    files: dict  # site uri -> str (Markdown) | bytes
    pages: pipeline.Pages


def site_files(config, plugin) -> SiteFiles:
    """Every file of ``docs/`` for a plain host: ``config`` is the loaded mkdocs.yml after the
    glassllm plugin's ``on_config`` (``plugin``: its instance, with settings, KaTeX, UI)."""
    from mkdocs.structure.files import get_files

    hand = [f for f in get_files(config) if not f.inclusion.is_excluded()]
    pipeline.check_translations([f.src_uri for f in hand if f.is_documentation_page()])
    inputs = pipeline.load_inputs(plugin.settings, plugin.package_dir,
                                  timeout=plugin.config.example_timeout)
    options = pipeline.PageOptions(
        docs_dir=Path(config.docs_dir), package_dir=plugin.package_dir,
        use_directory_urls=DIRECTORY_URLS,
        repo_url_of=pipeline.repo_url_of(config.repo_url, config.edit_uri, plugin.package_dir,
                                         plugin.config.source_ref,
                                         plugin.config.source_url_template),
        limits=(plugin.config.table_rows, plugin.config.table_cols), inline=True)
    pages = pipeline.generate_pages(inputs, plugin.ui, options)
    generated: dict[str, str | bytes] = dict(pages.markdown)
    generated.update(pipeline.asset_files(plugin.katex_dist))
    generated.update(runtime.runtime_files(plugin.runtime_sources, plugin.package_dir, plugin.ui,
                                           {lang.html_lang: lang.code for lang in i18n.LANGUAGES}))
    generated.update(pipeline.extra_files(inputs, Path(config.docs_dir),
                                          DIRECTORY_URLS))
    files: dict[str, str | bytes] = {}
    for file in hand:
        if file.src_uri in generated:
            raise DocsBuildError(f"docs/{file.src_uri} clashes with a page the plugin "
                                 f"generates; remove or rename it")
        if file.is_documentation_page():
            files[file.src_uri] = pipeline.fill_maps(
                Path(file.abs_src_path).read_text(encoding="utf-8"), file.src_uri, inputs, pages,
                plugin.ui, DIRECTORY_URLS, inline=True)
        else:
            files[file.src_uri] = Path(file.abs_src_path).read_bytes()
    files.update(generated)
    files = {uri: with_language(content, uri, plugin.ui) if uri.endswith(".md") else content
             for uri, content in files.items()}
    return SiteFiles(files, pages)


def with_language(markdown: str, uri: str, ui: dict[str, dict[str, str]]) -> str:
    """The page with what the plugin gives its templates about its language (``<html lang>``,
    the theme's own words, the language menu) in its front matter, where the site's
    ``overrides/partials`` read it when no plugin runs."""
    from mkdocs.utils.meta import get_data

    body, meta = get_data(markdown)
    meta.update(pipeline.page_language(uri, ui, DIRECTORY_URLS))
    return f"---\n{yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)}---\n\n{body}"


def _load_config(config_file: Path):
    """mkdocs.yml loaded and checked by MkDocs, then by the glassllm plugin's ``on_config``
    (settings, KaTeX, UI texts, the theme's templates; the CSS/JS it adds to every page)."""
    from mkdocs.config import load_config
    from mkdocs.exceptions import ConfigurationError, PluginError

    if not config_file.is_file():
        raise DocsBuildError(f"no config file {config_file}; pass --config with the site's "
                             f"mkdocs.yml")
    try:
        config = load_config(str(config_file))
    except ConfigurationError as error:
        raise DocsBuildError(f"{config_file}: {error}") from error
    if PLUGIN_NAME not in config.plugins:
        raise DocsBuildError(f"{config_file} does not use the glassllm plugin (plugins: - "
                             f"glassllm); generate builds the site that plugin makes")
    plugin = config.plugins[PLUGIN_NAME]
    plugin.on_startup(command="build", dirty=False)
    try:
        config = plugin.on_config(config)
    except PluginError as error:
        raise DocsBuildError(str(error).removeprefix("glassllm: ")) from error
    return config, plugin


def _raw_config(config) -> dict:
    """mkdocs.yml as written (INHERIT resolved), not as MkDocs' validation expanded it."""
    from mkdocs.utils import yaml_load

    with open(config.config_file_path, encoding="utf-8") as handle:
        return yaml_load(handle)


def _host_config(config, nav: list, config_file: Path) -> str:
    """The mkdocs.yml of OUTDIR: the site's own without the glassllm plugin and its options,
    with the plugin's navigation and per-page CSS/JS written out."""
    raw = _raw_config(config)
    plugins = raw.get("plugins") or []
    if isinstance(plugins, dict):
        plugins = {k: v for k, v in plugins.items() if k != PLUGIN_NAME}
    else:
        plugins = [p for p in plugins if p != PLUGIN_NAME
                   and not (isinstance(p, dict) and PLUGIN_NAME in p)]
    raw["plugins"] = plugins
    raw["docs_dir"] = DOCS_DIRNAME
    raw["use_directory_urls"] = DIRECTORY_URLS
    raw["site_dir"] = "site"
    raw.pop("exclude_docs", None)  # the excluded files were not copied
    if config.theme.custom_dir:
        raw["theme"]["custom_dir"] = OVERRIDES_DIRNAME
    raw["extra_css"] = [str(css) for css in config.extra_css]
    raw["extra_javascript"] = [_script(s) for s in config.extra_javascript]
    raw["nav"] = nav
    # the language menu, which on_config switches on; each page's front matter fills it
    raw["extra"] = {**(raw.get("extra") or {}), "alternate": config.extra["alternate"]}
    return HEADER.format(source=config_file.name) + yaml.safe_dump(
        raw, allow_unicode=True, sort_keys=False, width=100)


def _script(script):
    if isinstance(script, str):
        return script
    fields = {"type": script.type, "defer": script.defer, "async": script.async_}
    extra = {k: v for k, v in fields.items() if v}
    return {"path": script.path, **extra} if extra else script.path


def _check_outdir(outdir: Path) -> None:
    if outdir.exists() and not outdir.is_dir():
        raise DocsBuildError(f"{outdir} is a file; give generate a folder to write")
    if outdir.is_dir() and any(outdir.iterdir()) and not (outdir / STAMP).is_file():
        raise DocsBuildError(f"{outdir} exists and was not written by generate (it has no "
                             f"{STAMP}); give a new folder, or remove this one yourself")
    if not outdir.parent.is_dir():
        raise DocsBuildError(f"{outdir.parent} does not exist; create it or give another OUTDIR")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _replace(outdir: Path, new: Path) -> None:
    """Put ``new`` where ``outdir`` is, replacing an earlier output in one rename each."""
    if not outdir.exists():
        os.replace(new, outdir)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.old.", dir=outdir.parent))
    os.replace(outdir, old / outdir.name)
    os.replace(new, outdir)
    shutil.rmtree(old, ignore_errors=True)
