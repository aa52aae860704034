"""``python -m docs_build generate OUTDIR [--config mkdocs.yml]``: the site as plain Markdown
and assets for a host that runs no plugin (see ``docs_build/site/generate.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import DocsBuildError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs_build",
                                     description="The glassllm site without a plugin host.")
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser(
        "generate", help="write the site's Markdown, assets and a plain mkdocs.yml to OUTDIR",
        description="Run the site's pipeline (markers, the example run, every page and asset "
                    "of both languages) and write OUTDIR/docs and OUTDIR/mkdocs.yml, which "
                    "MkDocs or Zensical build without the glassllm plugin.")
    gen.add_argument("outdir", metavar="OUTDIR", type=Path,
                     help="a new folder, or one an earlier generate wrote (it is replaced)")
    gen.add_argument("--config", "-f", type=Path, default=Path("mkdocs.yml"),
                     help="the site's mkdocs.yml (default: mkdocs.yml)")
    args = parser.parse_args(argv)
    from .site.generate import generate  # runs the engine: not needed for --help

    try:
        done = generate(args.outdir, args.config)
    except DocsBuildError as error:
        print(f"python -m docs_build generate: error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {done.outdir}: {done.pages} pages ({done.markdown_bytes / 1e6:.1f} MB of "
          f"Markdown), {done.files} files under docs/, in {done.seconds:.1f} s; build it with "
          f"'mkdocs build -f {done.outdir}/mkdocs.yml' or 'zensical build -f "
          f"{done.outdir}/mkdocs.yml'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
