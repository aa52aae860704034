"""Rewrite glassllm/step_index.json from the `# @step` markers and glassllm/grad_index.json
from the `# @grad` markers (the backward pass), or check that both are fresh.

    python scripts/build_step_index.py          # rewrite the indexes
    python scripts/build_step_index.py --check  # exit 1 and say what moved if one is stale
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

from glassllm.backward import GRAD_INDEX_NAME, scan_grad_markers  # noqa: E402
from glassllm.steps import (PACKAGE_DIR, STEP_INDEX_NAME, describe_index_changes,  # noqa: E402
                            dump_step_index, scan_markers)

# each index: its file and the scan of the markers it is built from
INDEXES = ((STEP_INDEX_NAME, scan_markers, "steps"), (GRAD_INDEX_NAME, scan_grad_markers, "backward steps"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if an index is stale")
    args = parser.parse_args(argv)
    scanned = []
    for name, scan, what in INDEXES:
        try:
            scanned.append((PACKAGE_DIR / name, scan(PACKAGE_DIR), what))
        except ValueError as error:  # nothing is written while any marker is wrong
            print(f"error: {error}", file=sys.stderr)
            return 2
    if args.check:
        status = 0
        for path, new, what in scanned:
            try:
                old = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                old = {}
            changes = [f"  {line}" for line in describe_index_changes(old, new)]
            if changes:
                print(f"{path.relative_to(ROOT)} is stale:", *changes,
                      "run: python scripts/build_step_index.py", sep="\n", file=sys.stderr)
                status = 1
            else:
                print(f"{path.relative_to(ROOT)} is up to date ({len(new)} {what})")
        return status
    for path, new, what in scanned:
        # write beside the target and rename, so an interrupted run never leaves half a file
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent,
                                         delete=False, suffix=".tmp") as handle:
            handle.write(dump_step_index(new))
        os.replace(handle.name, path)
        print(f"wrote {path.relative_to(ROOT)} ({len(new)} {what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
