"""The glassllm wheel the reader's browser installs, built at docs-build time from the
checkout the site documents.

It holds the package's Python modules (every ``glassllm/**/*.py``: the source pages show the
same files) and the data the runtime reads (``RUNTIME_DATA``: the step index and the demo
checkpoint's config, weights and tokenizer.json), nothing else. The same checkout gives the same bytes: the
entries are sorted, dated ``ZIP_EPOCH`` and stored with fixed permissions, so the wheel's
sha256, which names its folder in the site and which the site's lock lists, changes exactly
when what the browser runs changes.

``BUILD_INFO_NAME`` in its ``.dist-info`` records the version and commit it was built from;
the page shows them, and the runtime checks that what it loaded says the same.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import subprocess
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import DocsBuildError

WHEEL_TAG = "py3-none-any"  # pure Python: the engine is NumPy code
# What the runtime reads besides the modules, relative to the package folder
RUNTIME_DATA = ("step_index.json", "checkpoints/demo/config.json",
                "checkpoints/demo/model.safetensors", "checkpoints/demo/tokenizer.json")
BUILD_INFO_NAME = "glassllm-site-build.json"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry can hold
_VERSION = re.compile(r'^__version__\s*=\s*["\']([^"\']+)["\']', re.MULTILINE)


@dataclass(frozen=True)
class BuildInfo:
    """Which glassllm a wheel holds: ``commit`` is None outside git; ``modified`` says the
    package folder differs from that commit (uncommitted or untracked files)."""

    version: str
    commit: str | None
    modified: bool

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Wheel:
    file_name: str  # glassllm-<version>-py3-none-any.whl
    data: bytes
    info: BuildInfo

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def package_version(package_dir: Path) -> str:
    """``__version__`` of the package's ``__init__.py``, read, not imported (the build never
    imports the engine it documents)."""
    init = Path(package_dir) / "__init__.py"
    found = _VERSION.search(init.read_text(encoding="utf-8")) if init.is_file() else None
    if found is None:
        raise DocsBuildError(f"{init} has no line __version__ = \"...\"; the browser runtime's "
                             f"wheel is named and shown by that version")
    return found.group(1)


def build_info(package_dir: Path) -> BuildInfo:
    """The package's version and the commit of its checkout."""
    package_dir = Path(package_dir)
    commit = _git(package_dir, "rev-parse", "HEAD")
    modified = bool(commit) and bool(_git(package_dir, "status", "--porcelain", "--", "."))
    return BuildInfo(package_version(package_dir),
                     commit if commit and len(commit) == 40 else None, modified)


def package_files(package_dir: Path) -> dict[str, bytes]:
    """Archive name (``glassllm/nn.py``) -> bytes of everything the wheel ships, sorted."""
    package_dir = Path(package_dir)
    name = package_dir.name
    files = {}
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" not in path.parts:
            files[f"{name}/{path.relative_to(package_dir).as_posix()}"] = path.read_bytes()
    for relative in RUNTIME_DATA:
        path = package_dir / relative
        if not path.is_file():
            raise DocsBuildError(f"{path} is missing; the browser runtime ships it in the "
                                 f"glassllm wheel (docs_build/runtime/wheel.py: RUNTIME_DATA)")
        files[f"{name}/{relative}"] = path.read_bytes()
    return dict(sorted(files.items()))


def build_wheel(package_dir: Path, info: BuildInfo | None = None) -> Wheel:
    """The wheel of ``package_dir`` (``info``: its ``build_info`` unless given)."""
    package_dir = Path(package_dir)
    info = info or build_info(package_dir)
    name = package_dir.name
    dist_info = f"{name}-{info.version}.dist-info"
    members = package_files(package_dir)
    members[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {info.version}\n"
        f"Summary: glassllm as the documentation site runs it in the reader's browser\n"
        f"License: MIT\nRequires-Python: >=3.10\nRequires-Dist: numpy>=1.26\n").encode()
    members[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: docs_build.runtime\nRoot-Is-Purelib: true\n"
        f"Tag: {WHEEL_TAG}\n").encode()
    members[f"{dist_info}/{BUILD_INFO_NAME}"] = (
        json.dumps(info.as_dict(), sort_keys=True) + "\n").encode()
    record = "".join(f"{arcname},sha256={_urlsafe_digest(data)},{len(data)}\n"
                     for arcname, data in members.items())
    members[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    return Wheel(f"{name}-{info.version}-{WHEEL_TAG}.whl", zip_bytes(members), info)


def zip_bytes(members: dict[str, bytes]) -> bytes:
    """A zip of ``members`` (archive name -> bytes) in their order, dated ``ZIP_EPOCH`` with
    fixed permissions: the same members give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for arcname, data in members.items():
            entry = zipfile.ZipInfo(arcname, date_time=ZIP_EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data, compresslevel=9)
    return buffer.getvalue()


def _urlsafe_digest(data: bytes) -> str:
    """RECORD's hash form: urlsafe base64 of the sha256, without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _git(folder: Path, *args: str) -> str | None:
    """What a git command prints in ``folder``, or None outside git (a tarball, no git)."""
    try:
        done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
