"""The browser runtime's files in the site (docs_build/runtime/site.py): every byte the
browser fetches is listed with its hash where the browser checks it, and the sizes the page
announces are measured."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import posixpath
import zipfile
from pathlib import Path

import pytest

from docs_build.text.languages import LANGUAGES
from docs_build.text.ui import UI_KEYS, load_ui
from docs_build.runtime import lock as runtime_lock
from docs_build.runtime import site as runtime_site
from docs_build.runtime import stdlib as runtime_stdlib
from docs_build.runtime import wheel as runtime_wheel

ROOT = Path(__file__).resolve().parents[3]
RUNTIME = runtime_site.RUNTIME_DIR


@pytest.fixture(scope="module")
def files():
    ui = {lang.code: load_ui(ROOT / "docs", lang) for lang in LANGUAGES}
    return runtime_site.runtime_files(runtime_lock.pyodide_sources(ROOT), ROOT / "glassllm", ui,
                           {lang.html_lang: lang.code for lang in LANGUAGES})


def build_data(files) -> dict:
    text = files[f"{RUNTIME}/build.js"].decode("utf-8")
    start = text.index("window.glassllmRuntime = ") + len("window.glassllmRuntime = ")
    assert text.rstrip().endswith(";")
    return json.loads(text[start:text.rstrip().rindex(";")])


def sri(data: bytes) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_the_lock_names_files_the_site_holds_with_their_sha256(files):
    lock = json.loads(files[f"{RUNTIME}/lock.json"])
    assert set(lock["packages"]) == {"numpy", "glassllm"}
    for name, entry in lock["packages"].items():
        # Pyodide resolves a lock's file names against the folder of its core files
        path = posixpath.normpath(f"{RUNTIME}/pyodide/{entry['file_name']}")
        assert hashlib.sha256(files[path]).hexdigest() == entry["sha256"], name
    wheel = lock["packages"]["glassllm"]["file_name"]
    assert f"/{lock['packages']['glassllm']['sha256'][:16]}/" in wheel  # named by its hash


def test_the_page_checks_the_lock_and_the_bridge_against_the_builds_record(files):
    data = build_data(files)
    assert data["lock"]["integrity"] == sri(files[f"{RUNTIME}/{data['lock']['file']}"])
    assert data["bridge"]["integrity"] == sri(files[f"{RUNTIME}/{data['bridge']['file']}"])


def test_the_build_it_names_is_the_wheels(files):
    data = build_data(files)
    lock = json.loads(files[f"{RUNTIME}/lock.json"])
    path = posixpath.normpath(f"{RUNTIME}/pyodide/{lock['packages']['glassllm']['file_name']}")
    archive = zipfile.ZipFile(io.BytesIO(files[path]))
    inside = json.loads(archive.read(f"glassllm-{data['build']['version']}.dist-info/"
                                     f"{runtime_wheel.BUILD_INFO_NAME}"))
    assert data["build"] == inside == runtime_wheel.build_info(ROOT / "glassllm").as_dict()


def test_pyodides_files_are_npms_unmodified_but_the_trimmed_standard_library(files):
    for name in runtime_lock.CORE_FILES:
        npm = (ROOT / runtime_lock.PYODIDE_PACKAGE / name).read_bytes()
        expected = runtime_stdlib.trimmed_stdlib(npm) if name == runtime_stdlib.STDLIB_FILE else npm
        assert files[f"{RUNTIME}/pyodide/{name}"] == expected, name
    assert files[f"{RUNTIME}/{runtime_site.STDLIB_CHANGES}"].startswith(b"python_stdlib.zip: ")


def test_the_download_it_announces_is_every_file_a_first_run_fetches_measured(files):
    data = build_data(files)
    lock = json.loads(files[f"{RUNTIME}/lock.json"])
    wheels = {posixpath.normpath(f"pyodide/{e['file_name']}") for e in lock["packages"].values()}
    fetched = set(runtime_site.FETCHED_WHEN_ASKED) | wheels
    assert set(data["download"]["files"]) == fetched
    for path, (raw, packed) in data["download"]["files"].items():
        content = files[f"{RUNTIME}/{path}"]
        assert raw == len(content), path
        # what Python's gzip sends at the same level: an independent gzip writer
        assert packed == len(gzip.compress(content, runtime_site.GZIP_LEVEL, mtime=0)), path
    assert data["download"]["bytes"] == sum(r for r, _ in data["download"]["files"].values())
    assert data["download"]["gzip"] == sum(p for _, p in data["download"]["files"].values())


def test_it_ships_the_licences_of_what_it_ships(files):
    names = {uri.rsplit("/", 1)[1] for uri in files if uri.startswith(f"{RUNTIME}/licenses/")}
    assert names == {"Pyodide-MPL-2.0.txt", "CPython-PSF-2.0.txt", "NumPy-BSD-3-Clause.txt",
                     "Emscripten-MIT.txt", "musl-MIT.txt", "KaTeX-MIT.txt",
                     "python_stdlib-changes.txt"}
    assert files[f"{RUNTIME}/licenses/KaTeX-MIT.txt"] == (ROOT / "node_modules/katex/LICENSE").read_bytes()
    numpy = zipfile.ZipFile(ROOT / runtime_lock.THIRD_PARTY_DIR / runtime_lock.NUMPY_WHEEL).read(runtime_lock.NUMPY_LICENSE)
    assert files[f"{RUNTIME}/licenses/NumPy-BSD-3-Clause.txt"] == numpy
    assert b"Mozilla Public License Version 2.0" in files[f"{RUNTIME}/licenses/Pyodide-MPL-2.0.txt"]
    assert b"PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in files[f"{RUNTIME}/licenses/CPython-PSF-2.0.txt"]


def test_every_language_has_the_runtimes_strings(files):
    data = build_data(files)
    keys = {key[len(runtime_site.UI_PREFIX):] for key in UI_KEYS if key.startswith(runtime_site.UI_PREFIX)}
    assert keys and set(data["ui"]) == {lang.code for lang in LANGUAGES}
    for code, strings in data["ui"].items():
        assert set(strings) == keys, code
    assert data["languages"] == {lang.html_lang: lang.code for lang in LANGUAGES}


def test_it_gives_the_page_the_lessons_bounds(files):
    from glassllm.lessons import Lesson

    lesson = Lesson(0)
    assert build_data(files)["lesson"] == {
        "steps": lesson.steps, "snapshot_every": lesson.snapshot_every,
        "n_layers": lesson.config.n_layers, "n_heads": lesson.config.n_heads}


def test_the_same_checkout_gives_the_same_files(files):
    ui = {lang.code: load_ui(ROOT / "docs", lang) for lang in LANGUAGES}
    again = runtime_site.runtime_files(runtime_lock.pyodide_sources(ROOT), ROOT / "glassllm", ui,
                            {lang.html_lang: lang.code for lang in LANGUAGES})
    assert again == files


def test_the_built_site_holds_exactly_these_files_and_loads_them_on_every_page(site, files):
    """The plugin's hook, under the session's docs host: the runtime's files in the built site,
    and build.js before glassllm.js on every page."""
    built = {path.relative_to(site.dir).as_posix(): path.read_bytes()
             for path in (site.dir / RUNTIME).rglob("*") if path.is_file()}
    built[runtime_site.SERVICE_WORKER] = (site.dir / runtime_site.SERVICE_WORKER).read_bytes()
    assert built == files
    for page in site.dir.rglob("index.html"):
        html = page.read_text(encoding="utf-8")
        data, entry = html.find("assets/runtime/build.js"), html.find("assets/runtime/glassllm.js")
        assert 0 <= data < entry, page


def test_a_step_pages_worked_numbers_come_with_the_build_code_and_katex_checked(files):
    """worked.zip holds the docs build's worked-number modules as the checkout has them and
    their strings in every language; it and npm's KaTeX are listed with their integrity and
    the bytes they add to a step page's first run."""
    data = build_data(files)
    worked = data["worked"]
    archive_bytes = files[f"{RUNTIME}/{worked['file']}"]
    assert worked["integrity"] == sri(archive_bytes)
    katex = files[f"{RUNTIME}/{worked['katex']['file']}"]
    assert katex == (ROOT / "node_modules/katex/dist/katex.min.js").read_bytes()
    assert worked["katex"]["integrity"] == sri(katex)
    archive = zipfile.ZipFile(io.BytesIO(archive_bytes))
    modules = {name for name in archive.namelist() if name.endswith(".py")}
    assert "docs_build/data/worked.py" in modules and "docs_build/html/worked.py" in modules
    for name in modules:
        assert archive.read(name) == (ROOT / name).read_bytes(), name
    strings = json.loads(archive.read(runtime_site.WORKED_UI_FILE))
    for lang in LANGUAGES:
        ui = load_ui(ROOT / "docs", lang)
        wanted = {key: text for key, text in ui.items()
                  if key.startswith("worked.") or key in ("table.scroll_hint", "number.decimal")}
        assert wanted and strings[lang.code] == wanted, lang.code
    sizes = worked["download"]
    assert set(sizes["files"]) == {worked["file"], worked["katex"]["file"]}
    for path, (raw, packed) in sizes["files"].items():
        content = files[f"{RUNTIME}/{path}"]
        assert [raw, packed] == [len(content), len(gzip.compress(content, runtime_site.GZIP_LEVEL, mtime=0))]


