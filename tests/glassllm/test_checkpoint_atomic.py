"""save_pretrained is atomic as a whole: whatever stops it (kill -9, a full disk, an error),
between or inside its two files, the folder then loads as the old model or the new one,
never new weights with an old config, in glassllm and in transformers alike (issue 17)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from glassllm import Config, GlassLM
from glassllm.checkpoint import CONFIG_NAME, WEIGHTS_NAME

OLD = Config(vocab_size=64, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, max_len=16, seed=1)
# another shape and RoPE base: new weights beside the old config.json cannot load as either
NEW = Config(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=4, max_len=16,
             seed=2, rope_theta=500.0)
TOKENS = [3, 1, 4, 1, 5, 9, 2, 6]

# The child saves NEW over OLD and is stopped at one point of the save.
CHILD = textwrap.dedent("""
    import os, pathlib, signal, sys
    import safetensors.numpy
    import glassllm._folder_swap as swap
    from glassllm import Config, GlassLM

    folder, stage = sys.argv[1], sys.argv[2]
    def stop():
        if stage.startswith("kill"):
            os.kill(os.getpid(), signal.SIGKILL)
        raise OSError(28, "No space left on device")  # a full disk, as the kernel says it

    save_file, write_text = safetensors.numpy.save_file, pathlib.Path.write_text
    if stage.endswith("inside-weights"):
        def half_weights(tensors, filename, metadata=None):
            save_file(tensors, filename, metadata=metadata)
            os.truncate(filename, os.path.getsize(filename) // 2)
            stop()
        safetensors.numpy.save_file = half_weights
    elif stage.endswith("between-files"):  # the weights are complete, config.json not begun
        pathlib.Path.write_text = lambda self, *args, **kwargs: stop()
    elif stage.endswith("inside-config"):
        def half_config(self, text, *args, **kwargs):
            write_text(self, text[:len(text) // 2], *args, **kwargs)
            stop()
        pathlib.Path.write_text = half_config
    elif stage.endswith("before-the-swap"):
        swap._exchange = lambda a, b: stop()
    elif stage.endswith("after-the-swap"):  # swapped in, the old folder not yet tidied
        swap._tidy = lambda *args: stop()
    GlassLM(Config(**{fields})).save_pretrained(folder)
""")


def save_new_stopped(folder, stage) -> subprocess.CompletedProcess:
    fields = ", ".join(f"{k}={v!r}" for k, v in NEW.__dict__.items())
    return subprocess.run([sys.executable, "-c", CHILD.replace("{fields}", f"dict({fields})"),
                           str(folder), stage], capture_output=True, text=True, timeout=120)


def logits_of(config: Config) -> np.ndarray:
    return GlassLM(config).forward(TOKENS)


def hugging_face_logits(folder):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    twin = transformers.LlamaForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        return twin(torch.tensor([TOKENS])).logits[0].numpy()


STAGES = ["inside-weights", "between-files", "inside-config", "before-the-swap"]


@pytest.mark.parametrize("how", ["kill", "disk-full"])
@pytest.mark.parametrize("stage", STAGES)
def test_a_save_stopped_before_it_ends_leaves_the_old_model(tmp_path, stage, how):
    folder = tmp_path / "model"
    GlassLM(OLD).save_pretrained(folder)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = save_new_stopped(folder, f"{how}-{stage}")
    if how == "kill":
        assert done.returncode == -9, done.stderr[-2000:]
    else:
        assert done.returncode == 1 and "No space left on device" in done.stderr
        # a failed save tidies up after itself: nothing new beside the folder
        assert sorted(p.name for p in tmp_path.iterdir()) == before
    np.testing.assert_array_equal(GlassLM.from_pretrained(folder).forward(TOKENS),
                                  logits_of(OLD))
    assert sorted(p.name for p in folder.iterdir()) == [CONFIG_NAME, WEIGHTS_NAME]


def test_a_save_killed_after_the_swap_leaves_the_new_model(tmp_path):
    folder = tmp_path / "model"
    GlassLM(OLD).save_pretrained(folder)
    assert save_new_stopped(folder, "kill-after-the-swap").returncode == -9
    np.testing.assert_array_equal(GlassLM.from_pretrained(folder).forward(TOKENS),
                                  logits_of(NEW))


@pytest.mark.reference
@pytest.mark.parametrize("stage", ["between-files", "inside-config", "after-the-swap"])
def test_transformers_loads_the_same_model_after_a_kill(tmp_path, stage):
    folder = tmp_path / "model"
    GlassLM(OLD).save_pretrained(folder)
    assert save_new_stopped(folder, f"kill-{stage}").returncode == -9
    ours = GlassLM.from_pretrained(folder).forward(TOKENS)
    np.testing.assert_allclose(hugging_face_logits(folder), ours, atol=1e-4, rtol=0)


def test_a_full_disk_inside_the_weights_changes_nothing(tmp_path):
    """A real limit: the kernel refuses to grow a file past RLIMIT_FSIZE (EFBIG)."""
    folder = tmp_path / "model"
    GlassLM(OLD).save_pretrained(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    limit = (folder / WEIGHTS_NAME).stat().st_size + 1000  # NEW's weights are twice OLD's
    script = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
        from glassllm import Config, GlassLM
        GlassLM(Config(**{NEW.__dict__!r})).save_pretrained(sys.argv[1])
    """)
    done = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and "File too large" in done.stderr, done.stderr[-2000:]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_the_folders_other_files_stay_and_nothing_is_left_beside_it(tmp_path):
    folder = tmp_path / "model"
    GlassLM(OLD).save_pretrained(folder)
    (folder / "tokenizer.json").write_text('{"model": {}}')
    (folder / "notes").mkdir()
    (folder / "notes" / "run.txt").write_text("trained for 3 hours")
    (folder / "latest").symlink_to("notes/run.txt")
    GlassLM(NEW).save_pretrained(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert sorted(p.name for p in folder.iterdir()) == [CONFIG_NAME, "latest", WEIGHTS_NAME,
                                                        "notes", "tokenizer.json"]
    assert (folder / "tokenizer.json").read_text() == '{"model": {}}'
    assert (folder / "latest").read_text() == "trained for 3 hours"
    assert json.loads((folder / CONFIG_NAME).read_text())["num_hidden_layers"] == 2


def test_saving_into_the_working_folder_or_through_a_symlink(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    GlassLM(OLD).save_pretrained(folder)
    monkeypatch.chdir(folder)
    GlassLM(NEW).save_pretrained(".")
    assert os.path.samefile(os.getcwd(), folder)  # this process still stands in the folder
    assert sorted(os.listdir(".")) == [CONFIG_NAME, WEIGHTS_NAME]
    (tmp_path / "link").symlink_to(folder)
    GlassLM(OLD).save_pretrained(tmp_path / "link")
    assert (tmp_path / "link").is_symlink()
    np.testing.assert_array_equal(GlassLM.from_pretrained(folder).forward(TOKENS),
                                  logits_of(OLD))


# -- a kill between the swap and the move of the subfolders (issue 26) -----------------------

def killed_while_moving_subfolders(tmp_path):
    """A checkpoint with a record/ subfolder, whose save of NEW was killed after the swap:
    record/ is then only in the old folder, the hidden sibling .model.*.new."""
    folder = tmp_path / "model"
    GlassLM(OLD).save_pretrained(folder)
    (folder / "record").mkdir()
    (folder / "record" / "snapshots.json").write_text("[1, 2, 3]")
    (folder / "tokenizer.json").write_text('{"model": {}}')
    assert save_new_stopped(folder, "kill-after-the-swap").returncode == -9
    [leftover] = [p for p in tmp_path.iterdir() if p.name != "model"]
    assert leftover.name.startswith(".model.") and (leftover / "record").is_dir()
    assert not (folder / "record").exists()
    return folder, leftover


@pytest.mark.parametrize("then", ["load", "save"])
def test_the_next_load_or_save_finishes_moving_the_subfolders(tmp_path, then):
    folder, leftover = killed_while_moving_subfolders(tmp_path)
    if then == "load":
        model = GlassLM.from_pretrained(folder)
        np.testing.assert_array_equal(model.forward(TOKENS), logits_of(NEW))
    else:
        GlassLM(OLD).save_pretrained(folder)
    assert (folder / "record" / "snapshots.json").read_text() == "[1, 2, 3]"
    assert (folder / "tokenizer.json").read_text() == '{"model": {}}'
    # the old folder held only what the target holds too, or the old model: it is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_subfolder_the_target_holds_too_stays_with_a_warning_saying_how(tmp_path):
    folder, leftover = killed_while_moving_subfolders(tmp_path)
    (folder / "record").mkdir()
    (folder / "record" / "mine.txt").write_text("made after the kill")
    with pytest.warns(UserWarning, match=r"record/ of .*move it into .*yourself") as caught:
        GlassLM.from_pretrained(folder)
    assert str(leftover) in str(caught[0].message)
    assert (leftover / "record" / "snapshots.json").read_text() == "[1, 2, 3]"
    assert sorted(p.name for p in (folder / "record").iterdir()) == ["mine.txt"]


def test_a_save_stopped_before_its_swap_leaves_a_leftover_no_load_touches(tmp_path):
    folder = tmp_path / "model"
    GlassLM(OLD).save_pretrained(folder)
    assert save_new_stopped(folder, "kill-between-files").returncode == -9
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    GlassLM.from_pretrained(folder)  # maybe another save's folder, still being written
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
