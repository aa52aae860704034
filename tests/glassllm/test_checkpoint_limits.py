"""Hostile checkpoint folders: from_pretrained answers each with a ValueError naming what is
wrong, in bounded time and memory, before it allocates anything (issue 17, part 3).

Each load runs in a child process with its address space capped at 1 GB and a timeout, so
a loader that would hang (a FIFO), read forever (/dev/zero) or allocate a config's claims
(10 million blocks) fails the test instead of the machine."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from glassllm import Config, GlassLM
from glassllm.checkpoint import (CONFIG_NAME, MAX_CONFIG_BYTES, WEIGHTS_NAME, config_from_hf,
                                 config_to_hf)

SMALL = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_len=16)
MEMORY = 1 << 30

LOAD = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
    from glassllm import GlassLM
    try:
        GlassLM.from_pretrained(sys.argv[1])
    except ValueError as error:
        print("ValueError:", error)
    else:
        print("loaded")
""")


def load_in_a_child(folder, timeout=60) -> str:
    """What from_pretrained(folder) does in a child of 1 GB: "loaded" or "ValueError: ..."."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", LOAD.format(memory=MEMORY), str(folder)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.fixture
def folder(tmp_path):
    """A small saved checkpoint (a 2-block model, 100 KB of weights)."""
    GlassLM(Config(**SMALL)).save_pretrained(tmp_path / "model")
    return tmp_path / "model"


def edit_config(folder, **changes):
    hf = json.loads((folder / CONFIG_NAME).read_text())
    hf.update(changes)
    (folder / CONFIG_NAME).write_text(json.dumps(hf))


@pytest.mark.parametrize("changes, key", [
    (dict(num_hidden_layers=10_000_000), "num_hidden_layers"),
    (dict(vocab_size=1e9), "vocab_size"),
    (dict(vocab_size=1_000_000_000), "vocab_size"),
    (dict(hidden_size=1_000_000, head_dim=None), "hidden_size"),
    (dict(intermediate_size=10**12), "intermediate_size"),
    (dict(num_key_value_heads=1), "num_key_value_heads"),
], ids=["layers", "vocab-float", "vocab", "hidden", "mlp", "kv-heads"])
def test_a_config_the_weights_do_not_hold_is_refused_before_allocating(folder, changes, key):
    edit_config(folder, **changes)
    answer = load_in_a_child(folder)
    assert answer.startswith("ValueError:") and key in answer, answer
    assert "config.json" in answer


def test_the_refusal_names_a_key_left_out_and_its_default(folder):
    hf = json.loads((folder / CONFIG_NAME).read_text())
    del hf["vocab_size"]
    (folder / CONFIG_NAME).write_text(json.dumps(hf))
    with pytest.raises(ValueError, match="vocab_size is missing, so it is LlamaConfig's "
                                         "default 32000"):
        GlassLM.from_pretrained(folder)


def test_config_json_must_be_a_regular_file_of_bounded_size(folder):
    config = folder / CONFIG_NAME
    config.unlink()
    os.mkfifo(config)  # reading waits for a writer that never comes
    assert "is a FIFO (named pipe), not a regular file" in load_in_a_child(folder)
    config.unlink()
    config.symlink_to("/dev/zero")  # endless bytes
    assert "is a character device, not a regular file" in load_in_a_child(folder)
    config.unlink()
    with open(config, "wb") as file:  # 2 GB, sparse: nothing to read but its size
        file.truncate(2 * 10**9)
    answer = load_in_a_child(folder)
    assert f"holds 2,000,000,000 bytes, more than the {MAX_CONFIG_BYTES:,}" in answer
    config.unlink()
    config.mkdir()
    assert "is a folder, not a regular file" in load_in_a_child(folder)


def test_the_weights_must_be_a_regular_file_too(folder):
    (folder / WEIGHTS_NAME).unlink()
    os.mkfifo(folder / WEIGHTS_NAME)
    assert "model.safetensors is a FIFO (named pipe)" in load_in_a_child(folder)


def test_deep_nesting_is_a_value_error_naming_the_place(folder):
    text = (folder / CONFIG_NAME).read_text()
    (folder / CONFIG_NAME).write_text(text.replace('"architectures"', '"notes": '
                                                   + "[" * 100_000 + "]" * 100_000
                                                   + ', "architectures"', 1))
    answer = load_in_a_child(folder)
    assert answer.startswith("ValueError:") and "notes[0][0]… is nested more than" in answer


@pytest.mark.parametrize("key, literal", [
    ("rope_theta", "1" + "0" * 400),  # an integer no float holds
    ("rms_norm_eps", "1" + "0" * 400),
    ("hidden_size", "1" + "0" * 400),
], ids=["rope_theta", "rms_norm_eps", "hidden_size"])
def test_integers_too_big_for_a_float_are_refused_naming_the_key(folder, key, literal):
    hf = json.loads((folder / CONFIG_NAME).read_text())
    hf[key] = "PLACEHOLDER"
    (folder / CONFIG_NAME).write_text(json.dumps(hf).replace('"PLACEHOLDER"', literal))
    answer = load_in_a_child(folder)
    assert answer.startswith("ValueError:") and key in answer, answer


@pytest.mark.parametrize("key, value, words", [
    ("rope_theta", 10**40, "beyond float32's range"),
    ("rope_theta", 10**400, "beyond float32's range"),
    ("rope_theta", 1e-50, "float32 (the engine's dtype) rounds to 0"),
    ("rope_theta", 1e39, "beyond float32's range"),
    ("rms_norm_eps", 10**400, "beyond float32's range"),
    ("rms_norm_eps", 1e300, "beyond float32's range"),
    ("hidden_size", 10**400, "hidden_size"),
    ("num_hidden_layers", 2**80, "num_hidden_layers"),
], ids=["theta-1e40-int", "theta-400-digits", "theta-underflow", "theta-1e39", "eps-400-digits",
        "eps-1e300", "hidden-400-digits", "layers-2**80"])
def test_numbers_float32_cannot_hold_are_refused_naming_the_key(key, value, words):
    hf = {**config_to_hf(Config(**SMALL)), key: value}
    with pytest.raises(ValueError, match=key) as error:
        config_from_hf(hf)
    assert words in str(error.value)


def test_rope_parameters_underflowing_float32_are_refused_naming_the_key():
    hf = {**config_to_hf(Config(**SMALL)), "rope_parameters": {"rope_type": "default",
                                                               "rope_theta": 1e-60}}
    with pytest.raises(ValueError, match=r"rope_parameters\.rope_theta is 1e-60"):
        config_from_hf(hf)


def test_attention_bias_null_means_false(folder):
    model = GlassLM.from_pretrained(folder)
    edit_config(folder, attention_bias=None, mlp_bias=None)
    again = GlassLM.from_pretrained(folder)
    assert again.config == model.config


def test_transformers_weights_naming_another_file_is_refused(folder):
    # transformers would load that file instead of model.safetensors
    edit_config(folder, transformers_weights="other.safetensors")
    with pytest.raises(ValueError, match="transformers_weights"):
        GlassLM.from_pretrained(folder)


UNREADABLE = textwrap.dedent("""
    import sys
    from glassllm import GlassLM
    try:
        GlassLM.from_pretrained(sys.argv[1])
    except ValueError as error:
        print(error)
