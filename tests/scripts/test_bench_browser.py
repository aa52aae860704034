"""bench_browser.py's reader's line (--mbit, --latency): what it sends and how it paces it.
A lower bound only: a slow machine can only make the line slower, never faster."""

import io
import threading
import time
import urllib.request

from tests.conftest import load_script, serve_directory


def test_a_line_sends_every_byte_in_order_and_unthrottled_waits_for_nothing():
    bench = load_script("bench_browser")
    data = bytes(range(256)) * 300  # several chunks
    out = io.BytesIO()
    bench.Line().send(data, out)
    assert out.getvalue() == data
    assert str(bench.Line()) == "loopback, unthrottled"


def test_responses_share_the_line_so_two_at_once_take_as_long_as_both_bytes():
    bench = load_script("bench_browser")
    line = bench.Line(mbit=1.0)  # 125,000 bytes a second
    outs = [io.BytesIO(), io.BytesIO()]
    started = time.monotonic()
    threads = [threading.Thread(target=line.send, args=(b"x" * 25_000, out)) for out in outs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.monotonic() - started >= 50_000 / 125_000 - 0.02  # 0.4 s for both, not 0.2
    assert [out.getvalue() for out in outs] == [b"x" * 25_000] * 2
    assert str(line) == "a line of 1 Mbit/s shared, 0 ms before each response"


def test_the_server_gzips_over_the_line_and_waits_the_latency(tmp_path):
    import gzip
    bench = load_script("bench_browser")
    (tmp_path / "page.html").write_bytes(b"glass " * 5000)
    before = bench.GzipHandler.line
    bench.GzipHandler.line = bench.Line(latency=0.3)
    try:
        with serve_directory(tmp_path, bench.GzipHandler) as url:
            request = urllib.request.Request(url + "page.html",
                                             headers={"Accept-Encoding": "gzip"})
            started = time.monotonic()
            with urllib.request.urlopen(request, timeout=30) as response:
                body = response.read()
                encoding = response.headers["Content-Encoding"]
            waited = time.monotonic() - started
    finally:
        bench.GzipHandler.line = before
    assert encoding == "gzip" and gzip.decompress(body) == b"glass " * 5000
    assert waited >= 0.3
