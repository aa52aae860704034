"""`python -m glassllm record` at its limits (issue 17, part 3): sizes no recording holds and
runs no machine fits are one-line errors before any work, whatever --max-size says; seeds
stay within the format's number limit; a second signal cannot cut the cleanup short; SIGHUP
stops a run as SIGTERM does; names are printed escaped."""

import os
import subprocess
import sys
import textwrap

import pytest

import glassllm.__main__
from glassllm.__main__ import main
from glassllm.recording import MAX_NUMBER_CHARS, read_recording
from tests.replay.test_cli import SMALL, refused

PROG = "python -m glassllm record"


@pytest.mark.parametrize("args, message", [
    (["--tokens", "1" + "0" * 30], "the run needs 1,000,000,000,000,000,000,000,000,000,002 "
                                   "positions, but a recording holds runs of at most "
                                   "2,147,483,647"),
    (["--tokens", "3000000000", "--max-size", "1e300"], "a recording holds runs of at most"),
    (["--tokens", "9" * 5000], "--tokens: expected at most 64 digits, got 5,000"),
    (["--max-len", "3000000000"], "--max-len is 3,000,000,000, but a recording holds"),
    (["--d-model", "4000000000", "--heads", "2", "--kv-heads", "1"], "--d-model is 4,000,000,000"),
], ids=["tokens-1e30", "tokens-beyond-int32", "tokens-5000-digits", "max-len", "d-model"])
def test_sizes_no_recording_holds_are_refused_at_once(args, message, capsys, tmp_path,
                                                      monkeypatch):
    assert message in refused(["record", "hi", *args], capsys, tmp_path, monkeypatch)


