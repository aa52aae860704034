"""How much the glassllm plugin costs a docs build, against a plain Material site.

    python scripts/bench_docs.py [--repeat 3]

Prints, from one run:

* full / plain  — our whole strict build (steps collected, example run, every generated page)
  against a plain Material build of the same number of pages with the same theme,
  extensions and texts but no plugin (target <= 1.3);
* second / plain — a second build with unchanged engine sources, as ``mkdocs serve``
  rebuilds after a text edit (the example run comes from memory) (target <= 1.1).

The disk cache of the engine child's output is off here, so "full" runs the child each time.

Every build runs in this process (imports excluded, as in ``mkdocs serve``) with
``--strict``; each figure is the median of ``--repeat`` builds after one warm-up build.
The plain site's pages hold the same step texts, equations and engine sources (as
highlighted code blocks) as ours, without the generated tables and heatmaps.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["GLASSLLM_DOCS_CACHE"] = "off"  # "full" times the engine child, not a disk cache

from docs_build.engine import load  # noqa: E402  (after sys.path)

TARGET_FULL, TARGET_SECOND = 1.3, 1.1


def _load(config_file: Path, site_dir: Path):
    from mkdocs.config import load_config

    return load_config(str(config_file), site_dir=str(site_dir), strict=True)


def _timed_build(config) -> float:
    from mkdocs.commands.build import build

    start = time.perf_counter()
    build(config)
    return time.perf_counter() - start


def plain_site(work: Path, site: Path) -> Path:
    """A Material site with the same pages as ours, written as ordinary Markdown files."""
    from docs_build.text.step_texts import load_step_texts
    from glassllm import STEPS

    docs = work / "docs"
    shutil.copytree(ROOT / "docs", docs, ignore=shutil.ignore_patterns("_texts"))
    for prefix, lang in (("", "en"), ("pt/", "pt")):
        texts = load_step_texts(ROOT / "docs", lang, list(STEPS))
        catalog = [f"# Steps ({lang})", "", "| # | step | equation |", "|---|---|---|"]
        for i, (step_id, info) in enumerate(STEPS.items()):
            text = texts[step_id]
            page = docs / f"{prefix}steps/{step_id}.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(f"# {text.label}\n\n`{step_id}`\n\n{text.body}\n## Equation\n\n"
                            f"$$\n{info.latex}\n$$\n\nPlain form: `{info.plain}`\n",
                            encoding="utf-8")
            catalog.append(f"| {i + 1} | [{text.label}]({step_id}.md) | `{step_id}` |")
        (docs / f"{prefix}steps/index.md").write_text("\n".join(catalog) + "\n", encoding="utf-8")
        for module in sorted((ROOT / "glassllm").glob("*.py")):
            page = docs / f"{prefix}source/glassllm/{module.stem}.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            code = module.read_text(encoding="utf-8")
            page.write_text(f"# glassllm/{module.name}\n\n```python linenums=\"1\"\n{code}```\n",
                            encoding="utf-8")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(docs)
    config["site_dir"] = str(site)
    config["theme"].pop("custom_dir", None)
    config["plugins"] = [p for p in config["plugins"] if not (isinstance(p, dict) and "glassllm" in p)]
    config.pop("nav", None)
    config["validation"] = {"omitted_files": "info"}  # plain pages are not in a nav
    config_file = work / "mkdocs.yml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return config_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    logging.getLogger("mkdocs").setLevel(logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="bench-docs-") as tmp:
        tmp = Path(tmp)
        plain_config = plain_site(tmp / "plain", tmp / "plain-site")
        ours = ROOT / "mkdocs.yml"

        def plain() -> float:
            return _timed_build(_load(plain_config, tmp / "plain-site"))

        def full() -> float:
            config = _load(ours, tmp / "site")
            load.clear_memory_cache()  # cold, as a fresh `mkdocs build` with no disk cache
            return _timed_build(config)

        def second() -> float:
            return _timed_build(_load(ours, tmp / "site"))  # the run of the previous build

        timings = {}
        for name, run in (("plain", plain), ("full", full), ("second", second)):
            run()  # warm-up: imports, template and Pygments caches
            timings[name] = statistics.median(run() for _ in range(args.repeat))
        n_plain = sum(1 for _ in (tmp / "plain" / "docs").rglob("*.md"))
        n_ours = sum(1 for _ in (tmp / "site").rglob("index.html"))

    ratio_full = timings["full"] / timings["plain"]
    ratio_second = timings["second"] / timings["plain"]
    print(f"pages: ours {n_ours}, plain {n_plain}")
    print(f"plain Material build : {timings['plain']:.2f} s")
    print(f"full strict build    : {timings['full']:.2f} s   ratio {ratio_full:.2f}x "
          f"(target <= {TARGET_FULL}x) {'ok' if ratio_full <= TARGET_FULL else 'OVER'}")
    print(f"second build (cached): {timings['second']:.2f} s   ratio {ratio_second:.2f}x "
          f"(target <= {TARGET_SECOND}x) {'ok' if ratio_second <= TARGET_SECOND else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
