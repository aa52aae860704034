"""Every file of the browser runtime in the site, as ``{site path: bytes}``.

Under ``assets/runtime/`` (``RUNTIME_DIR``):

- ``pyodide/``: Pyodide's core files from npm (``lock.CORE_FILES``), unmodified but for the
  standard library's zip, which leaves out what a run never imports (``stdlib.py``);
- ``wheels/``: Pyodide's NumPy wheel (committed, checked) and ``wheels/<sha256[:16]>/`` the
  glassllm wheel built from this checkout (``wheel.py``), named by its own hash;
- ``lock.json``: the site's Pyodide lock of the two wheels and their sha256 (``lock.py``);
- ``build.js``: what every page knows before anything loads (``window.glassllmRuntime``):
  the version and commit the wheel was built from, the lock's and the bridge's integrity,
  the bytes a reader downloads (raw and as a gzip-serving server sends them), the runtime's
  UI strings per language (``docs/_texts/<lang>/ui.yml``, keys ``runtime.*``);
- the runtime's own code (``docs_build/assets/runtime``): ``glassllm.js``, the classic script
  on every page that defines ``window.glassllm``; the ES modules it imports when asked; the
  module worker; ``bridge.py``, the Python half that runs in it;
- ``worked.zip``: what a step page needs to redo its worked numbers on the reader's run in
  the worker: the docs build's own modules that compute and write them (``WORKED_MODULES``,
  the very code that wrote the page's) and their strings in every language (``worked_ui.json``);
  ``katex.min.js``, npm's KaTeX unmodified, which typesets their formulas in the page as the
  build does. A step page fetches both after the reader's first run there (``worked`` in
  ``build.js``: their integrity and what they add to the download);
- ``licenses/``: the licence texts of what it ships (``third_party/pyodide/licenses``,
  NumPy's own, read from its wheel, and KaTeX's, from npm) and the list of what the standard
  library leaves out (``stdlib.changes_notice``).

At the site's root, ``glassllm-sw.js`` (``SERVICE_WORKER``): the service worker that keeps
this build's runtime files, each with its sha256, in a cache named after the build's
``revision`` for a reader's next visit (``offline.js``).

The same checkout gives the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
import zlib
from importlib import resources
from pathlib import Path

from ..data.lesson import RECORDING as LESSON_RECORDING, lesson_bounds, load_recording
from .lock import CORE_FILES, NUMPY_LICENSE, NUMPY_WHEEL, PyodideSources, site_lock
from .stdlib import STDLIB_FILE, changes_notice, trimmed_stdlib
from .wheel import build_wheel, zip_bytes

RUNTIME_DIR = "assets/runtime"
PYODIDE_SUBDIR = "pyodide"
WHEELS_SUBDIR = "wheels"
LOCK_FILE = "lock.json"
BUILD_FILE = "build.js"
BRIDGE_FILE = "bridge.py"
# docs_build/assets/runtime: the classic entry script, the modules, the worker, the bridge
CODE_FILES = ("glassllm.js", "client.js", "arguments.js", "records.js", "panel.js", "worker.js",
              "progress.js", "wheels.js", "bridge.py", "runtime.css",
              "lesson.js", "lessondraw.js", "offline.js")
# What a reader's first run fetches (beyond glassllm.js and build.js, on every page, and
# panel.js and runtime.css, where a page has a run panel): the "downloads about N MB"
FETCHED_WHEN_ASKED = ("client.js", "arguments.js", "records.js", "worker.js", "progress.js",
                      "wheels.js", BRIDGE_FILE, LOCK_FILE,
                      *(f"{PYODIDE_SUBDIR}/{name}" for name in CORE_FILES))
UI_PREFIX = "runtime."
# The service worker (offline.js) at the site's root, so that its scope holds every page: it
# keeps the runtime's files of this build for a reader's next visit. It lists every runtime
# file but the ones each page must get from the server (build.js says which build the page
# is of; glassllm.js reads it), the licences and the list of what the stdlib leaves out.
SERVICE_WORKER = "glassllm-sw.js"
NOT_KEPT = (BUILD_FILE, "glassllm.js")
WORKED_FILE = "worked.zip"
LESSON_FILE = "lesson_induction.json"
STDLIB_CHANGES = "licenses/python_stdlib-changes.txt"
WORKED_UI_FILE = "worked_ui.json"  # in WORKED_FILE: {language code: {key: text}}
# The docs build's modules that compute a worked example and write its HTML (data/worked.py,
# html/worked.py) and what they import, relative to the docs_build package; no other
# module of the build comes along (the package __init__ files import nothing)
WORKED_MODULES = ("__init__.py", "data/__init__.py", "data/worked.py", "engine/__init__.py",
                  "engine/child.py", "engine/limits.py", "engine/schema.py",
                  "engine/training_step.py", "html/__init__.py", "html/slices.py",
                  "html/tables.py", "html/worked.py", "text/__init__.py", "text/markdown.py",
                  "text/numbers.py", "text/tokens.py")
# the strings html/worked.py reads (number.decimal: the language's decimal mark)
WORKED_UI_KEYS = ("worked.", "table.scroll_hint", "number.decimal")
KATEX_SCRIPT = "katex/dist/katex.min.js"  # in node_modules: KaTeX's browser build, from npm
KATEX_FILE = "katex.min.js"
KATEX_LICENSE = "katex/LICENSE"
# what a gzip-serving server sends: zlib's default level, gzip's and Apache mod_deflate's
GZIP_LEVEL = 6
_GZIP_WRAPPER = 18  # gzip's 10-byte header and 8-byte trailer around the deflate stream
_gzip_sizes: dict[str, int] = {}  # sha256 -> size, across mkdocs serve rebuilds


def runtime_files(sources: PyodideSources, package_dir: Path, ui: dict[str, dict[str, str]],
                  languages: dict[str, str]) -> dict[str, bytes]:
    """The runtime's site files, by their paths from the site's root. ``ui``: each language
    code's UI strings (``text.ui.load_ui``); ``languages``: ``<html lang>`` -> language code,
    how a page finds its strings."""
    wheel = build_wheel(Path(package_dir))
    numpy = sources.numpy_wheel.read_bytes()
    wheel_path = f"{WHEELS_SUBDIR}/{wheel.sha256[:16]}/{wheel.file_name}"
    numpy_path = f"{WHEELS_SUBDIR}/{NUMPY_WHEEL}"
    files = {f"{PYODIDE_SUBDIR}/{name}": (sources.pyodide_dir / name).read_bytes()
             for name in CORE_FILES}
    pyodide_stdlib = files[f"{PYODIDE_SUBDIR}/{STDLIB_FILE}"]
    files[f"{PYODIDE_SUBDIR}/{STDLIB_FILE}"] = trimmed_stdlib(pyodide_stdlib)
    files[STDLIB_CHANGES] = changes_notice(pyodide_stdlib, sources.version)
    files[numpy_path] = numpy
    files[wheel_path] = wheel.data
    # file names in a Pyodide lock are relative to the folder of its core files
    lock = site_lock(sources, {
        "numpy": (f"../{numpy_path}", hashlib.sha256(numpy).hexdigest(), None),
        "glassllm": (f"../{wheel_path}", wheel.sha256, wheel.info.version)})
    files[LOCK_FILE] = (json.dumps(lock, indent=1, sort_keys=True) + "\n").encode()
    for name in CODE_FILES:
        files[name] = code_bytes(name)
    # the recording the "Watch it learn" page plays (docs_build/data/lesson.py)
    files[LESSON_FILE] = LESSON_RECORDING.read_bytes()
    for path in sorted(sources.licenses_dir.glob("*.txt")):
        files[f"licenses/{path.name}"] = path.read_bytes()
    with zipfile.ZipFile(sources.numpy_wheel) as archive:
        files["licenses/NumPy-BSD-3-Clause.txt"] = archive.read(NUMPY_LICENSE)
    node_modules = sources.pyodide_dir.parent
    files[KATEX_FILE] = (node_modules / KATEX_SCRIPT).read_bytes()
    files["licenses/KaTeX-MIT.txt"] = (node_modules / KATEX_LICENSE).read_bytes()
    files[WORKED_FILE] = worked_archive(ui)
    asked = [*FETCHED_WHEN_ASKED, numpy_path, wheel_path]
    data = {
        "build": wheel.info.as_dict(),
        "pyodide": sources.version,
        "indexURL": f"{PYODIDE_SUBDIR}/",
        "lock": {"file": LOCK_FILE, "integrity": integrity(files[LOCK_FILE])},
        "bridge": {"file": BRIDGE_FILE, "integrity": integrity(files[BRIDGE_FILE])},
        # changes with any file of the runtime: the worker's URL carries it past old caches
        "revision": hashlib.sha256(b"".join(hashlib.sha256(files[uri]).digest()
                                            for uri in sorted(files))).hexdigest()[:16],
        "download": download_sizes({uri: files[uri] for uri in asked}),
        # a step page's worked numbers of the reader's run: fetched after its first run there
        "worked": {"file": WORKED_FILE, "integrity": integrity(files[WORKED_FILE]),
                   "katex": {"file": KATEX_FILE, "integrity": integrity(files[KATEX_FILE])},
                   "download": download_sizes({uri: files[uri]
                                               for uri in (WORKED_FILE, KATEX_FILE)})},
        "languages": dict(languages),
        # the service worker, relative to this folder, and its scope: the site's root
        "serviceWorker": {"file": "../" * RUNTIME_DIR.count("/") + "../" + SERVICE_WORKER,
                          "scope": "../" * (RUNTIME_DIR.count("/") + 1)},
        # the lesson the page trains: the bounds arguments.js checks glassllm.train and
        # glassllm.lesson's arguments against, before anything loads; read from the lesson's
        # recording (a test holds it to glassllm.lessons), since the build process never
        # imports the engine
        "lesson": lesson_bounds(load_recording()),
        "ui": {code: {key[len(UI_PREFIX):]: text for key, text in strings.items()
                      if key.startswith(UI_PREFIX)} for code, strings in ui.items()},
    }
    files[BUILD_FILE] = ("// Written by the docs build (docs_build/runtime/site.py): what every "
                         "page knows\n// of the browser runtime before anything loads.\n"
                         "window.glassllmRuntime = "
                         + json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1)
                         + ";\n").encode("utf-8")
    site = {f"{RUNTIME_DIR}/{uri}": content for uri, content in sorted(files.items())}
    site[SERVICE_WORKER] = service_worker(data["revision"], {
        f"{RUNTIME_DIR}/{uri}": hashlib.sha256(content).hexdigest()
        for uri, content in sorted(files.items())
        if uri not in NOT_KEPT and not uri.startswith("licenses/")})
    return dict(sorted(site.items()))


def service_worker(revision: str, files: dict[str, str]) -> bytes:
    """``SERVICE_WORKER``: offline.js's service worker for this build's ``revision`` and
    ``files`` ({path from the site's root: sha256}). A module service worker: a new build
    writes other bytes, which is how the browser knows to install the new one."""
    build = json.dumps({"revision": revision, "files": files}, sort_keys=True, indent=1)
    return ("// Written by the docs build (docs_build/runtime/site.py): the service worker that "
            "keeps\n// this build's runtime files for a reader's next visit "
            "(assets/runtime/offline.js).\n"
            f'import {{ serviceWorker }} from "./{RUNTIME_DIR}/offline.js";\n\n'
            f"serviceWorker(self, {build});\n").encode("utf-8")


def code_bytes(name: str) -> bytes:
    """One file of the runtime's own code (``docs_build/assets/runtime``, package data)."""
    return resources.files("docs_build").joinpath("assets", "runtime", name).read_bytes()


def worked_archive(ui: dict[str, dict[str, str]]) -> bytes:
    """``WORKED_FILE``: ``WORKED_MODULES`` under ``docs_build/`` and ``WORKED_UI_FILE``, the
    strings they read in each language; the same bytes for the same checkout."""
    members = {f"docs_build/{name}": code_source(name) for name in WORKED_MODULES}
    strings = {code: {key: text for key, text in sorted(texts.items())
                      if key.startswith(WORKED_UI_KEYS)} for code, texts in sorted(ui.items())}
    members[WORKED_UI_FILE] = (json.dumps(strings, ensure_ascii=False, sort_keys=True)
                               + "\n").encode("utf-8")
    return zip_bytes(members)


def code_source(name: str) -> bytes:
    """One module of the docs build (``name`` relative to the docs_build package)."""
    return resources.files("docs_build").joinpath(*name.split("/")).read_bytes()


def integrity(data: bytes) -> str:
    """The subresource-integrity string of ``data`` (``fetch(url, {integrity})``)."""
    return "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode()


def gzip_size(data: bytes) -> int:
    """The bytes a server compressing with gzip at ``GZIP_LEVEL`` sends for ``data``."""
    key = hashlib.sha256(data).hexdigest()
    if key not in _gzip_sizes:
        _gzip_sizes[key] = len(zlib.compress(data, GZIP_LEVEL)) - 6 + _GZIP_WRAPPER  # zlib: 2+4
    return _gzip_sizes[key]


def download_sizes(files: dict[str, bytes]) -> dict:
    """Per file and in all: raw bytes and the bytes gzip sends (``gzip_size``)."""
    sizes = {uri: [len(data), gzip_size(data)] for uri, data in sorted(files.items())}
    return {"files": sizes, "bytes": sum(raw for raw, _ in sizes.values()),
            "gzip": sum(packed for _, packed in sizes.values())}
