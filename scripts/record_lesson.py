"""Record the induction lesson the "Watch it learn" page plays.

    python scripts/record_lesson.py             # docs_build/data/lesson_induction.json

Runs ``glassllm.lessons.induction(seed)`` to the end (about a minute of one thread on a quiet
machine) with progress on stderr, and writes the recording atomically. Run it again whenever
the engine's numbers change: ``tests/docs_build/test_lesson_page.py`` holds the file's first
snapshots to a fresh short run and says so when they differ.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs_build.data.lesson import ATTENTION, RECORDING, VERSION, attention_bytes  # noqa: E402
from glassllm import __version__, lessons  # noqa: E402
from glassllm.circuits import COLLAPSES, QUALIFIES  # noqa: E402
from glassllm.lessons import SNAPSHOT_EVERY, STEPS, Lesson  # noqa: E402


def recording(lesson, seconds: float | None = None) -> dict:
    """A finished lesson as JSON-ready data: settings, probe, snapshots and check. Here, not in
    docs_build/data/lesson.py: the build process never imports the engine (only its child does)."""
    if not lesson.done:
        raise ValueError("the lesson has not finished: run it to the end (lesson.advance())")
    probe = lesson.probe
    history = []
    for snapshot in lesson.history:
        entry = snapshot.to_dict()
        for name in ATTENTION:
            entry[name] = attention_bytes(getattr(snapshot, name))
        history.append(entry)
    check = asdict(lesson.check)
    return {
        "version": VERSION, "glassllm": __version__, "seed": lesson.seed,
        "steps": lesson.steps, "snapshot_every": lesson.snapshot_every,
        "config": {k: v for k, v in asdict(lesson.config).items()},
        "training": {"batch": lessons.BATCH, "lr": lessons.LR, "warmup": lessons.WARMUP,
                     "span": list(lessons.SPAN), "prefix": lessons.PREFIX},
        "qualifies": QUALIFIES, "collapses": COLLAPSES,
        "probe": {"tokens": probe.inputs, "first": probe.first, "second": probe.second,
                  "length": probe.length, "count": len(lesson.probes)},
        "formed": lesson.formed, "check": check, "history": history,
        "seconds": seconds,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--snapshot-every", type=int, default=SNAPSHOT_EVERY)
    parser.add_argument("--out", type=Path, default=RECORDING)
    args = parser.parse_args(argv)
    lesson = Lesson(args.seed, steps=args.steps, snapshot_every=args.snapshot_every)
    start = time.perf_counter()
    while not lesson.done:
        for s in lesson.advance(args.snapshot_every):
            print(f"step {s.step:5d}  {time.perf_counter() - start:6.1f} s  loss {s.loss:.3f}  "
                  f"copies {s.first_copy_loss:.3f} / {s.second_copy_loss:.3f}  "
                  f"previous-token {s.previous_token:.2f}  induction {s.induction:.2f}",
                  file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    data = recording(lesson, seconds=round(seconds, 1))
    print(f"formed: {data['formed']}; previous-token first: "
          f"{data['check']['previous_token_first']}; ablation breaks the copy: "
          f"{data['check']['ablation_breaks_copy']}; {seconds:.1f} s", file=sys.stderr)
    temporary = args.out.with_name(args.out.name + ".tmp")
    temporary.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    os.replace(temporary, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