""")


def without_read_permission_override() -> list[str]:
    """A command prefix under which this user's file permissions apply: root reads every
    file, so it runs the child without the capabilities that let it (setpriv)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file permissions cannot apply")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]


@pytest.mark.parametrize("what", ["weights", "folder"])
def test_unreadable_files_are_said_to_be_unreadable_not_missing(folder, what):
    target = folder / WEIGHTS_NAME if what == "weights" else folder
    os.chmod(target, 0o000 if what == "weights" else 0o600)  # a folder without x: no entry opens
    try:
        done = subprocess.run([*without_read_permission_override(), sys.executable, "-c",
                               UNREADABLE, str(folder)], capture_output=True, text=True,
                              timeout=60)
    finally:
        os.chmod(target, 0o644 if what == "weights" else 0o755)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cannot be read: permission denied" in done.stdout, done.stdout
    assert "missing" not in done.stdout


@pytest.mark.parametrize("kind, words", [("fifo", "is a FIFO (named pipe)"),
                                         ("dev-zero", "is a character device"),
                                         ("sparse-2GB", "holds 2,000,000,000 bytes")])
def test_record_model_refuses_such_a_config_at_once(folder, tmp_path, kind, words):
    config = folder / CONFIG_NAME
    config.unlink()
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "dev-zero":
        config.symlink_to("/dev/zero")
    else:
        with open(config, "wb") as file:
            file.truncate(2 * 10**9)
    done = subprocess.run([sys.executable, "-m", "glassllm", "record", "hi", "--model",
                           str(folder), "--out", str(tmp_path / "run.glrec")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert not (tmp_path / "run.glrec").exists()
