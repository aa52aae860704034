"""Rewrite glassllm/step_index.json from the `# @step` markers, or check that it is fresh.

    python scripts/build_step_index.py          # rewrite the index
    python scripts/build_step_index.py --check  # exit 1 and say what moved if it is stale
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from glassllm.steps import (PACKAGE_DIR, STEP_INDEX_NAME, describe_index_changes,  # noqa: E402
                            dump_step_index, scan_markers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if the index is stale")
    args = parser.parse_args(argv)
    path = PACKAGE_DIR / STEP_INDEX_NAME
    try:
        new = scan_markers(PACKAGE_DIR)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        old = {}
    if args.check:
        changes = [f"  {line}" for line in describe_index_changes(old, new)]
        if changes:
            print(f"{path.relative_to(ROOT)} is stale:", *changes,
                  "run: python scripts/build_step_index.py", sep="\n", file=sys.stderr)
            return 1
        print(f"{path.relative_to(ROOT)} is up to date ({len(new)} steps)")
        return 0
    text = dump_step_index(new)
    # write beside the target and rename, so an interrupted run never leaves half a file
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent,
                                     delete=False, suffix=".tmp") as handle:
        handle.write(text)
    os.replace(handle.name, path)
    print(f"wrote {path.relative_to(ROOT)} ({len(new)} steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
