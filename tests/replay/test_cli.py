"""`python -m glassllm record`: writes a valid recording, and rejects bad input with a
message saying what to do, without leaving a file behind."""

import subprocess
import sys

import numpy as np
import pytest

from glassllm import Config, GlassLM, encode
from glassllm.__main__ import main
from glassllm.recording import read_recording


def test_module_command_writes_a_recording(tmp_path):
    out = tmp_path / "run.json"
    done = subprocess.run(
        [sys.executable, "-m", "glassllm", "record", "Olá", "--tokens", "3", "--out", str(out),
         "--layers", "1", "--d-model", "16", "--heads", "2", "--kv-heads", "1",
         "--seed", "7", "--sample-seed", "3", "--temperature", "0.7"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and "3 token(s)" in done.stdout
    rec = read_recording(out)
    assert rec.kind == "generation" and rec.prompt == encode("Olá")
    assert rec.config["n_layers"] == 1 and rec.config["d_model"] == 16
    assert rec.config["n_heads"] == 2 and rec.config["n_kv_heads"] == 1
    assert rec.config["seed"] == 7
    assert rec.sampling == {"greedy": False, "temperature": 0.7, "top_k": None, "seed": 3}
    assert len(rec.events) == 3 * (18 * 1 + 5)
    # the same run, recomputed: the file holds exactly the tracer's values
    model = GlassLM(Config(vocab_size=256, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1,
                           max_len=64, seed=7))
    steps = list(model.generate(encode("Olá"), 3, temperature=0.7, seed=3, trace=True))
    assert rec.generated == [s.token for s in steps]
    records = [r for s in steps for r in s.trace.records]
    for event, record in zip(rec.events, records):
        assert (event.step, event.layer) == (record.id, record.layer)
        np.testing.assert_array_equal(event.value, record.value)


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
    (["record", "h", "--loss"], "at least 2 tokens"),
    (["record", "hi", "--max-len", "4", "--tokens", "5"], "raise --max-len"),
    (["record", "hi", "--out", "missing-folder/run.json"], "does not exist; create it first"),
    (["record", "hi", "--out", "."], "is a folder"),
    (["play"], "invalid choice"),
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
