"""Replay benchmark: a SmolLM-135M-shaped recording, its size, and how fast the page opens it.

    python scripts/bench_replay.py [--site DIR] [--scrubs 8] [--keep DIR]

Builds SmolLM-135M's shape in memory (d576, 30 layers, 9 heads, 3 KV heads, MLP 1536, vocab
49152, tied embeddings; random weights, no download), records a one-token generation after a
64-token prompt (one traced forward, 545 events) and prints:

1. the file's size in the binary format (float32 and float16) and the version 1 JSON
   estimate, against ``estimate_size``, and the time to write and to read each back;
2. in Debian's chromium through Playwright, on the built site (``--site``, else built now
   with ``mkdocs build --strict`` into a temporary folder), the time from the start to the
   first event rendered, and the time of a scrub step (the timeline moved to an event,
   until that event is drawn), for:
   - the file picker ("Open your own run": the page reads the index, then each event's
     bytes with File.slice),
   - the page fetching it from a server without Range (as ``python -m http.server``: one
     download of the whole file, read as it arrives and decoded lazily),
   - the page fetching it from a server that honours Range (GitHub Pages does: the first
     256 KB, then one request per event shown).
   target: open < 2 s (from the page's load event to the first event drawn, on the page's
   own clock; for the file picker, from choosing the file); a scrub step interactive.

A measurement, not a test: on a shared machine the times vary with the load (printed
first). Needs the dev extra (playwright; pytest, for the tests' server) and /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from glassllm import Config, GlassLM  # noqa: E402
from glassllm.recording import (estimate_size, read_recording, record_generation,  # noqa: E402
                                write_recording)
from tests.conftest import QuietHandler, serve_directory  # noqa: E402  (the tests' server)

# scripts/bench_engine.py's SmolLM shape; max_len leaves room for the generated token
SMOLLM = dict(vocab_size=49152, d_model=576, n_layers=30, n_heads=9, n_kv_heads=3, d_ff=1536,
              max_len=128, tie_word_embeddings=True)
PROMPT_TOKENS = 64
CHROMIUM = "/usr/bin/chromium"
TARGET_OPEN_S = 2.0


class _RangeHandler(QuietHandler):
    """Answers ``Range: bytes=a-b`` with 206, as GitHub Pages does."""

    def send_head(self):
        header = self.headers.get("Range")
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", header or "")
        path = Path(self.translate_path(self.path))
        if not (match and path.is_file()):
            return super().send_head()
        size = path.stat().st_size
        start, end = int(match[1]), min(int(match[2]), size - 1)
        with path.open("rb") as file:
            file.seek(start)
            data = file.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return io.BytesIO(data)


def serve(directory: Path, ranges: bool):
    """A static server, like ``python -m http.server`` or, with ``ranges``, GitHub Pages."""
    return serve_directory(directory, _RangeHandler if ranges else QuietHandler)


def record(folder: Path) -> dict[str, Path]:
    config = Config(**SMOLLM)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    started = time.perf_counter()
    model = GlassLM(config)
    prompt = np.random.default_rng(0).integers(0, config.vocab_size, PROMPT_TOKENS).tolist()
    built = time.perf_counter()
    rec = record_generation(model, prompt, 1, seed=0)
    recorded = time.perf_counter()
    print(f"SmolLM-135M shape, random weights: built in {built - started:.1f} s; a traced "
          f"{PROMPT_TOKENS}-token one-token generation recorded in {recorded - built:.2f} s, "
          f"{len(rec.events)} events")
    json_estimate = estimate_size(config, "generation", PROMPT_TOKENS, 1)
    print(f"  version 1 JSON would be about {json_estimate / 1e6:.1f} MB (estimate; not written)")
    files = {}
    for dtype in ("float32", "float16"):
        path = folder / f"smollm-{dtype}.glrec"
        estimate = estimate_size(config, "generation", PROMPT_TOKENS, 1, binary=True, dtype=dtype)
        started = time.perf_counter()
        size = write_recording(rec, path, dtype=dtype)
        wrote = time.perf_counter() - started
        started = time.perf_counter()
        back = read_recording(path)
        read = time.perf_counter() - started
        assert len(back.events) == len(rec.events)
        print(f"  {dtype}: {size / 1e6:6.1f} MB (estimate {estimate / 1e6:.1f} MB), written in "
              f"{wrote:.2f} s, read back and checked by Python in {read:.2f} s")
        files[dtype] = path
    return files


def build_site(folder: Path) -> Path:
    site = folder / "site"
    print("building the site (mkdocs build --strict)...", flush=True)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                          cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # no Material notice
    if done.returncode:
        sys.exit(f"mkdocs build failed:\n{done.stderr}")
    return site


FIRST_EVENT = "() => document.querySelector('.gr-event[data-event-index]') !== null"
# In the page, before it loads: when the first event is drawn, on the page's own clock (ms
# from navigation start), next to the load event's end.
WATCH_FIRST = """
new MutationObserver((changes, observer) => {
    if (document.querySelector('.gr-event[data-event-index]')) {
        window.glassllmFirstEvent = performance.now();
        observer.disconnect();
    }
}).observe(document, { subtree: true, childList: true, attributes: true });
"""
PAGE_TIMES = """() => [performance.getEntriesByType('navigation')[0].loadEventEnd,
                       window.glassllmFirstEvent]"""


# In the page: move the timeline to `index` as a drag does (an input event), and time it until
# that event is drawn and the next frame is painted; Playwright's own round trips (tens of
# ms on a loaded machine) are left out.
SCRUB = """async (index) => {
    const started = performance.now();
    const timeline = document.querySelector('#gr-timeline');
    timeline.value = String(index);
    timeline.dispatchEvent(new Event('input', { bubbles: true }));
    const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
    while (document.querySelector('.gr-event').dataset.eventIndex !== String(index)) await frame();
    await frame();
    return performance.now() - started;
}"""


def scrub(page, count: int) -> dict[str, list[float]]:
    """Seconds per timeline move: to events spread over the run, and to the logits, the
    largest snapshot (64 x 49152), with its statistics over 3.1 million values."""
    last = int(page.get_attribute("#gr-timeline", "max"))
    spread = [page.evaluate(SCRUB, int(i)) / 1e3 for i in np.linspace(last - 1, 1, count)]
    logits = last - 2  # generation: ... logits, probs, sample
    assert page.evaluate(SCRUB, logits) >= 0
    assert page.get_attribute(".gr-event", "data-step-id") == "logits"
    big = [page.evaluate(SCRUB, index) / 1e3 for index in (logits - 1, logits) * 3][1::2]
    return {"spread": spread, "logits": big}


def line(label: str, opened: float, steps: dict, note: str = "") -> None:
    ok = "ok" if opened < TARGET_OPEN_S else "MISSED"
    spread, logits = steps["spread"], steps["logits"]
    print(f"  {label}\n    open {opened:5.2f} s{f' ({note})' if note else ''}, target < "
          f"{TARGET_OPEN_S:g} s: {ok}; scrub step median {statistics.median(spread) * 1e3:.0f} ms "
          f"(max {max(spread) * 1e3:.0f}), to the logits {statistics.median(logits) * 1e3:.0f} ms")


def browse(files: dict[str, Path], site: Path, scrubs: int) -> None:
    from playwright.sync_api import sync_playwright

    replay_dir = site / "assets" / "replay"
    listed = json.loads((replay_dir / "site.json").read_text(encoding="utf-8"))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=["--no-sandbox", "--disable-gpu"])
        print(f"chromium {browser.version}, through Playwright:")
        with serve(site, False) as url:  # for comparison: the site's own small recordings
            for _ in range(2):  # the first also warms the browser up
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                page.add_init_script(WATCH_FIRST)
                page.goto(url + "replay/")
                page.wait_for_function(FIRST_EVENT)
                loaded, shown = (t / 1e3 for t in page.evaluate(PAGE_TIMES))
                page.close()
            print(f"  the site's own replay (2 layers, 1 MB): first event {shown - loaded:.2f} s "
                  f"after the load event, {shown:.2f} s after navigation start")
        for dtype, path in files.items():
            name = path.name
            (replay_dir / name).write_bytes(path.read_bytes())
            only = dict(listed, recordings=[{"id": "smollm", "file": name,
                                             "label": {"en": "SmolLM", "pt": "SmolLM"}}])
            for ranges in (False, True):
                with serve(site, ranges) as url:
                    page = browser.new_page(viewport={"width": 1280, "height": 1000})
                    page.add_init_script(WATCH_FIRST)
                    page.route("**/assets/replay/site.json", lambda route: route.fulfill(
                        status=200, content_type="application/json", body=json.dumps(only)))
                    page.goto(url + "replay/")
                    page.wait_for_function(FIRST_EVENT, timeout=120_000)
                    loaded, shown = (t / 1e3 for t in page.evaluate(PAGE_TIMES))
                    what = "Range requests" if ranges else "no Range: one download"
                    line(f"{dtype}, listed in site.json, from a server with {what}",
                         shown - loaded, scrub(page, scrubs),
                         f"after the load event; {shown:.2f} s after navigation start")
                    page.close()
            with serve(site, False) as url:
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                page.goto(url + "replay/")
                page.wait_for_function(FIRST_EVENT)
                started = time.perf_counter()
                page.set_input_files("#gr-file", str(path))
                page.wait_for_selector("#gr-rec-file:checked", timeout=120_000)
                page.wait_for_function(FIRST_EVENT)
                opened = time.perf_counter() - started
                line(f"{dtype}, file picker (Open your own run)", opened, scrub(page, scrubs))
                page.close()
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=None,
                        help="a built site (mkdocs build); default: build one now")
    parser.add_argument("--scrubs", type=int, default=8, help="timeline moves to time")
    parser.add_argument("--keep", type=Path, default=None,
                        help="folder to keep the recordings in (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        files = record(folder)
        if args.site is None:
            site = build_site(Path(tmp))
        else:  # the recordings are put next to the site's: on a copy of it
            site = Path(tmp) / "site"
            shutil.copytree(args.site, site)
            for module in (REPO / "docs_build" / "assets").glob("replay*"):  # this checkout's
                shutil.copy(module, site / "assets" / "replay" / module.name)
        browse(files, site, args.scrubs)


if __name__ == "__main__":
    main()