@pytest.mark.parametrize("args, words", [
    (["--tokens", "100000", "--max-size", "1e30"], "of memory (a recording is built in memory"),
    (["--layers", "1000000000", "--max-size", "1e300"], "of memory"),
    (["--d-model", "1000000", "--max-size", "1e300"], "the model's weights would take about"),
], ids=["long-run", "deep-model", "wide-model"])
def test_a_raised_max_size_that_still_cannot_fit_is_refused_before_any_work(tmp_path, args,
                                                                            words):
    # in a child with a timeout: a run that starts would take hours or run out of memory
    done = subprocess.run([sys.executable, "-m", "glassllm", "record", "hi", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert "--max-size" not in done.stderr  # no limit to lift would help
    assert list(tmp_path.iterdir()) == []


def test_a_recording_larger_than_the_free_disk_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(glassllm.__main__, "_free_space", lambda folder: 10_000)
    err = refused(["record", "hello", *SMALL, "--out", "run.json"], capsys, tmp_path,
                  monkeypatch)
    assert "more than the 0.0 MB free in" in err


@pytest.mark.parametrize("option", ["--seed", "--sample-seed"])
def test_seeds_stay_within_the_number_limit_of_the_format(option, capsys, tmp_path,
                                                          monkeypatch):
    err = refused(["record", "hi", *SMALL, option, "1" + "0" * MAX_NUMBER_CHARS], capsys,
                  tmp_path, monkeypatch)
    assert f"{option}: expected at most {MAX_NUMBER_CHARS} digits, got 65" in err
    # the longest seed allowed writes a recording its readers read
    out = tmp_path / "run.glrec"
    assert main(["record", "hi", "--tokens", "1", *SMALL, option, "9" * MAX_NUMBER_CHARS,
                 "--out", str(out)]) == 0
    rec = read_recording(out)
    seed = rec.config["seed"] if option == "--seed" else rec.sampling["seed"]
    assert seed == int("9" * MAX_NUMBER_CHARS)


# The child runs the command and sends itself signals at one point of the run.
CHILD = textwrap.dedent("""
    import os, signal, sys, threading
    import glassllm.model, glassllm.recording.files as files
    from glassllm.__main__ import main

    signals = [getattr(signal, name) for name in sys.argv[1].split(",")]
    phase, how = sys.argv[2], sys.argv[3]
    # a shell's background job inherits SIGINT ignored, and Python then installs no handler
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def send():
        if how == "together":  # all pending at once: the handlers run one after another
            signal.pthread_sigmask(signal.SIG_BLOCK, signals)
            for sig in signals:
                # to this thread, which blocks them: os.kill's process-wide signal may go to a
                # BLAS thread at once, and the handlers then run in a racy order
                signal.pthread_kill(threading.get_ident(), sig)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
        else:  # the first now, the next ones while the temp file is being removed
            unlink = files.os.unlink
            def unlink_after_a_signal(path):
                for sig in signals[1:]:
                    os.kill(os.getpid(), sig)
                return unlink(path)
            files.os.unlink = unlink_after_a_signal
            os.kill(os.getpid(), signals[0])

    if phase == "run":  # during the second forward pass of the generation
        forward, calls = glassllm.model.GlassLM._forward, []
        def _forward(self, *args):
            calls.append(1)
            if len(calls) == 2:
                send()
            return forward(self, *args)
        glassllm.model.GlassLM._forward = _forward
    else:  # while the temp file exists, just before it would be renamed
        replace = files.os.replace
        def _replace(src, dst):
            send()
            return replace(src, dst)
        files.os.replace = _replace
    sys.exit(main(sys.argv[4:]))
""")


def stopped(tmp_path, signals: str, phase: str, how: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, signals, phase, how, "record", "hi",
                           "--tokens", "3", *SMALL, "--out", "run.glrec"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)


TOGETHER = [("SIGINT,SIGTERM", 130, "interrupted (Ctrl-C)"), ("SIGHUP", 129, "hung up (SIGHUP)"),
            ("SIGHUP,SIGTERM", 129, "hung up (SIGHUP)")]
DURING_CLEANUP = [("SIGTERM,SIGTERM", 143, "terminated (SIGTERM)"),
                  ("SIGINT,SIGINT", 130, "interrupted (Ctrl-C)"),
                  ("SIGTERM,SIGINT", 143, "terminated (SIGTERM)")]
CASES = ([("run", "together", *case) for case in TOGETHER]
         + [("write", "together", *case) for case in TOGETHER]
         + [("write", "during-cleanup", *case) for case in DURING_CLEANUP])  # a temp file exists


@pytest.mark.parametrize("phase, how, signals, status, words", CASES,
                         ids=[f"{phase}-{how}-{signals}" for phase, how, signals, *_ in CASES])
def test_signals_leave_no_file_no_temp_file_and_no_traceback(tmp_path, phase, how, signals,
                                                             status, words):
    done = stopped(tmp_path, signals, phase, how)
    assert done.returncode == status, done.stderr[-3000:]
    assert done.stderr == f"{PROG}: {words}: run.glrec was not written\n"
    assert list(tmp_path.iterdir()) == []  # neither the file nor a temp file


def test_names_with_newlines_and_escapes_are_printed_escaped(tmp_path, capsys, monkeypatch):
    name = "a\nb\x1b[31m.glrec"
    monkeypatch.chdir(tmp_path)
    assert main(["record", "hi", "--tokens", "1", *SMALL, "--out", name]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 2 and "\x1b" not in out
    assert out.startswith("recording a\\nb\\x1b[31m.glrec: about ")
    assert [p.name for p in tmp_path.iterdir()] == [name]  # the file has the name asked for
    (tmp_path / name).unlink()
    err = refused(["record", "hi", "--out", "no\nfolder/run.glrec"], capsys, tmp_path,
                  monkeypatch)
    assert "the folder no\\nfolder does not exist" in err
    err = refused(["record", "hi", "--model", "bad\x1b]0;title\x07"], capsys, tmp_path,
                  monkeypatch)
    assert "\x1b" not in err and "\\x1b]0;title\\x07" in err


def test_a_tokenizer_json_that_is_not_a_regular_file_is_refused_at_once(tmp_path):
    from glassllm import Config, GlassLM
    folder = tmp_path / "model"
    GlassLM(Config(vocab_size=256, d_model=8, n_layers=1, n_heads=2, n_kv_heads=1,
                   max_len=16)).save_pretrained(folder)
    os.mkfifo(folder / "tokenizer.json")  # reading it would wait for a writer forever
    done = subprocess.run([sys.executable, "-m", "glassllm", "record", "hi", "--model",
                           str(folder), "--out", str(tmp_path / "run.glrec")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "tokenizer.json is a FIFO (named pipe), not a regular file" in done.stderr
    assert not (tmp_path / "run.glrec").exists()
