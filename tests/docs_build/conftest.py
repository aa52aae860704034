"""The real documentation site, built once per test session into a temporary folder."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from tests import hosts
from tests.conftest import PageWatch, serve_directory

ROOT = Path(__file__).resolve().parents[2]
REPO_URL = "https://github.com/example/glassllm"
LANGS = {"en": ("", "en"), "pt": ("pt/", "pt-BR")}  # code -> (URL prefix, <html lang>)


def build_site(site_dir: Path, config_file: Path = ROOT / "mkdocs.yml", **overrides):
    """``mkdocs build --strict`` (or the session's other host) in this process; returns the
    loaded config."""
    build, load_config = hosts.build_functions()
    config = load_config(str(config_file), site_dir=str(site_dir), strict=True, **overrides)
    config.plugins.on_startup(command="build", dirty=False)
    build(config)
    return config


@dataclass
class Site:
    dir: Path
    config: object

    def __post_init__(self) -> None:
        # MkDocs keeps one plugin instance per process across load_config calls, so what the
        # plugin computed for this build is taken now, before another build replaces it
        plugin = self.config.plugins["glassllm"]
        self.example = plugin.settings  # sizes resolved (from the checkpoint, if any)
        self.facts = plugin.inputs.facts  # the text placeholders' values
        self.root = plugin.root  # the folder of the mkdocs.yml built

    def path_of(self, url: str) -> Path:
        """The file a site-relative URL (``steps/embed/``, ``x/#a``) is served from."""
        path = urlsplit(url).path.lstrip("/")
        target = self.dir / path
        return target / "index.html" if path == "" or path.endswith("/") else target

    def html(self, url: str) -> str:
        return self.path_of(url).read_text(encoding="utf-8")

    def resolve(self, page_url: str, href: str) -> str:
        """A link of the page at ``page_url`` as a site-relative URL (with its fragment)."""
        absolute = urljoin("http://site/" + page_url, href)
        parts = urlsplit(absolute)
        return parts.path.lstrip("/") + (f"#{parts.fragment}" if parts.fragment else "")


# The session's site, `site`, is built by tests/conftest.py: one build for this folder and tests/replay.


def engine_key(package_dir: Path, settings, allow_stale: bool = False) -> str:
    """The key the build caches the engine's answer for ``settings`` under."""
    from docs_build.engine import cache, runner

    request = runner.make_request(settings, Path(package_dir).resolve(), allow_stale)
    return cache.key_of(request, runner.CHILD_SOURCES)


def engine_steps() -> dict:
    """Every step as the engine's child reports it (no marker place), from glassllm's own
    step table: what a unit test of a page fragment gives it."""
    from docs_build.engine.schema import Step
    from glassllm.steps import step_table

    return {row["id"]: Step(**{**row, "axes": tuple(row["axes"]), "kinds": tuple(row["kinds"])},
                            position=i, file="glassllm/x.py", line=1)
            for i, row in enumerate(step_table())}


def engine_labels():
    """The label of every byte, as the engine's child reports them."""
    from docs_build.text.tokens import TokenLabels
    from glassllm.tokenizer import token_label

    return TokenLabels([token_label(t) for t in range(256)])


def text_of(fragment: str) -> str:
    """The visible text of an HTML fragment."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def set_serve_timeout(root: Path, seconds: int) -> None:
    """The copied checkout's mkdocs.yml with the engine child's time limit under serve
    (``plugins.glassllm.serve_timeout``) set to ``seconds``."""
    config = root / "mkdocs.yml"
    text, n = re.subn(r"^(  - glassllm:\n)", rf"\1      serve_timeout: {seconds}\n",
                      config.read_text(encoding="utf-8"), flags=re.M)
    assert n == 1
    config.write_text(text, encoding="utf-8")


def copy_checkout(dest: Path) -> Path:
    """The files a docs build reads, copied (KaTeX linked) so a test can break them."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("glassllm", "docs_build", "docs", "overrides", "scripts", "third_party"):
        shutil.copytree(ROOT / name, dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("mkdocs.yml", "properdocs.yml", "package.json", "package-lock.json", "pyproject.toml"):
        shutil.copy2(ROOT / name, dest / name)
    (dest / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    return dest


def run_build(checkout: Path, *args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    """``python -m mkdocs build --strict`` (or the session's host) in ``checkout``: its own
    glassllm and docs_build come first on sys.path, not the installed ones."""
    return subprocess.run(hosts.cli("build", "--strict", "-d", str(checkout / "site"), *args),
                          cwd=checkout, capture_output=True,
                          text=True, timeout=timeout, env=_env())


def _env() -> dict:
    import os

    env = dict(os.environ)
    env["NO_MKDOCS_2_WARNING"] = "1"
    env.pop("PYTHONPATH", None)
    return env


@pytest.fixture(scope="session")
def base_url(site):
    """The session's site (built with repo_url set), served from 127.0.0.1."""
    with serve_directory(site.dir) as url:
        yield url


@pytest.fixture
def open_page(browser, base_url):
    """Open a page of the served site in a fresh context (offline, console watched)."""
    contexts = []

    def opener(path: str, width: int = 1280, scheme: str = "light") -> PageWatch:
        context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        context.set_default_timeout(15_000)
        contexts.append(context)
        watch = PageWatch(context.new_page(), base_url.rstrip("/"))
        watch.page.goto(base_url + path)
        return watch

    yield opener
    for context in contexts:
        context.close()


def heatmap_labels(fragment: str, axis: str = "rows") -> list[str]:
    """A heatmap's row (or column) labels, in order: a ``<text>`` with several positions
    holds one label per character (values.axis_labels_svg)."""
    group = re.search(rf'<g class="gl-heatmap-{axis}"[^>]*>(.*?)</g>', fragment, re.S).group(1)
    labels = []
    for xs, ys, text in re.findall(r'<text data-at="\d+" x="([^"]*)" y="([^"]*)">([^<]*)</text>', group):
        text = html.unescape(text)
        labels += list(text) if len((ys if axis == "rows" else xs).split()) > 1 else [text]
    return labels
