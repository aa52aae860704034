"""glassllm's NumPy reader of safetensors files against the safetensors package itself: the
same tensors, bit for bit (float32, float16, bfloat16), the same files accepted and
refused, and checkpoints that load where the package is missing (Pyodide)."""

import json
import struct
import subprocess
import sys

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from glassllm import DEMO_CHECKPOINT, GlassLM, encode
from glassllm.safetensors_reader import SafetensorsFile

WEIGHTS = DEMO_CHECKPOINT / "model.safetensors"

# float values a widening must keep exactly: signed zeros, infinities, NaN, subnormals
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-45, 65504.0, 1 / 3],
                   dtype=np.float32)


def read_all(path) -> dict[str, np.ndarray]:
    with SafetensorsFile(path) as file:
        return {name: file.read_float32(name) for name in file.tensors}


def assert_same_bits(ours: dict, theirs: dict) -> None:
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert ours[name].dtype == np.float32 and ours[name].shape == value.shape, name
        np.testing.assert_array_equal(ours[name].view(np.uint32), value.view(np.uint32),
                                      err_msg=name)


def test_the_demo_checkpoint_reads_as_safetensors_reads_it():
    theirs = load_file(WEIGHTS)  # the demo keeps float16 weights; both widen them the same way
    assert {value.dtype for value in theirs.values()} == {np.dtype(np.float16)}
    assert_same_bits(read_all(WEIGHTS), {k: v.astype(np.float32) for k, v in theirs.items()})


def test_float16_tensors_widen_exactly_as_safetensors_gives_them(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {"a": rng.standard_normal((7, 5)).astype(np.float16),
               "special": SPECIAL.astype(np.float16),
               "scalar": np.array(2.5, dtype=np.float16),
               "empty": np.zeros((0, 3), dtype=np.float16)}
    save_file(tensors, tmp_path / "half.safetensors")
    theirs = {k: v.astype(np.float32) for k, v in load_file(tmp_path / "half.safetensors").items()}
    assert_same_bits(read_all(tmp_path / "half.safetensors"), theirs)


def test_bfloat16_tensors_widen_exactly_as_torch_gives_them(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch
    rng = np.random.default_rng(1)
    tensors = {"a": torch.from_numpy(rng.standard_normal((6, 4)).astype(np.float32)),
               "special": torch.from_numpy(SPECIAL.copy())}
    save_torch({k: v.to(torch.bfloat16) for k, v in tensors.items()},
               tmp_path / "bf16.safetensors")
    with safe_open(tmp_path / "bf16.safetensors", framework="pt") as file:
        theirs = {name: file.get_tensor(name).float().numpy() for name in file.keys()}
    assert_same_bits(read_all(tmp_path / "bf16.safetensors"), theirs)


def test_checkpoints_load_where_the_safetensors_package_is_missing():
    # a fresh interpreter in which `import safetensors` fails, as in Pyodide
    script = ("import sys; sys.modules['safetensors'] = None\n"
              "import numpy as np\n"
              "from glassllm import DEMO_CHECKPOINT, GlassLM, encode\n"
              "model = GlassLM.from_pretrained(DEMO_CHECKPOINT)\n"
              "sys.stdout.write(model.forward(encode('Once upon a time')).tobytes().hex())\n"
              "try:\n"
              "    model.save_pretrained('unused')\n"
              "except ImportError as error:\n"
              "    sys.stderr.write(str(error))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    expected = GlassLM.from_pretrained(DEMO_CHECKPOINT).forward(encode("Once upon a time"))
    assert bytes.fromhex(run.stdout) == expected.tobytes()
    assert "pip install safetensors" in run.stderr


# -- the same files accepted and refused as by the safetensors package ---------------------

def container(header: dict | bytes, data: bytes, length: int | None = None) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode("utf-8")
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.array([1.5, -2.0], dtype=np.float32)
DATA = A.tobytes() + B.tobytes()
HEADER = {"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
          "b": {"dtype": "F32", "shape": [2], "data_offsets": [24, 32]}}


def with_entry(name, **changes):
    return {**HEADER, name: {**HEADER[name], **changes}}


GOOD = {
    "plain": container(HEADER, DATA),
    "metadata": container({"__metadata__": {"format": "pt"}, **HEADER}, DATA),
    "header-padded-with-spaces": container(json.dumps(HEADER).encode() + b"   ", DATA),
    "listed-out-of-data-order": container({"b": HEADER["b"], "a": HEADER["a"]}, DATA),
    "empty-and-scalar-tensors": container(
        {**HEADER, "e": {"dtype": "F32", "shape": [0, 4], "data_offsets": [32, 32]},
         "s": {"dtype": "F32", "shape": [], "data_offsets": [32, 36]}},
        DATA + np.float32(7).tobytes()),
}

BAD = {
    "shorter-than-8-bytes": b"\x10\x00\x00",
    "header-longer-than-the-file": container(HEADER, DATA, length=10_000),
    "header-above-100-MB": container(HEADER, DATA, length=200_000_000),
    "header-not-utf8": container(b'{"\xff": 1}', DATA),
    "header-not-an-object": container(b"[1, 2]", DATA),
    "header-not-json": container(b"{not json}", DATA),
    "header-nested-1000-deep": container(b'{"x": ' + b"[" * 1000 + b"]" * 1000 + b"}", DATA),
    "data-truncated": container(HEADER, DATA[:-4]),
    "bytes-after-the-data": container(HEADER, DATA + b"\0" * 8),
    "gap-between-tensors": container(with_entry("b", data_offsets=[28, 36]), DATA + b"\0" * 4),
    "tensors-overlap": container(with_entry("b", data_offsets=[16, 24]), DATA[:24]),
    "length-of-another-shape": container(with_entry("a", shape=[3, 3]), DATA),
    "shape-with-a-float": container(with_entry("b", shape=[2.0]), DATA),
    "shape-with-a-boolean": container(with_entry("b", shape=[True, 2]), DATA),
    "offsets-negative": container(with_entry("b", data_offsets=[-8, 32]), DATA),
    "offsets-reversed": container(with_entry("b", data_offsets=[32, 24]), DATA),
    "dtype-unknown": container(with_entry("b", dtype="F42"), DATA),
    "metadata-not-strings": container({"__metadata__": {"format": 1}, **HEADER}, DATA),
}


def refused_by_safetensors(path) -> bool:
    try:
        with safe_open(path, framework="numpy") as file:
            for name in file.keys():
                file.get_tensor(name)
    except Exception:  # noqa: BLE001 - SafetensorError or the header's own errors
        return True
    return False


@pytest.mark.parametrize("name", GOOD)
def test_files_safetensors_accepts_read_the_same(tmp_path, name):
    path = tmp_path / f"{name}.safetensors"
    path.write_bytes(GOOD[name])
    assert not refused_by_safetensors(path)
    assert_same_bits(read_all(path), load_file(path))


@pytest.mark.parametrize("name", BAD)
def test_files_safetensors_refuses_are_refused_before_any_tensor_is_read(tmp_path, name):
    path = tmp_path / f"{name}.safetensors"
    path.write_bytes(BAD[name])
    assert refused_by_safetensors(path)
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        SafetensorsFile(path)


def test_a_tensor_of_another_dtype_is_refused_naming_it(tmp_path):
    save_file({"ints": np.arange(4, dtype=np.int32)}, tmp_path / "ints.safetensors")
    with SafetensorsFile(tmp_path / "ints.safetensors") as file:
        assert file.tensors["ints"].dtype == "I32"
        with pytest.raises(ValueError, match="'ints' has dtype I32"):
            file.read_float32("ints")
