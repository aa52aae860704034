"""``python -m docs_build generate OUTDIR``: the site as plain Markdown that hosts without a
plugin build (MkDocs without the glassllm plugin, Zensical), and how the command fails."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests import hosts
from tests.conftest import require_or_skip

from .conftest import LANGS, ROOT, copy_checkout

STEP_IDS = list(json.loads((ROOT / "glassllm" / "step_index.json").read_text(encoding="utf-8")))
_LINK = re.compile(r'\s(?:href|src)="([^"]*)"')
_ID = re.compile(r'\sid="([^"]*)"')


def generate(outdir: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("PYTHONPATH", None)  # cwd's docs_build and glassllm, not the installed ones
    return subprocess.run([sys.executable, "-m", "docs_build", "generate", str(outdir), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("generate") / "out"
    done = generate(out)
    assert done.returncode == 0, done.stderr
    return out


def broken_links(site: Path) -> list[str]:
    """Every relative href/src of every page that names no file of ``site`` (or no id in it)."""
    ids: dict[Path, set[str]] = {}

    def ids_of(path: Path) -> set[str]:
        if path not in ids:
            ids[path] = set(_ID.findall(path.read_text(encoding="utf-8")))
        return ids[path]

    broken = []
    # 404.html is served at any URL, so its links are root-absolute by design
    for page in sorted(p for p in site.rglob("*.html") if p.name != "404.html"):
        for link in set(_LINK.findall(page.read_text(encoding="utf-8"))):
            parts = urlsplit(html.unescape(link))
            if parts.scheme or parts.netloc or link.startswith(("data:", "mailto:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {link}")
            elif (parts.fragment and target.suffix == ".html"
                  and parts.fragment not in ids_of(target)):
                broken.append(f"{page.relative_to(site)}: {link} (no such id)")
    return broken


def assert_math_typeset(page: Path, text: str) -> None:
    """The page's formulas are KaTeX's MathML, typeset by generate: no TeX left for a script,
    no KaTeX error (code may hold backslashes)."""
    prose = re.sub(r"<(pre|code|script)\b.*?</\1>", "", text, flags=re.S)
    raw = re.search(r"\\[(\[]|\$\$", prose)
    assert raw is None, f"{page}: TeX left untypeset: {prose[raw.start() - 60:raw.end() + 60]!r}"
    assert "<math" in text and "katex-error" not in text, page


def assert_whole_site(site: Path) -> None:
    """Every step page of both languages with its equation and values, KaTeX, the replay."""
    for prefix, html_lang in LANGS.values():
        for step_id in STEP_IDS:
            page = site / prefix / "steps" / f"{step_id}.html"
            assert page.is_file(), f"no step page {page.relative_to(site)}"
            text = page.read_text(encoding="utf-8")
            assert "gl-equation" in text and 'class="gl-stats"' in text, page
            assert "gl-slot" not in text, f"{page}: a table left as a plugin placeholder"
            assert_math_typeset(page, text)
            assert "assets/katex/katex.min.js" in text, f"{page} does not load KaTeX"
            assert f'<html lang="{html_lang}"' in text, f"{page} is not marked as {html_lang}"
            # the language menu opens the same step in each language
            for other_prefix, other_lang in LANGS.values():
                link = re.search(rf'<a href="([^"]+)" hreflang="{other_lang}"', text)
                assert link, f"{page}: no language menu entry for {other_lang}"
                assert ((page.parent / link[1]).resolve()
                        == (site / other_prefix / "steps" / f"{step_id}.html").resolve()), link[1]
        for page in ("steps/index.html", "model-card.html", "source/glassllm/nn.html",
                     "replay.html"):
            assert (site / prefix / page).is_file(), f"no {prefix}{page}"
        for page in ("steps/index.html", "model.html", "model-card.html"):  # the texts' $…$ too
            assert_math_typeset(site / prefix / page, (site / prefix / page).read_text(encoding="utf-8"))
    for name in ("katex.min.js", "katex.min.css"):
        assert (site / "assets" / "katex" / name).is_file(), name
    assert list((site / "assets" / "katex" / "fonts").glob("*.woff2"))
    index = json.loads((site / "assets" / "replay" / "site.json").read_text(encoding="utf-8"))
    assert [r["id"] for r in index["recordings"]] == ["generation", "loss", "before", "training"]
    for entry in index["recordings"]:
        assert (site / "assets" / "replay" / entry["file"]).stat().st_size > 1000, entry
    for lang in ("en", "pt"):
        for url in index["pages"][lang].values():
            assert (site / url).is_file(), f"site.json links {url}, which is not in the site"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert home.count('class="gl-map-step"') == len(STEP_IDS), "the home page's map is not filled"
    assert broken_links(site) == []


def test_output_is_plain_markdown_and_a_config_without_the_plugin(generated):
    docs = generated / "docs"
    config = (generated / "mkdocs.yml").read_text(encoding="utf-8")
    assert "glassllm:" not in config and "example:" not in config
    assert "docs_dir: docs" in config and "assets/katex/katex.min.js" in config
    for prefix, _ in LANGS.values():
        assert f"- {prefix}steps/attn.softmax.md" in config, "the step pages are not in the nav"
        assert f"- {prefix}source/glassllm/nn.md" in config
    # a hand-written page's map marker is filled in the copy, and docs/_texts is not copied
    assert "glassllm:model-map" not in (docs / "index.md").read_text(encoding="utf-8")
    assert "gl-map-step" in (docs / "pt" / "index.md").read_text(encoding="utf-8")
    assert not (docs / "_texts").exists()
    assert (generated / "overrides" / "main.html").is_file()


@pytest.mark.slow  # a whole site build
def test_mkdocs_builds_the_output_strict_without_the_plugin(generated, tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(hosts.cli("build", "--strict", "-f", str(generated / "mkdocs.yml"),
                                    "-d", str(site)),
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert_whole_site(site)


@pytest.mark.slow  # a whole site build
def test_zensical_builds_the_output(generated, tmp_path):
    require_or_skip(find_spec("zensical") is not None,
                    "Zensical is not installed (pip install -e '.[zensical]'; CI installs it)",
                    "GLASSLLM_REQUIRE_ZENSICAL")
    project = tmp_path / "project"  # Zensical writes site/ and .cache/ beside its config
    shutil.copytree(generated, project)
    done = subprocess.run([sys.executable, "-m", "zensical", "build", "--strict", "-f",
                           str(project / "mkdocs.yml")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_whole_site(project / "site")


def test_generate_replaces_its_own_earlier_output(generated, tmp_path):
    out = tmp_path / "again"
    shutil.copytree(generated, out)
    # a page an older run wrote (its marker lists it) that this run does not write
    stale = b"# from an older run\n"
    (out / "docs" / "stale.md").write_bytes(stale)
    stamp = json.loads((out / ".glassllm-generate").read_text(encoding="utf-8"))
    stamp["files"]["docs/stale.md"] = hashlib.sha256(stale).hexdigest()
    (out / ".glassllm-generate").write_text(json.dumps(stamp), encoding="utf-8")
    done = generate(out)
    assert done.returncode == 0, done.stderr
    assert not (out / "docs" / "stale.md").exists()
    assert (out / "docs" / "steps" / "attn.softmax.md").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["again"], "a temporary folder was left"


def test_generate_again_keeps_the_site_built_from_its_output(generated, tmp_path):
    """docs/building.md's workflow: generate OUTDIR, build OUTDIR/mkdocs.yml (MkDocs and
    Zensical write the site to OUTDIR/site, Zensical its cache to OUTDIR/.cache), then
    generate again: the build's folders are its output's own, kept, not refused."""
    import yaml

    out = tmp_path / "again"
    shutil.copytree(generated, out)
    assert yaml.safe_load((out / "mkdocs.yml").read_text(encoding="utf-8"))["site_dir"] == "site"
    (out / "site" / "steps").mkdir(parents=True)
    (out / "site" / "steps" / "embed.html").write_text("<p>built</p>\n", encoding="utf-8")
    (out / ".cache").mkdir()
    (out / ".cache" / "search.json").write_text("{}\n", encoding="utf-8")
    done = generate(out)
    assert done.returncode == 0, done.stderr
    assert (out / "site" / "steps" / "embed.html").read_text(encoding="utf-8") == "<p>built</p>\n"
    assert (out / ".cache" / "search.json").is_file()
    stamp = json.loads((out / ".glassllm-generate").read_text(encoding="utf-8"))
    assert not [name for name in [*stamp["files"], *stamp["folders"]]
                if name.split("/")[0] in ("site", ".cache")]
    assert [p.name for p in tmp_path.iterdir()] == ["again"], "a temporary folder was left"
    # and again, now that the marker is the new one's
    assert generate(out).returncode == 0
    assert (out / "site" / "steps" / "embed.html").is_file()


def _one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("python -m docs_build generate: error: "), done.stderr
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_refuses_a_folder_it_did_not_write(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n", encoding="utf-8")
    _one_line_error(generate(out), str(out), "not written by generate")
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_failed_run_keeps_the_earlier_output(generated, tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    (checkout / "docs" / "_texts" / "pt" / "steps" / "attn.q.md").unlink()
    out = tmp_path / "out"
    shutil.copytree(generated, out)
    before = (out / "mkdocs.yml").read_text(encoding="utf-8")
    _one_line_error(generate(out, cwd=checkout), "attn.q.md")
    assert (out / "mkdocs.yml").read_text(encoding="utf-8") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkout", "out"]


def test_bad_usage_exits_2(tmp_path):
    done = generate(tmp_path / "x", "--no-such-option")
    assert done.returncode == 2 and "usage:" in done.stderr
    missing = generate(tmp_path / "x", "--config", str(tmp_path / "nope.yml"))
    _one_line_error(missing, "nope.yml")
    assert not (tmp_path / "x").exists()


# -- generate runs where no docs host is installed --------------------------------------------

NO_HOST = r'''
import importlib.abc, sys

class NoDocsHost(importlib.abc.MetaPathFinder):
    """As if neither MkDocs nor ProperDocs (nor Material, which needs them) were installed."""
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mkdocs", "properdocs", "material"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoDocsHost())
from docs_build.__main__ import main
code = main(sys.argv[1:])
assert not [m for m in sys.modules if m.split(".")[0] in ("mkdocs", "properdocs", "material")]
sys.exit(code)
'''


def test_generate_runs_with_no_docs_host_importable(generated, tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-c", NO_HOST, "generate", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    # the same site as with a host installed, file for file
    assert _tree(out) == _tree(generated)


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# -- generate deletes only what it wrote -------------------------------------------------------

def test_the_marker_lists_every_file_written_with_its_hash(generated):
    stamp = json.loads((generated / ".glassllm-generate").read_text(encoding="utf-8"))
    files = {p.relative_to(generated).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in generated.rglob("*") if p.is_file() and p.name != ".glassllm-generate"}
    assert stamp["files"] == files and "mkdocs.yml" in files and "docs/index.md" in files


@pytest.mark.parametrize("marker", ["", "{}", '{"files": {}}', '{"files": {"notes.txt": "0"}}'],
                         ids=["empty", "no-list", "empty-list", "forged-hash"])
def test_an_empty_or_forged_marker_never_deletes_a_folder(tmp_path, marker):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n", encoding="utf-8")
    (out / ".glassllm-generate").write_text(marker, encoding="utf-8")
    _one_line_error(generate(out), str(out))
    assert (out / "notes.txt").read_text(encoding="utf-8") == "keep me\n"


def test_an_output_holding_a_file_it_did_not_write_is_not_replaced(generated, tmp_path):
    out = tmp_path / "again"
    shutil.copytree(generated, out)
    (out / "docs" / "mine.md").write_text("# my own page\n", encoding="utf-8")
    _one_line_error(generate(out), "did not write", "docs/mine.md")
    assert (out / "docs" / "mine.md").read_text(encoding="utf-8") == "# my own page\n"
    edited = tmp_path / "edited"
    shutil.copytree(generated, edited)
    (edited / "docs" / "index.md").write_text("# edited by hand\n", encoding="utf-8")
    _one_line_error(generate(edited), "docs/index.md")
    assert (edited / "docs" / "index.md").read_text(encoding="utf-8") == "# edited by hand\n"


@pytest.mark.parametrize("folder", ["mine", "docs/mine", "docs/steps/empty"])
@pytest.mark.parametrize("marker", ["this", "older"])
def test_an_output_holding_an_empty_folder_it_did_not_write_is_not_replaced(generated, tmp_path,
                                                                            folder, marker):
    out = tmp_path / "again"
    shutil.copytree(generated, out)
    if marker == "older":  # a marker written before generate listed its folders
        stamp = json.loads((out / ".glassllm-generate").read_text(encoding="utf-8"))
        del stamp["folders"]
        (out / ".glassllm-generate").write_text(json.dumps(stamp), encoding="utf-8")
    (out / folder).mkdir()
    _one_line_error(generate(out), "folders generate did not write", folder)
    assert (out / folder).is_dir() and (out / "docs" / "index.md").is_file()


@pytest.mark.parametrize("where", ["docs", "docs/generated", "."])
def test_generate_into_the_sites_own_pages_is_refused_saying_so(tmp_path, where):
    checkout = copy_checkout(tmp_path / "checkout")
    before = _tree(checkout / "docs")
    done = generate(checkout / where, cwd=checkout)
    _one_line_error(done, "the site's hand-written pages", "generated files never go there")
    assert _tree(checkout / "docs") == before
    assert not (checkout / "docs" / "generated").exists()


def test_a_cache_setting_naming_a_file_is_a_one_line_error(tmp_path):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("", encoding="utf-8")
    env = dict(os.environ, GLASSLLM_DOCS_CACHE=str(not_a_folder))
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-m", "docs_build", "generate", str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    _one_line_error(done, str(not_a_folder), "is a file", "GLASSLLM_DOCS_CACHE")
