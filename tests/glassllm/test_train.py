"""glassllm.train and ``python -m glassllm train``: a tiny run end to end, snapshots that
resume to the same bits after an interruption (an exception, SIGTERM, kill -9), determinism
for a seed, clear errors, and a checkpoint that transformers loads with the same logits."""

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from glassllm import GlassLM
from glassllm.__main__ import main
from glassllm.train import (OPTIMIZER_NAME, STATE_NAME, Trainer, TrainOptions, initial_model,
                            read_texts, text_tokens, train)
from tests.conftest import require_or_skip

ROOT = Path(__file__).resolve().parents[2]
TEXT = ("The cat sat on the mat. The dog sat on the log. " * 20
        + "A fox ran to the box; a hen ran to the pen.\n" * 10)
TINY = TrainOptions(d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, context=16, steps=12,
                    batch_size=3, warmup=2, snapshot_every=5)
TINY_ARGS = ["--d-model", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2",
             "--context", "16", "--steps", "12", "--batch", "3", "--warmup", "2",
             "--snapshot-every", "5"]


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def weights(folder) -> dict:
    return GlassLM.from_pretrained(folder).state_dict()


def assert_same_bits(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def tokens():
    return text_tokens(TEXT.encode())


# -- the run --------------------------------------------------------------------------------

def test_a_tiny_run_from_the_command_line(text_file, tmp_path, capsys):
    out = tmp_path / "model"
    assert main(["train", str(text_file), "--out", str(out), *TINY_ARGS]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out}" in captured.out and "from_pretrained" in captured.out
    lines = [line for line in captured.err.splitlines() if " step " in line]
    assert lines[0].startswith("python -m glassllm train: step 1/12  loss ")
    assert lines[-1].startswith("python -m glassllm train: step 12/12  loss ")
    assert all("tokens/s" in line and "ETA" in line for line in lines)
    # a checkpoint folder, plus the run's state; the finished run keeps no moments
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors",
                                                    STATE_NAME]
    model = GlassLM.from_pretrained(out)
    assert (model.config.d_model, model.config.max_len, model.config.vocab_size) == (32, 16, 256)
    state = json.loads((out / STATE_NAME).read_text())
    assert state["step"] == 12 and state["finished"] and len(state["losses"]) == 12
    assert state["data"]["files"] == [str(text_file)]
    assert state["losses"][0] == pytest.approx(np.log(256), abs=0.05)  # N(0, 0.02): uniform
    # the same command again: nothing to do, nothing changed
    before = weights(out)
    assert main(["train", str(text_file), "--out", str(out), *TINY_ARGS]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert_same_bits(weights(out), before)


def test_training_lowers_the_loss(tmp_path):
    options = replace(TINY, steps=60, lr=1e-2, snapshot_every=100)
    run = train(tokens(), tmp_path / "m", options)
    assert np.mean(run.losses[-10:]) < np.mean(run.losses[:10]) - 1.0


def test_the_trainer_follows_the_schedule_and_decays_only_matrices():
    options = replace(TINY, lr=1e-2, min_lr=1e-3, warmup=4, weight_decay=0.5)
    trainer = Trainer(initial_model(options), options)
    assert trainer.optimizer.no_decay == {name for name, value in
                                          trainer.model.state_dict().items() if value.ndim == 1}
    rows = tokens()[:3 * 17].reshape(3, 17).astype(np.int64)
    lrs = [trainer.step(rows).lr for _ in range(5)]
    assert lrs == pytest.approx([options.lr_at(s) for s in range(5)])
    assert lrs[:4] == pytest.approx([2.5e-3, 5e-3, 7.5e-3, 1e-2])


def test_the_same_seed_gives_the_same_bits_and_another_seed_does_not(tmp_path):
    a = train(tokens(), tmp_path / "a", TINY)
    b = train(tokens(), tmp_path / "b", TINY)
    assert a.losses == b.losses
    assert_same_bits(weights(tmp_path / "a"), weights(tmp_path / "b"))
    c = train(tokens(), tmp_path / "c", replace(TINY, seed=1))
    assert c.losses != a.losses


# -- resuming -----------------------------------------------------------------------------------

class Stop(Exception):
    pass


def test_a_run_stopped_by_an_exception_resumes_to_the_same_bits(tmp_path):
    straight = train(tokens(), tmp_path / "straight", TINY)

    def stop_at_7(progress):
        if progress.step == 7:
            raise Stop
    with pytest.raises(Stop):
        train(tokens(), tmp_path / "stopped", TINY, on_progress=stop_at_7)
    state = json.loads((tmp_path / "stopped" / STATE_NAME).read_text())
    assert state["step"] == 5 and not state["finished"]  # the last snapshot
    assert (tmp_path / "stopped" / OPTIMIZER_NAME).exists()
    resumed = train(tokens(), tmp_path / "stopped", TINY)
    assert resumed.resumed_from == 5
    assert resumed.losses == straight.losses
    assert_same_bits(weights(tmp_path / "stopped"), weights(tmp_path / "straight"))


def test_a_snapshot_every_other_step_count_resumes_too(tmp_path):
    straight = train(tokens(), tmp_path / "straight", TINY)
    with pytest.raises(Stop):
        train(tokens(), tmp_path / "s", replace(TINY, snapshot_every=4),
              on_progress=lambda p: (_ for _ in ()).throw(Stop) if p.step == 10 else None)
    resumed = train(tokens(), tmp_path / "s", TINY)  # snapshot_every changes no bit
    assert resumed.resumed_from == 8 and resumed.losses == straight.losses
    assert_same_bits(weights(tmp_path / "s"), weights(tmp_path / "straight"))


# The child runs the command and stops itself at one training step
CHILD = """
import os, signal, sys
import glassllm.train
from glassllm.__main__ import main

sig, at = getattr(signal, sys.argv[1]), int(sys.argv[2])
signal.signal(signal.SIGINT, signal.default_int_handler)
step = glassllm.train.Trainer.step
def stepping(self, rows):
    if self.step_count + 1 == at:
        os.kill(os.getpid(), sig)
    return step(self, rows)
glassllm.train.Trainer.step = stepping
sys.exit(main(sys.argv[3:]))
"""


def child_env() -> dict:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1"}


def run_child(sig: str, at: int, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = child_env()
    return subprocess.run([sys.executable, "-c", CHILD, sig, str(at), *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.mark.parametrize("sig, status", [("SIGTERM", 143), ("SIGINT", 130), ("SIGKILL", -9)])
def test_a_killed_command_resumes_to_the_same_bits(sig, status, text_file, tmp_path):
    command = ["train", str(text_file), *TINY_ARGS, "--out"]
    assert main([*command, str(tmp_path / "straight")]) == 0
    stopped = run_child(sig, 9, *command, "stopped", cwd=tmp_path)
    assert stopped.returncode == status, stopped.stderr
    if sig != "SIGKILL":
        words = "terminated (SIGTERM)" if sig == "SIGTERM" else "interrupted (Ctrl-C)"
        assert stopped.stderr.strip().splitlines()[-1] == (
            f"python -m glassllm train: {words}: stopped at step 8; stopped holds the "
            f"snapshot of step 5: python -m glassllm train --resume --out stopped continues it")
    state = json.loads((tmp_path / "stopped" / STATE_NAME).read_text())
    assert state["step"] == 5
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folder
    # --resume reads the options and files from the snapshot; the same command resumes too
    again = ["train", "--resume", "--out", "stopped"] if sig == "SIGTERM" else [*command,
                                                                                 "stopped"]
    resumed = subprocess.run([sys.executable, "-m", "glassllm", *again], capture_output=True,
                             text=True, cwd=tmp_path, env=child_env(), timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming stopped at step 5 of 12" in resumed.stderr
    assert_same_bits(weights(tmp_path / "stopped"), weights(tmp_path / "straight"))
    assert (json.loads((tmp_path / "stopped" / STATE_NAME).read_text())["losses"]
            == json.loads((tmp_path / "straight" / STATE_NAME).read_text())["losses"])


# -- errors -----------------------------------------------------------------------------------

def cli_error(capsys, *args) -> str:
    with pytest.raises(SystemExit) as stop:
        main(["train", *args])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m glassllm train: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("content, message", [
    (b"", "is empty"), (b"  \n\t", "is empty (only white space)"),
    (b"text\x00more", "holds a NUL byte at position 4: it is a binary file"),
    (b"caf\xe9 au lait", "is not UTF-8 text (byte 0xe9 at position 3)"),
    (b"too short", "the text has 9 tokens (bytes), fewer than one window of --context 64 + 1"),
])
def test_bad_text_files_are_refused_and_nothing_is_written(content, message, tmp_path, capsys):
    path = tmp_path / "data.txt"
    path.write_bytes(content)
    assert message in cli_error(capsys, str(path), "--out", str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, message", [
    ([], "give one or more UTF-8 text files"),
    (["missing.txt"], "missing.txt is missing"),
    (["{dir}"], "is a folder, not a regular file"),
    (["{text}", "--lr", "-1"], "argument --lr: expected a finite number of 0 or more"),
    (["{text}", "--steps", "0"], "argument --steps: expected 1 or more"),
    (["{text}", "--heads", "3"], "--d-model (64) must be divisible by --heads (3)"),
    (["{text}", "--min-lr", "0.1"], "--min-lr (0.1) must not exceed --lr (0.003)"),
    (["{text}", "--warmup", "300"], "--warmup (300) must not exceed --steps (200)"),
    (["{text}", "--resume"], "--resume: {out} holds no training run"),
])
def test_bad_options_are_refused(args, message, text_file, tmp_path, capsys):
    out = tmp_path / "out"
    fill = dict(dir=tmp_path, text=text_file, out=out)
    err = cli_error(capsys, *[a.format(**fill) for a in args], "--out", str(out))
    assert message.format(**fill) in err
    assert not out.exists()


def test_an_out_folder_of_something_else_or_of_another_run_is_refused(text_file, tmp_path,
                                                                        capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert "holds no training run; give a new or empty folder" in cli_error(
        capsys, str(text_file), "--out", str(other), *TINY_ARGS)
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    run = tmp_path / "run"
    assert main(["train", str(text_file), "--out", str(run), *TINY_ARGS]) == 0
    capsys.readouterr()
    before = weights(run)
    err = cli_error(capsys, str(text_file), "--out", str(run), *TINY_ARGS[:-4])
    assert "holds a run with other options (--warmup 2 there, the default here)" in err
    assert "--resume" in err
    err = cli_error(capsys, "--resume", "--out", str(run), "--lr", "0.5")
    assert "--lr differs from the run" in err
    changed = tmp_path / "changed.txt"
    changed.write_text(TEXT + "more")
    err = cli_error(capsys, str(changed), "--out", str(run), *TINY_ARGS)
    assert "holds a run trained on other text" in err
    assert_same_bits(weights(run), before)


def test_read_texts_joins_files_with_a_newline(tmp_path):
    (tmp_path / "a").write_text("one")
    (tmp_path / "b").write_text("two\n")
    (tmp_path / "c").write_text("three")
    assert read_texts([tmp_path / "a", tmp_path / "b", tmp_path / "c"]) == b"one\ntwo\nthree"


# -- the checkpoint in transformers -------------------------------------------------------------

@pytest.mark.reference
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_the_checkpoint_loads_in_transformers_with_the_same_logits(tied, tmp_path):
    try:
        import torch
        from transformers import LlamaForCausalLM
    except ImportError as error:  # pragma: no cover - depends on the machine
        require_or_skip(False, f"torch and transformers are needed: {error}",
                        "GLASSLLM_REQUIRE_REFERENCE")
    out = tmp_path / "model"
    train(tokens(), out, replace(TINY, tie_word_embeddings=tied))
    model = GlassLM.from_pretrained(out)
    twin = LlamaForCausalLM.from_pretrained(out).eval()
    assert twin.config.tie_word_embeddings == tied
    ids = tokens()[:16]
    with torch.no_grad():
        expected = twin(torch.tensor(ids[None].astype(np.int64))).logits[0].numpy()
    np.testing.assert_allclose(model.forward(ids.tolist()), expected, atol=1e-4, rtol=0)
