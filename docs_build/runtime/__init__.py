"""The browser runtime: the very glassllm these pages document, running in the reader's
browser with Pyodide (CPython in WebAssembly) in a module Web Worker, from the site's own
files.

Plain functions, no MkDocs: the plugin and ``python -m docs_build generate`` call

    sources = pyodide_sources(npm_dir, checkout)  # Pyodide from npm, NumPy from third_party
    files = runtime_files(sources, package_dir, ui, languages)   # {site path: bytes}

- ``wheel.py``: the glassllm wheel, built from the checkout at every build;
- ``lock.py``: Pyodide and NumPy checked against Pyodide's official lock; the site's lock;
- ``site.py``: the runtime's files in the site, and what each page knows of them.

The browser side lives in ``docs_build/assets/runtime`` (``glassllm.js`` defines
``window.glassllm``; see the page "Run it in your browser").
"""

from .lock import PyodideSources, pyodide_sources
from .site import RUNTIME_DIR, runtime_files
from .wheel import BuildInfo, build_info, build_wheel

__all__ = ["RUNTIME_DIR", "BuildInfo", "PyodideSources", "build_info", "build_wheel",
           "pyodide_sources", "runtime_files"]
