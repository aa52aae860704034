"""The glassllm wheel the browser runtime installs (docs_build/runtime/wheel.py): built from
the checkout, the same bytes every time, and a wheel that pip itself installs and runs."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from docs_build.errors import DocsBuildError
from docs_build.runtime import wheel as runtime_wheel

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "glassllm"


@pytest.fixture(scope="module")
def built():
    return runtime_wheel.build_wheel(PACKAGE)


def test_the_same_checkout_gives_the_same_bytes(built):
    assert runtime_wheel.build_wheel(PACKAGE).data == built.data
    assert built.file_name == f"glassllm-{runtime_wheel.package_version(PACKAGE)}-py3-none-any.whl"


def test_it_holds_every_module_and_the_data_the_runtime_reads_and_nothing_else(built):
    archive = zipfile.ZipFile(io.BytesIO(built.data))
    names = set(archive.namelist())
    dist_info = f"glassllm-{built.info.version}.dist-info"
    modules = {f"glassllm/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*.py")
               if "__pycache__" not in p.parts}
    data = {f"glassllm/{name}" for name in runtime_wheel.RUNTIME_DATA}
    meta = {f"{dist_info}/{name}" for name in ("METADATA", "WHEEL", "RECORD", runtime_wheel.BUILD_INFO_NAME)}
    assert names == modules | data | meta
    assert "glassllm/checkpoints/demo/model.safetensors" in names
    for name in modules | data:  # the checkout's bytes, unchanged
        assert archive.read(name) == (ROOT / name).read_bytes(), name


def test_its_record_lists_every_file_with_its_hash(built):
    archive = zipfile.ZipFile(io.BytesIO(built.data))
    dist_info = f"glassllm-{built.info.version}.dist-info"
    rows = list(csv.reader(io.StringIO(archive.read(f"{dist_info}/RECORD").decode())))
    assert {row[0] for row in rows} == set(archive.namelist())
    for name, digest, size in rows:
        if name.endswith("/RECORD"):
            assert digest == size == ""
            continue
        data = archive.read(name)
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert (digest, int(size)) == (f"sha256={expected}", len(data)), name


def test_pip_installs_it_and_the_installed_copy_runs_the_demo_model(built, tmp_path):
    wheel = tmp_path / built.file_name
    wheel.write_bytes(built.data)
    target = tmp_path / "site-packages"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(target), str(wheel)], check=True, timeout=300)
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(target)!r})\n"
        "from importlib import metadata\n"
        "import glassllm\n"
        "from glassllm import DEMO_CHECKPOINT, GlassLM, encode\n"
        "logits = GlassLM.from_pretrained(DEMO_CHECKPOINT).forward(encode('The cat sat'))\n"
        "info = json.loads(metadata.distribution('glassllm').read_text('glassllm-site-build.json'))\n"
        "print(json.dumps({'file': glassllm.__file__, 'info': info,"
        " 'logits': logits[-1].tolist()}))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=True, cwd=tmp_path)
    out = json.loads(done.stdout)
    assert out["file"].startswith(str(target))
    assert out["info"] == built.info.as_dict()
    from glassllm import DEMO_CHECKPOINT, GlassLM, encode
    native = GlassLM.from_pretrained(DEMO_CHECKPOINT).forward(encode("The cat sat"))[-1]
    np.testing.assert_array_equal(np.array(out["logits"], dtype=np.float32), native)


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=folder, check=True, capture_output=True, text=True).stdout.strip()


def test_build_info_names_the_commit_and_says_when_the_package_differs_from_it(tmp_path):
    package = tmp_path / "glassllm"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    assert runtime_wheel.build_info(package) == runtime_wheel.BuildInfo(runtime_wheel.package_version(PACKAGE), None, False)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "x")
    commit = _git(tmp_path, "rev-parse", "HEAD")
    assert runtime_wheel.build_info(package) == runtime_wheel.BuildInfo(runtime_wheel.package_version(PACKAGE), commit, False)
    (package / "nn.py").write_text((package / "nn.py").read_text() + "\n# changed\n")
    assert runtime_wheel.build_info(package).modified is True
    _git(tmp_path, "checkout", "-q", "--", "glassllm/nn.py")
    (package / "new_module.py").write_text("x = 1\n")  # untracked: shipped, not in the commit
    assert runtime_wheel.build_info(package).modified is True


def test_a_missing_version_or_data_file_is_refused_naming_it(tmp_path):
    package = tmp_path / "glassllm"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "checkpoints" / "demo" / "model.safetensors").unlink()
    with pytest.raises(DocsBuildError, match=r"model\.safetensors is missing"):
        runtime_wheel.build_wheel(package)
    init = package / "__init__.py"
    init.write_text(init.read_text().replace("__version__", "version"))
    with pytest.raises(DocsBuildError, match=r"__init__\.py has no line __version__"):
        runtime_wheel.package_version(package)
