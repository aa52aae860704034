"""read_bounded: the whole file, refused past its bound, and no allocation of the bound itself
(in WebAssembly an allocation is memory the page keeps: Pyodide's heap went from 36 to 242 MB
reading a 0.1 MB tokenizer under a 200 MB bound)."""

from __future__ import annotations

import os
import tracemalloc
from types import SimpleNamespace

import pytest

from glassllm.files import regular_file
from glassllm.files.regular_file import read_bounded


def test_reads_the_whole_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 40)
    assert read_bounded(path, 10_240) == bytes(range(256)) * 40


def test_a_file_past_the_bound_is_refused_naming_its_size(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"x" * 101)
    with pytest.raises(ValueError, match="holds 101 bytes, more than the 100"):
        read_bounded(path, 100, "use a smaller file")


def test_reading_allocates_about_the_file_not_the_bound(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(b"{}" * 50_000)  # 100 kB under a 500 MB bound
    tracemalloc.start()
    try:
        data = read_bounded(path, 500_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(data) == 100_000
    assert peak < 1_000_000, f"reading 100 kB allocated {peak:,} bytes at its peak"


@pytest.mark.parametrize("bound, refused", [(1_000, False), (50, True)])
def test_a_file_that_grew_since_its_size_was_read_is_read_to_its_end_or_refused(
        tmp_path, monkeypatch, bound, refused):
    path = tmp_path / "growing.txt"
    path.write_bytes(b"y" * 100)
    real_fstat = os.fstat

    def fstat_of_a_smaller_file(fd):  # the size the file had before it grew to 100 bytes
        found = real_fstat(fd)
        return SimpleNamespace(st_mode=found.st_mode, st_size=10)

    monkeypatch.setattr(regular_file.os, "fstat", fstat_of_a_smaller_file)
    if refused:
        with pytest.raises(ValueError, match="more than the 50"):
            read_bounded(path, bound)
    else:
        assert read_bounded(path, bound) == b"y" * 100
