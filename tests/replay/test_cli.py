"""`python -m glassllm record`: writes a valid recording, and rejects bad input with a
message saying what to do, without leaving a file behind."""

import re
import subprocess
import sys
import time

import numpy as np
import pytest

import glassllm.__main__
from glassllm import Config, GlassLM, encode
from glassllm.__main__ import main
from glassllm.recording import estimate_size, read_recording


def test_module_command_writes_a_recording(tmp_path):
    out = tmp_path / "run.json"
    done = subprocess.run(
        [sys.executable, "-m", "glassllm", "record", "Olá", "--tokens", "3", "--out", str(out),
         "--layers", "1", "--d-model", "16", "--heads", "2", "--kv-heads", "1",
         "--seed", "7", "--sample-seed", "3", "--temperature", "0.7"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and "3 token(s)" in done.stdout
    assert "with the KV cache" in done.stdout
    rec = read_recording(out)
    assert rec.kind == "generation" and rec.prompt == encode("Olá")
    assert rec.config["n_layers"] == 1 and rec.config["d_model"] == 16
    assert rec.config["n_heads"] == 2 and rec.config["n_kv_heads"] == 1
    assert rec.config["seed"] == 7
    assert rec.sampling == {"greedy": False, "temperature": 0.7, "top_k": None, "seed": 3}
    assert len(rec.events) == 3 * (18 * 1 + 5)
    # the same run again: the file holds exactly the tracer's values, generated as generate
    # runs by default, with the KV cache
    assert rec.cache
    model = GlassLM(Config(vocab_size=256, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1,
                           max_len=64, seed=7))
    steps = list(model.generate(encode("Olá"), 3, temperature=0.7, seed=3, trace=True))
    assert rec.generated == [s.token for s in steps]
    records = [r for s in steps for r in s.trace.records]
    assert len(records) == len(rec.events)
    for event, record in zip(rec.events, records):
        assert (event.step, event.layer) == (record.id, record.layer)
        np.testing.assert_array_equal(event.value, record.value)
    assert [e.value.shape for e in rec.events if e.step == "attn.softmax"] == [
        (2, 4, 4), (2, 1, 5), (2, 1, 6)]  # "Olá" is 4 bytes


def test_no_cache_records_the_full_recompute(tmp_path, capsys):
    out = tmp_path / "full.glrec"
    args = ["record", "Olá", "--tokens", "3", "--layers", "1", "--d-model", "16", "--heads", "2",
            "--kv-heads", "1", "--seed", "7", "--sample-seed", "3", "--out"]
    assert main([*args, str(out), "--no-cache"]) == 0
    assert "recomputed in full at every step" in capsys.readouterr().out
    full = read_recording(out)
    assert not full.cache
    model = GlassLM(Config(vocab_size=256, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1,
                           max_len=64, seed=7))
    steps = list(model.generate(encode("Olá"), 3, seed=3, trace=True, cache=False))
    assert full.generated == [s.token for s in steps]
    for event, record in zip(full.events, (r for s in steps for r in s.trace.records)):
        assert (event.step, event.layer) == (record.id, record.layer)
        np.testing.assert_array_equal(event.value, record.value)
    assert [e.value.shape for e in full.events if e.step == "attn.softmax"] == [
        (2, 4, 4), (2, 5, 5), (2, 6, 6)]
    # the same tokens as the default, cached recording, which is the smaller file
    cached = tmp_path / "cached.glrec"
    assert main([*args, str(cached)]) == 0
    assert read_recording(cached).generated == full.generated
    assert cached.stat().st_size < out.stat().st_size


def test_greedy_top_k_and_loss(tmp_path, capsys):
    out = tmp_path / "greedy.json"
    assert main(["record", "abc", "--tokens", "2", "--greedy", "--out", str(out)]) == 0
    rec = read_recording(out)
    assert rec.sampling["greedy"] is True and rec.sampling["temperature"] is None
    model = GlassLM(Config(vocab_size=256, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                           max_len=64))
    assert rec.generated == [s.token for s in model.generate(encode("abc"), 2, greedy=True)]

    out = tmp_path / "loss.json"
    assert main(["record", "abcd", "--loss", "--out", str(out)]) == 0
    rec = read_recording(out)
    assert rec.kind == "loss" and rec.prompt == encode("abc") and rec.targets == encode("bcd")
    assert rec.loss == pytest.approx(model.loss(encode("abc"), encode("bcd")))
    assert "loss over 3 position(s)" in capsys.readouterr().out

    # a long run raises max_len by itself
    out = tmp_path / "long.json"
    assert main(["record", "x" * 70, "--tokens", "2", "--layers", "1", "--d-model", "8",
                 "--heads", "2", "--kv-heads", "1", "--top-k", "5", "--out", str(out)]) == 0
    assert read_recording(out).config["max_len"] == 72


@pytest.mark.parametrize("args, message", [
    (["record", ""], "TEXT is empty"),
    (["record", "hi", "--tokens", "0"], "--tokens: expected 1 or more"),
    (["record", "hi", "--tokens", "two"], "expected a whole number"),
    (["record", "hi", "--heads", "3"], "--d-model (64) must be divisible by --heads (3)"),
    (["record", "hi", "--kv-heads", "3"], "--heads (4) must be divisible by --kv-heads (3)"),
    (["record", "hi", "--temperature", "0"], "finite number above 0"),
    (["record", "hi", "--greedy", "--temperature", "2"], "drop one of them"),
    (["record", "hi", "--loss", "--greedy"], "does not generate"),
    (["record", "hi there", "--loss", "--no-cache"], "does not generate"),
    (["record", "h", "--loss"], "at least 2 tokens"),
    (["record", "hi", "--max-len", "4", "--tokens", "5"], "raise --max-len"),
    (["record", "hi", "--out", "missing-folder/run.json"], "does not exist; create it first"),
    (["record", "hi", "--out", "."], "is a folder"),
    (["play"], "invalid choice"),
    (["record", "hi", "--bogus"], "unrecognized arguments: --bogus; see python -m glassllm "
                                  "record --help"),
    (["train", "a.txt", "--out", "o", "--bogus"], "see python -m glassllm train --help"),
])
def test_bad_input_exits_2_with_a_clear_message_and_no_file(args, message, tmp_path,
                                                              monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a temp file


def test_failed_run_keeps_the_previous_file(tmp_path, capsys):
    out = tmp_path / "run.json"
    out.write_text("previous")
    with pytest.raises(SystemExit):
        main(["record", "hi", "--heads", "5", "--out", str(out)])
    assert out.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


# -- hardening (issue 9): size, text, names, signals --------------------------------------

SMALL = ["--layers", "1", "--d-model", "8", "--heads", "2", "--kv-heads", "1"]


def refused(args, capsys, tmp_path, monkeypatch) -> str:
    """Run the command, expect exit status 2, no file left; return the error text."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert list(tmp_path.iterdir()) == []
    err = capsys.readouterr().err
    assert err.startswith("python -m glassllm record: error: ") and err.count("\n") == 1
    return err


def test_the_size_is_estimated_and_refused_before_the_run(tmp_path, capsys, monkeypatch):
    started = time.monotonic()
    err = refused(["record", "hi", "--tokens", "200", "--no-cache", "--out", "run.json"], capsys,
                  tmp_path, monkeypatch)
    assert time.monotonic() - started < 5  # refused up front, not after the run
    # the issue measured 643 MB of JSON for this run, recomputed in full at every step
    estimate, lift = re.search(r"would be about (\d+) MB, above the 100 MB limit; lower "
                               r"--tokens.* --max-size (\d+)\n", err).groups()
    assert 630 <= int(estimate) <= 660 and int(estimate) < int(lift) < 1.1 * int(estimate)
    # with the KV cache (the default) each step after the first records one position: the
    # same run is about 1 % of that
    err = refused(["record", "hi", "--tokens", "200", "--out", "run.json", "--max-size", "1"],
                  capsys, tmp_path, monkeypatch)
    cached = float(re.search(r"would be about ([\d.]+) MB, above the 1 MB limit", err).group(1))
    assert 2 < cached < 0.02 * int(estimate)
    # the default binary file holds the same values in 4 bytes each instead of 5.3
    err = refused(["record", "hi", "--tokens", "200", "--no-cache"], capsys, tmp_path, monkeypatch)
    binary = int(re.search(r"would be about (\d+) MB", err).group(1))
    assert 0.74 * int(estimate) < binary < 0.77 * int(estimate)
    assert "halve it with --dtype float16" in err
    err = refused(["record", "hi", "--tokens", "200", "--no-cache", "--dtype", "float16"], capsys,
                  tmp_path, monkeypatch)
    half = int(re.search(r"would be about (\d+) MB", err).group(1))
    assert abs(half - binary / 2) <= 2 and "--dtype float16" not in err
    err = refused(["record", "x" * 3000, "--loss"], capsys, tmp_path, monkeypatch)
    assert re.search(r"about \d\d\d MB, above the 100 MB limit; shorten the text", err)
    err = refused(["record", "hello", "--max-size", "0.2"], capsys, tmp_path, monkeypatch)
    assert "above the 0.2 MB limit" in err
    # the option lifts the limit
    assert main(["record", "hello", "--max-size", "2", "--out", str(tmp_path / "a.json")]) == 0


@pytest.mark.parametrize("kind, args", [
    ("generation", ["Hello", "--tokens", "8"]),
    ("generation", ["Olá, mundo", "--tokens", "5", "--layers", "3", "--heads", "8",
                    "--kv-heads", "2", "--d-ff", "40"]),
    ("generation", ["Hello", "--tokens", "8", "--no-cache"]),
    ("loss", ["glass box", "--loss", "--d-model", "32"]),
])
def test_the_estimate_is_within_two_percent_of_the_file(kind, args, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["record", *args, "--out", str(out)]) == 0
    rec = read_recording(out)
    config = Config(**rec.config)
    if kind == "generation":
        estimate = estimate_size(config, kind, len(rec.prompt), len(rec.generated),
                                 cache=rec.cache)
    else:
        estimate = estimate_size(config, kind, len(rec.prompt))
    assert abs(estimate - out.stat().st_size) < 0.02 * out.stat().st_size


def test_long_runs_show_progress_on_stderr(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run.json"
    assert main(["record", "hi", "--tokens", "3", *SMALL, "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""  # a small run is quiet
    monkeypatch.setattr(glassllm.__main__, "PROGRESS_FROM_BYTES", 0)
    assert main(["record", "hi", "--tokens", "3", *SMALL, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "generation step 3/3" in err and f"writing {out}" in err
    assert main(["record", "hi there", "--loss", *SMALL, "--out", str(out)]) == 0
    assert "tracing the loss over 7 positions" in capsys.readouterr().err


def test_text_that_is_not_utf8_is_refused(tmp_path, capsys, monkeypatch):
    # how Python hands over the argument bytes ff fe: as surrogate escapes
    err = refused(["record", "\udcff\udcfe x"], capsys, tmp_path, monkeypatch)
    assert "TEXT is not valid UTF-8 (byte 0xff at position 0)" in err
    done = subprocess.run([sys.executable, "-m", "glassllm", "record", b"\xff\xfe x"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and "not valid UTF-8" in done.stderr
    assert "Traceback" not in done.stderr and list(tmp_path.iterdir()) == []


def test_a_long_legal_out_name_works_and_a_too_long_one_is_refused(tmp_path, capsys,
                                                                   monkeypatch):
    name = "r" * 245 + ".json"  # 250 characters: legal
    assert main(["record", "hi", "--tokens", "1", *SMALL, "--out", str(tmp_path / name)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == [name]
    (tmp_path / name).unlink()
    err = refused(["record", "hi", "--out", "r" * 300 + ".json"], capsys, tmp_path, monkeypatch)
    assert "--out: the file name is 305 bytes long" in err and "at most 255" in err


API_WORDS = re.compile(r"\b(top_k|d_model|n_heads|n_kv_heads|n_layers|max_len|d_ff|"
                       r"vocab_size|Config)\b")


@pytest.mark.parametrize("args, message", [
    (["--top-k", "1000"], "--top-k must be at most 256 (the byte vocabulary), got 1000"),
    (["--d-model", "6", "--heads", "2"], "must be even for RoPE; change --d-model or --heads"),
    (["--heads", "3", "--kv-heads", "2", "--d-model", "12"], "divisible by --kv-heads (2)"),
])
def test_errors_name_the_options_not_the_api(args, message, tmp_path, capsys, monkeypatch):
    err = refused(["record", "hi", *args], capsys, tmp_path, monkeypatch)
    assert message in err
    assert not API_WORDS.search(err), err


CHILD = """
import os, signal, sys
import glassllm.model, glassllm.recording.files
from glassllm.__main__ import main

sig, phase = getattr(signal, sys.argv[1]), sys.argv[2]
# a shell's background job inherits SIGINT ignored, and Python then installs no handler
signal.signal(signal.SIGINT, signal.default_int_handler)
if phase == "run":  # during the second forward pass of the generation
    forward, calls = glassllm.model.GlassLM._forward, []
    def _forward(self, *args):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), sig)
        return forward(self, *args)
    glassllm.model.GlassLM._forward = _forward
else:  # while the temp file exists, just before it would be renamed
    replace = glassllm.recording.files.os.replace
    def _replace(src, dst):
        os.kill(os.getpid(), sig)
        return replace(src, dst)
    glassllm.recording.files.os.replace = _replace
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("sig, status, words", [("SIGINT", 130, "interrupted (Ctrl-C)"),
                                                ("SIGTERM", 143, "terminated (SIGTERM)")])
@pytest.mark.parametrize("phase", ["run", "write"])
def test_ctrl_c_and_sigterm_leave_no_file_and_no_traceback(sig, status, words, phase,
                                                           tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", CHILD, sig, phase, "record", "hi", "--tokens", "3", *SMALL,
         "--out", "run.json"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == status
    assert done.stderr.strip() == (f"python -m glassllm record: {words}: "
                                   f"run.json was not written")
    assert list(tmp_path.iterdir()) == []  # neither the file nor a temp file


def test_a_temperature_that_underflows_samples_the_argmax(tmp_path):
    out, greedy = tmp_path / "cold.json", tmp_path / "greedy.json"
    assert main(["record", "hi", "--tokens", "3", *SMALL, "--temperature", "1e-40",
                 "--out", str(out)]) == 0
    assert main(["record", "hi", "--tokens", "3", *SMALL, "--greedy", "--out", str(greedy)]) == 0
    cold = read_recording(out)
    assert cold.generated == read_recording(greedy).generated
    probs = [e.value for e in cold.events if e.step == "probs"]
    assert len(probs) == 3 and all(np.isfinite(p).all() and p.max() == 1 for p in probs)


def test_a_model_too_large_for_the_limit_is_refused_before_its_weights_exist(
        tmp_path, capsys, monkeypatch):
    err = refused(["record", "hi", "--tokens", "1", "--d-model", "256", "--max-size", "5"],
                  capsys, tmp_path, monkeypatch)
    model = GlassLM(Config(vocab_size=256, d_model=256, n_layers=2, n_heads=4, n_kv_heads=2,
                           max_len=64))
    count = sum(value.size for value in model.state_dict().values())
    assert (f"the model's weights would take about {count * 4 / 1e6:.1f} MB ({count:,} "
            f"parameters), above the 5 MB limit; lower --d-model") in err
    started = time.monotonic()
    err = refused(["record", "hi", "--tokens", "1", "--d-model", "100000"],
                  capsys, tmp_path, monkeypatch)
    assert "weights would take about" in err and time.monotonic() - started < 5


def test_the_binary_default_and_float16(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["record", "hello there", "--tokens", "2"]) == 0
    out = capsys.readouterr().out
    estimate = re.search(r"recording run\.glrec: about [\d.]+ MB \(binary, float32\)", out)
    assert estimate and out.index("recording run.glrec") < out.index("wrote run.glrec")
    full = read_recording(tmp_path / "run.glrec")
    assert (tmp_path / "run.glrec").read_bytes()[:1] == b"\x89"
    assert main(["record", "hello there", "--tokens", "2", "--dtype", "float16",
                 "--out", "half.glrec"]) == 0
    assert "(binary, float16)" in capsys.readouterr().out
    half = read_recording(tmp_path / "half.glrec")
    # half the bytes of values; the index (about 120 bytes an event) stays
    assert (tmp_path / "half.glrec").stat().st_size < 0.6 * (tmp_path / "run.glrec").stat().st_size
    for a, b in zip(full.events, half.events):
        expected = a.value if a.value.dtype.kind == "i" else a.value.astype(np.float16)
        np.testing.assert_array_equal(b.value, expected)


@pytest.mark.parametrize("args, message", [
    (["--out", "run.txt"], "name the file *.glrec (compact binary"),
    (["--out", "run.json", "--dtype", "float16"], "--dtype float16 needs the binary format"),
    (["--dtype", "float64"], "invalid choice: 'float64'"),
])
def test_out_names_and_dtypes_that_cannot_be_written(args, message, tmp_path, capsys,
                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["record", "hi", *args])
    assert info.value.code == 2 and message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
