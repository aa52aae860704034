"""The files every page needs besides its own: KaTeX from node_modules (checked against the
version package.json pins) and the site's own CSS and JS; and the site's theme templates,
which must win over the theme's own."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import DocsBuildError

ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
KATEX_SITE_DIR = "assets/katex"
OWN_SITE_DIR = "assets/glassllm"
# The KaTeX files the site needs (fonts: the woff2 ones, which every browser we target reads).
# The pages' formulas are typeset at build (site/katex.py): the pages need KaTeX's CSS and
# fonts; its script only serves the replay, which typesets each event's equation as it plays.
KATEX_FILES = ("katex.min.css", "katex.min.js")
OWN_FILES = ("glassllm.css", "heatmap.js", "sampling.js", "stepview.js", "timelapse.js", "worked.js")
# What every page loads, in order, besides the theme's and mkdocs.yml's own
PAGE_CSS = (f"{KATEX_SITE_DIR}/katex.min.css", f"{OWN_SITE_DIR}/glassllm.css")
PAGE_SCRIPTS = (f"{KATEX_SITE_DIR}/katex.min.js",)
# The site's templates (per-page language, serve banner) and a variable each one reads
THEME_OVERRIDES = (("partials/language.html", "glassllm_theme_language"),
                   ("partials/alternate.html", "glassllm_alternate"),
                   ("main.html", "glassllm_problems"))


def asset_paths(katex_dist: Path) -> dict[str, Path]:
    """KaTeX from node_modules and the plugin's own CSS/JS: site uri -> the file to copy."""
    katex_dist = Path(katex_dist)
    out = {f"{KATEX_SITE_DIR}/{name}": katex_dist / name for name in KATEX_FILES}
    out.update({f"{KATEX_SITE_DIR}/fonts/{font.name}": font
                for font in sorted((katex_dist / "fonts").glob("*.woff2"))})
    out.update({f"{OWN_SITE_DIR}/{name}": ASSETS_DIR / name for name in OWN_FILES})
    return out


def asset_files(katex_dist: Path) -> dict[str, bytes]:
    return {uri: path.read_bytes() for uri, path in asset_paths(katex_dist).items()}

def katex_dist(root: Path, katex_dir: str) -> Path:
    """KaTeX's ``dist`` folder under ``root / katex_dir`` (the plugin's ``katex_dir``
    option), checked: its files present, its version the one package.json pins."""
    folder = (Path(root) / katex_dir).resolve()
    npm_dir = npm_dir_of(root, katex_dir)
    fix = (f"run 'npm ci' in {npm_dir}, or set plugins.glassllm.katex_dir in mkdocs.yml "
           f"(now '{katex_dir}') to an installed katex package")
    dist = folder / "dist"
    missing = [name for name in KATEX_FILES if not (dist / name).is_file()]
    if missing or not list((dist / "fonts").glob("*.woff2")):
        raise DocsBuildError(f"KaTeX is not installed ({dist} lacks "
                             f"{', '.join(missing) or 'fonts/*.woff2'}): {fix}")
    wanted = _pinned_katex(npm_dir)
    try:
        manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
        installed = manifest["version"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DocsBuildError(f"cannot read KaTeX's version from {folder}/package.json "
                             f"({error}): {fix}") from error
    if wanted and installed != wanted:
        raise DocsBuildError(f"node_modules holds KaTeX {installed} but package.json pins "
                             f"{wanted}: run 'npm ci' in {npm_dir}")
    return dist


def npm_dir_of(root: Path, katex_dir: str) -> Path:
    """Where ``npm ci`` installed KaTeX (and Pyodide, the browser runtime's): the folder
    holding the ``node_modules`` of ``root / katex_dir``, else ``root``."""
    folder = (Path(root) / katex_dir).resolve()
    return folder.parent.parent if folder.parent.name == "node_modules" else Path(root)


def _pinned_katex(npm_dir: Path) -> str | None:
    manifest = npm_dir / "package.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text(encoding="utf-8")).get("dependencies", {}).get("katex")


def check_theme_overrides(theme_dirs) -> None:
    """The site's templates must be the ones the theme finds first in ``theme_dirs``."""
    for name, marker in THEME_OVERRIDES:
        found = next((Path(d) / name for d in theme_dirs if (Path(d) / name).is_file()), None)
        if found is None or marker not in found.read_text(encoding="utf-8"):
            raise DocsBuildError(f"the theme uses {found or name} instead of the site's "
                                 f"per-language template; set 'theme: custom_dir: overrides' in "
                                 f"mkdocs.yml (the folder with the glassllm {name})")
