"""``python -m docs_build generate OUTDIR``: the whole site as plain Markdown, for a host that
runs no plugin (Zensical, MkDocs 2, or MkDocs itself without the glassllm plugin). It needs no
docs host: mkdocs.yml is read as YAML (``site/config_file.py``).

The same orchestration as the plugin (``site/build.py``): the markers are checked against the
index and ``STEPS``, the example runs, and every page and asset of both languages is made.
OUTDIR gets ``docs/`` (the hand-written pages with their map markers filled, the generated
pages, KaTeX, the site's CSS/JS and the replay's data), the theme's ``overrides/``, and a
``mkdocs.yml`` without the glassllm plugin: its navigation written out per language and the
CSS/JS the plugin adds to every page listed. Nothing post-processes the built HTML, so the
big tables that the plugin keeps out of the Markdown (``pages.stash.Stash``) are inline here.

OUTDIR is written beside itself first and renamed into place, so a failure leaves the
previous output (or none). Its marker, ``.glassllm-generate``, lists every file written with
its SHA-256: an existing OUTDIR is replaced only when it holds exactly those files, unchanged,
so nothing generate did not write is ever deleted. OUTDIR may not be, hold or sit inside the
site's ``docs_dir``: generated files never go into the hand-written pages.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from ..errors import DocsBuildError
from ..html import markdown_math, math
from . import assets, build, katex
from .config_file import (PLUGIN_NAME, SiteConfig, front_matter, hand_written_files, is_page,
                          read_config)

STAMP = ".glassllm-generate"  # marks a folder this command wrote, listing what it wrote
CONFIG_NAME = "mkdocs.yml"
DOCS_DIRNAME = "docs"
OVERRIDES_DIRNAME = "overrides"
# What building OUTDIR/mkdocs.yml writes into OUTDIR: the site (its site_dir, MkDocs' and
# Zensical's) and Zensical's cache. generate knows them as its own output's build: it does not
# hold them to its marker, and running it again keeps them (until the next build replaces them)
BUILD_FOLDERS = ("site", ".cache")
# Zensical resolves a relative link inside raw HTML (the map, the tables, the catalog) from the
# page's source file, MkDocs leaves it as written, relative to the page's URL. With
# ``page.html`` URLs, not ``page/``, a page's URL sits in its source file's folder, so the
# links the orchestration computes work under both hosts.
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
    ``outdir``. Raises ``DocsBuildError`` with what to do."""
    start = time.perf_counter()
    outdir = Path(outdir).resolve()
    config = read_config(Path(config_file))
    check_outdir(outdir, config)
    site = site_files(config)
    nav = build.expanded_nav(config.raw["nav"], site.pages, site.ui)
    text = host_config(config, nav)
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
        if config.custom_dir:
            shutil.copytree(config.custom_dir, tmp / OVERRIDES_DIRNAME)
        (tmp / CONFIG_NAME).write_text(text, encoding="utf-8")
        stamp = {"config": str(config.path), "files": written_files(tmp),
                 "folders": written_folders(tmp)}
        (tmp / STAMP).write_text(json.dumps(stamp, indent=0, sort_keys=True) + "\n",
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
    pages: build.Pages
    ui: dict[str, dict[str, str]]


def site_files(config: SiteConfig) -> SiteFiles:
    """Every file of ``docs/`` for a plain host, as the plugin would build them."""
    options = config.options
    setup = build.site_setup(config.root, options)
    assets.check_theme_overrides([config.custom_dir] if config.custom_dir else [])
    ui = build.ui_strings(config.docs_dir)
    hand = hand_written_files(config)
    build.check_translations([uri for uri in hand if is_page(uri)])
    # what the engine's child does, as it does it (it takes most of the time); on stdout, as
    # the closing line: stderr holds the one-line error, if any
    inputs = build.load_inputs(setup.settings, setup.package_dir, timeout=options.example_timeout,
                               report=lambda message: print(message, flush=True))
    page_options = build.PageOptions(
        docs_dir=config.docs_dir, package_dir=setup.package_dir, use_directory_urls=DIRECTORY_URLS,
        repo_url_of=build.repo_url_of(config.repo_url, config.edit_uri, setup.package_dir,
                                      options.source_ref, options.source_url_template),
        limits=(options.table_rows, options.table_cols), inline=True)
    pages = build.generate_pages(inputs, ui, page_options)
    generated: dict[str, str | bytes] = dict(pages.markdown)
    generated.update(assets.asset_files(setup.katex_dist))
    generated.update(build.runtime_files(setup, ui))
    generated.update(build.extra_files(inputs, config.docs_dir, DIRECTORY_URLS))
    files: dict[str, str | bytes] = {}
    for uri in hand:
        if uri in generated:
            raise DocsBuildError(f"docs/{uri} clashes with a page the plugin generates; remove "
                                 f"or rename it")
        path = config.docs_dir / uri
        files[uri] = (build.fill_maps(path.read_text(encoding="utf-8"), uri, inputs, pages, ui,
                                      DIRECTORY_URLS, inline=True)
                      if is_page(uri) else path.read_bytes())
    files.update(generated)
    files = {uri: with_language(content, uri, ui) if uri.endswith(".md") else content
             for uri, content in files.items()}
    files.update(typeset_pages({uri: c for uri, c in files.items() if uri.endswith(".md")},
                               katex.Typesetter(setup.katex_dist.parent)))
    return SiteFiles(files, pages, ui)


def typeset_pages(markdown: dict[str, str], typesetter) -> dict[str, str]:
    """Every page's formulas typeset into its Markdown, as the plugin typesets them into its
    HTML (one KaTeX batch for the site): the fragments' markers (the equations, the worked
    numbers, the catalog) and the texts' ``$…$``, inert for Markdown. A formula KaTeX
    refuses is an error that names the page and the formula."""
    wanted = [f for text in markdown.values()
              for f in math.formulas_in(text) + markdown_math.markdown_formulas(text)]
    typeset = typesetter.render(wanted)
    out = {}
    for uri, text in markdown.items():
        def of(formula, uri=uri):
            if formula not in typeset:
                typeset.update(typesetter.render([formula]))
            done = typeset[formula]
            if done.error is not None:
                raise DocsBuildError(build.math_problem(uri, formula, done.error))
            return done.html
        text = math.typeset(text, lambda formula: markdown_math.inert(of(formula)))
        out[uri] = markdown_math.typeset_markdown(text, of)
    return out


def with_language(markdown: str, uri: str, ui: dict[str, dict[str, str]]) -> str:
    """The page with what the plugin gives its templates about its language (``<html lang>``,
    the theme's own words, the language menu) in its front matter, where the site's
    ``overrides/partials`` read it when no plugin runs."""
    body, meta = front_matter(markdown)
    meta.update(build.page_language(uri, ui, DIRECTORY_URLS))
    return f"---\n{yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)}---\n\n{body}"


def host_config(config: SiteConfig, nav: list) -> str:
    """The mkdocs.yml of OUTDIR: the site's own without the glassllm plugin and its options,
    with the plugin's navigation and per-page CSS/JS written out."""
    raw = dict(config.raw)
    plugins = raw.get("plugins") or []
    if isinstance(plugins, dict):
        plugins = {k: v for k, v in plugins.items() if k != PLUGIN_NAME}
    else:
        plugins = [p for p in plugins if p != PLUGIN_NAME
                   and not (isinstance(p, dict) and PLUGIN_NAME in p)]
    raw["plugins"] = plugins
    raw["docs_dir"] = DOCS_DIRNAME
    raw["use_directory_urls"] = DIRECTORY_URLS
    raw["site_dir"] = BUILD_FOLDERS[0]
    raw.pop("exclude_docs", None)  # the excluded files were not copied
    if config.custom_dir:
        raw["theme"] = {**raw["theme"], "custom_dir": OVERRIDES_DIRNAME}
    css = [str(entry) for entry in config.extra_css]
    scripts = [_script(entry) for entry in config.extra_javascript]
    # what the plugin adds to every page (host/plugin.py: on_config)
    css += [uri for uri in assets.PAGE_CSS if uri not in css]
    scripts += [uri for uri in assets.PAGE_SCRIPTS
                if uri not in [s if isinstance(s, str) else s["path"] for s in scripts]]
    raw["extra_css"] = css
    raw["extra_javascript"] = scripts
    raw["nav"] = nav
    # the language menu, which the plugin switches on; each page's front matter fills it
    raw["extra"] = {**(raw.get("extra") or {}), "alternate": True}
    return HEADER.format(source=config.path.name) + yaml.safe_dump(
        raw, allow_unicode=True, sort_keys=False, width=100)


def _script(entry):
    """An ``extra_javascript`` entry as MkDocs writes it back: the path alone, or the path
    with its set attributes."""
    if isinstance(entry, str):
        return entry
    extra = {key: entry[key] for key in ("type", "defer", "async") if entry.get(key)}
    return {"path": entry["path"], **extra} if extra else entry["path"]


# -- OUTDIR: only ever a folder generate wrote -------------------------------------------------

def _built(rel: str) -> bool:
    """Whether a path of OUTDIR lies in a folder that building it wrote (``BUILD_FOLDERS``)."""
    return rel.split("/", 1)[0] in BUILD_FOLDERS


def written_files(folder: Path) -> dict[str, str]:
    """Every file (or link) under ``folder`` but the marker and the build's: relative path ->
    SHA-256."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if rel == STAMP or _built(rel) or (path.is_dir() and not path.is_symlink()):
            continue
        content = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        out[rel] = hashlib.sha256(content).hexdigest()
    return out


def written_folders(folder: Path) -> list[str]:
    """Every folder under ``folder`` (not a link to one), empty or not, but the build's:
    relative paths."""
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*")
                  if path.is_dir() and not path.is_symlink()
                  and not _built(path.relative_to(folder).as_posix()))


def check_outdir(outdir: Path, config: SiteConfig) -> None:
    """Refuse an OUTDIR generate may not write: a file, the site's own pages, or a folder
    holding anything an earlier generate did not write."""
    docs_dir = config.docs_dir
    if outdir == docs_dir or docs_dir in outdir.parents or outdir in docs_dir.parents:
        where = ("is" if outdir == docs_dir else "is inside" if docs_dir in outdir.parents
                 else "holds")
        raise DocsBuildError(f"{outdir} {where} the site's hand-written pages ({docs_dir}, "
                             f"docs_dir in {config.path.name}); generated files never go there: "
                             f"give a folder outside it, e.g. build/site-src")
    if outdir.exists() and not outdir.is_dir():
        raise DocsBuildError(f"{outdir} is a file; give generate a folder to write")
    if not outdir.parent.is_dir():
        raise DocsBuildError(f"{outdir.parent} does not exist; create it or give another OUTDIR")
    if not outdir.is_dir() or not any(outdir.iterdir()):
        return
    stamp = outdir / STAMP
    if not stamp.is_file():
        raise DocsBuildError(f"{outdir} exists and was not written by generate (it has no "
                             f"{STAMP}); give a new folder, or remove this one yourself")
    try:
        marker = json.loads(stamp.read_text(encoding="utf-8"))
        listed = marker["files"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DocsBuildError(f"{stamp} does not list the files generate wrote ({error!r}); "
                             f"give a new folder, or remove this one yourself") from None
    listed = listed if isinstance(listed, dict) else {}
    present = written_files(outdir)
    if not listed or present != listed:
        changed = sorted(name for name in set(present) | set(listed)
                         if present.get(name) != listed.get(name))
        raise DocsBuildError(f"{outdir} holds files generate did not write, or changed since "
                             f"({', '.join(changed[:3]) or 'an empty list'}"
                             f"{', …' if len(changed) > 3 else ''}); it is not replaced: give a "
                             f"new folder, or remove this one yourself")
    # a folder holding no file (an empty one a reader made) is no file to compare, but
    # replacing OUTDIR would delete it too
    folders = marker.get("folders")
    if not isinstance(folders, list):  # a marker of before folders were listed
        folders = [parent.as_posix() for name in listed for parent in PurePosixPath(name).parents]
    extra = sorted(set(written_folders(outdir)) - set(folders))
    if extra:
        raise DocsBuildError(f"{outdir} holds folders generate did not write "
                             f"({', '.join(extra[:3])}{', …' if len(extra) > 3 else ''}); it is "
                             f"not replaced, which would delete them: give a new folder, or "
                             f"move them out yourself")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _replace(outdir: Path, new: Path) -> None:
    """Put ``new`` where ``outdir`` is, replacing an earlier output in one rename each; the
    earlier output's build (``BUILD_FOLDERS``) moves into the new one."""
    if not outdir.exists():
        os.replace(new, outdir)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.old.", dir=outdir.parent))
    os.replace(outdir, old / outdir.name)
    os.replace(new, outdir)
    for name in BUILD_FOLDERS:
        built = old / outdir.name / name
        if built.exists() or built.is_symlink():
            os.replace(built, outdir / name)
    shutil.rmtree(old, ignore_errors=True)