def test_the_worked_code_imports_nothing_it_does_not_ship(files, tmp_path):
    """In a fresh Python whose path holds only worked.zip (and NumPy), the step pages' worked
    numbers import: the modules it ships are all they need of the docs build."""
    import subprocess
    import sys

    archive = zipfile.ZipFile(io.BytesIO(files[f"{RUNTIME}/{build_data(files)['worked']['file']}"]))
    archive.extractall(tmp_path)
    code = ("import sys; sys.path[:0] = [sys.argv[1]]; import docs_build.data.worked, "
            "docs_build.html.worked, docs_build.engine.child; "
            "assert docs_build.__file__.startswith(sys.argv[1]), docs_build.__file__")
    done = subprocess.run([sys.executable, "-I", "-c", code, str(tmp_path)], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_service_worker_lists_every_runtime_file_a_page_does_not_need_fresh(files):
    """glassllm-sw.js, at the site's root (its scope holds every page): this build's revision
    and the sha256 of each runtime file it may keep; build.js and glassllm.js, which tell a
    page which build it is of, and the licences are not among them; build.js names it."""
    text = files[runtime_site.SERVICE_WORKER].decode("utf-8")
    assert f'from "./{RUNTIME}/offline.js"' in text
    start = text.index("serviceWorker(self, ") + len("serviceWorker(self, ")
    build = json.loads(text[start:text.rindex(");")])
    data = build_data(files)
    assert build["revision"] == data["revision"]
    runtime = {path: hashlib.sha256(content).hexdigest() for path, content in files.items()
               if path.startswith(f"{RUNTIME}/")}
    left_out = {f"{RUNTIME}/build.js", f"{RUNTIME}/glassllm.js"} | {
        path for path in runtime if path.startswith(f"{RUNTIME}/licenses/")}
    assert build["files"] == {path: digest for path, digest in runtime.items()
                              if path not in left_out}
    # relative to the runtime's folder, as glassllm.js resolves them
    assert posixpath.normpath(posixpath.join(RUNTIME, data["serviceWorker"]["file"])) \
        == runtime_site.SERVICE_WORKER
    assert posixpath.normpath(posixpath.join(RUNTIME, data["serviceWorker"]["scope"])) == "."
