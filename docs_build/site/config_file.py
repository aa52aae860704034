"""mkdocs.yml read without a docs host, for ``generate``: the settings the site's
orchestration needs, the hand-written files of ``docs_dir``, a page's front matter.

What MkDocs would make of the same file, in the cases this site's config uses: ``INHERIT``
(the parent's mapping merged under this one, as MkDocs merges it), ``!ENV`` (an environment
variable, with a default), the default excluded files (``.*``, ``/templates/``) plus
``exclude_docs`` (gitignore patterns, read with ``pathspec``), and a YAML front matter block.
Any other YAML tag is refused with its name: ``generate`` would otherwise write a config that
means something else.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pathspec
import yaml

from ..errors import DocsBuildError
from ..text.files import yaml_problem
from .options import Options, read_options

PLUGIN_NAME = "glassllm"
DEFAULT_EXCLUDE = (".*", "/templates/")  # MkDocs' own, before exclude_docs
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkdn", ".mkd")
# MkDocs' front matter: a YAML block between '---' lines at the very start of a page
FRONT_MATTER = re.compile(r"^-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.S)


@dataclass
class SiteConfig:
    """The parts of mkdocs.yml the orchestration reads, resolved against its folder."""

    path: Path  # the mkdocs.yml read
    raw: dict  # as written, INHERIT resolved
    options: Options  # plugins.glassllm, checked, defaults filled in
    docs_dir: Path
    custom_dir: Path | None  # theme.custom_dir
    repo_url: str | None
    edit_uri: str | None
    extra_css: list = field(default_factory=list)
    extra_javascript: list = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.path.parent


class _Loader(yaml.SafeLoader):
    """YAML as MkDocs reads mkdocs.yml, less the tags a host resolves at build time."""


def _env(loader: _Loader, node: yaml.Node):
    """``!ENV NAME`` or ``!ENV [NAME, OTHER, default]``: the first variable set, else the
    default (the last item of a list), as MkDocs' ``!ENV`` (pyyaml_env_tag) reads it."""
    default = None
    if isinstance(node, yaml.ScalarNode):
        names = [loader.construct_scalar(node)]
    else:
        children = node.value
        if len(children) > 1:
            default = loader.construct_object(children[-1])
            children = children[:-1]
        names = [loader.construct_scalar(child) for child in children]
    for name in names:
        if name in os.environ:
            value = os.environ[name]
            tag = loader.resolve(yaml.ScalarNode, value, (True, False))
            return loader.construct_object(yaml.ScalarNode(tag, value))
    return default


_Loader.add_constructor("!ENV", _env)


def load_yaml(path: Path) -> dict:
    """mkdocs.yml as a mapping, its ``INHERIT`` chain merged (the child's keys win)."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            data = yaml.load(handle, Loader=_Loader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.constructor.ConstructorError as error:
        tag = re.search(r"tag '([^']*)'", str(error.problem))
        mark = error.problem_mark
        where = f":{mark.line + 1}" if mark is not None else ""
        raise DocsBuildError(f"{path}{where}: generate cannot read the YAML tag "
                             f"{tag.group(1) if tag else error.problem}; write the value itself, "
                             f"or build with mkdocs and the glassllm plugin") from error
    except yaml.YAMLError as error:
        raise DocsBuildError(f"{path}{yaml_problem(error)}") from error
    except OSError as error:
        raise DocsBuildError(f"cannot read {path} ({error.strerror})") from error
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DocsBuildError(f"{path} must hold a mapping of settings")
    parent = data.pop("INHERIT", None)
    if parent is None:
        return data
    parent_path = (Path(path).parent / str(parent)).resolve()
    if not parent_path.is_file():
        raise DocsBuildError(f"{path}: INHERIT names {parent_path}, which is not a file")
    return _merge(load_yaml(parent_path), data)


def _merge(base: dict, over: dict) -> dict:
    """``over`` on top of ``base``: mappings merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in over.items():
        out[key] = (_merge(out[key], value) if isinstance(value, dict)
                    and isinstance(out.get(key), dict) else value)
    return out


def plugin_entry(raw: dict, path: Path) -> dict | None:
    """``plugins.glassllm``'s options (``{}`` if it has none); refuses a site without it."""
    plugins = raw.get("plugins") or []
    entries = plugins.items() if isinstance(plugins, dict) else [
        next(iter(p.items())) if isinstance(p, dict) and len(p) == 1 else (p, None)
        for p in plugins]
    for name, options in entries:
        if name == PLUGIN_NAME:
            return options or {}
    raise DocsBuildError(f"{path} does not use the glassllm plugin (plugins: - glassllm); "
                         f"generate builds the site that plugin makes")


def default_edit_uri(repo_url: str | None) -> str | None:
    """The ``edit_uri`` MkDocs derives from a known host's ``repo_url``."""
    host = urlsplit(repo_url).netloc.lower() if repo_url else ""
    if host in ("github.com", "gitlab.com"):
        return "edit/master/docs/"
    if host == "bitbucket.org":
        return "src/default/docs/"
    return None


def read_config(path: Path) -> SiteConfig:
    """mkdocs.yml, checked: the plugin's options, the folders it names."""
    path = Path(path)
    if not path.is_file():
        raise DocsBuildError(f"no config file {path}; pass --config with the site's mkdocs.yml")
    path = path.resolve()
    raw = load_yaml(path)
    options = read_options(plugin_entry(raw, path))
    docs_dir = (path.parent / str(raw.get("docs_dir") or "docs")).resolve()
    if not docs_dir.is_dir():
        raise DocsBuildError(f"{path}: docs_dir {docs_dir} is not a folder")
    theme = raw.get("theme") or {}
    custom = theme.get("custom_dir") if isinstance(theme, dict) else None
    repo_url = raw.get("repo_url")
    edit_uri = raw.get("edit_uri", default_edit_uri(repo_url))
    if edit_uri and not edit_uri.endswith("/"):
        edit_uri += "/"
    return SiteConfig(path=path, raw=raw, options=options, docs_dir=docs_dir,
                      custom_dir=None if not custom else (path.parent / str(custom)).resolve(),
                      repo_url=repo_url, edit_uri=edit_uri,
                      extra_css=list(raw.get("extra_css") or []),
                      extra_javascript=list(raw.get("extra_javascript") or []))


def hand_written_files(config: SiteConfig) -> list[str]:
    """Every file of ``docs_dir`` the site includes, as source paths (``pt/index.md``), in
    MkDocs' order: folder by folder, an index first."""
    patterns = list(DEFAULT_EXCLUDE) + str(config.raw.get("exclude_docs") or "").splitlines()
    exclude = pathspec.GitIgnoreSpec.from_lines(patterns)
    found = []
    for folder, dirnames, filenames in os.walk(config.docs_dir, followlinks=True):
        dirnames.sort()
        relative = Path(folder).relative_to(config.docs_dir)
        for name in sorted(filenames, key=lambda f: (os.path.splitext(f)[0] not in
                                                      ("index", "README"), f)):
            uri = (relative / name).as_posix()
            if not exclude.match_file(uri):
                found.append(uri)
    return found


def is_page(src_uri: str) -> bool:
    return src_uri.endswith(MARKDOWN_SUFFIXES)


def front_matter(markdown: str) -> tuple[str, dict]:
    """(the page without its YAML front matter, the front matter), as MkDocs splits them."""
    match = FRONT_MATTER.match(markdown)
    if not match:
        return markdown, {}
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return markdown, {}
    if not isinstance(data, dict):
        return markdown, {}
    return markdown[match.end():].lstrip("\n"), data
