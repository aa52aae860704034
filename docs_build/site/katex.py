"""Every formula of the site typeset at build by the pinned KaTeX, in one Node.js process.

A build collects its formulas first (``html.math.formulas_in`` over each page, the texts'
``$…$`` included once arithmatex has marked them), then ``Typesetter.render`` typesets all the
ones it has not typeset before in one batch (``katex_batch.mjs``), and each page's markers
become KaTeX's output (``html.math.typeset``): pages show their math without JavaScript.

Every formula becomes KaTeX's MathML alone (``display="block"`` for a display one), which
browsers typeset themselves in KaTeX's fonts (the site's CSS): a tenth of the weight of
KaTeX's HTML, and the site has thousands (the model page's 177 inline formulas would add
150 KB as HTML, an attention page's display formulas 10-25 KB); screen readers read it as it is.
A formula KaTeX refuses is an ``error`` that names the formula; the build reports it
with its page. Typeset formulas are kept by content (the formula, KaTeX's version and this
module's batch script) in memory and in the docs cache (``GLASSLLM_DOCS_CACHE``), so a build
whose formulas were all typeset before starts no Node.js at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..engine import cache
from ..errors import DocsBuildError
from ..html.math import Formula, compact

SCRIPT = Path(__file__).with_name("katex_batch.mjs")
# KaTeX's output per kind of formula (see the module's docstring)
OUTPUTS = {"display": "mathml", "inline": "mathml"}
CACHE_FILE = "katex-formulas.json"
CACHE_LIMIT = 20_000  # formulas kept on disk (a site has about 1,500 distinct ones)
NODE_ENV = "GLASSLLM_NODE"  # the Node.js to run, if not the `node` on PATH
TIMEOUT = 300.0


@dataclass(frozen=True)
class Typeset:
    """One formula as KaTeX typeset it: ``html``, and ``error`` (KaTeX's message) when KaTeX
    refused it, ``html`` then being KaTeX's red error span."""

    html: str
    error: str | None = None


class Typesetter:
    """Formulas -> KaTeX's HTML, for the KaTeX in ``katex_dir`` (node_modules/katex)."""

    def __init__(self, katex_dir: Path) -> None:
        self.katex_dir = Path(katex_dir)
        self.version = json.loads((self.katex_dir / "package.json").read_text(encoding="utf-8"))["version"]
        salt = hashlib.sha256(SCRIPT.read_bytes() + json.dumps(OUTPUTS, sort_keys=True).encode()
                              + self.version.encode()).hexdigest()
        self._salt = salt
        self.memory: dict[str, Typeset] = {}
        self.node_runs = 0  # batches this typesetter ran (tests, and the build's log)
        self._disk_loaded = False

    def key(self, formula: Formula) -> str:
        return hashlib.sha256(f"{self._salt}\0{int(formula.display)}\0{formula.tex}".encode()).hexdigest()

    def render(self, formulas) -> dict[Formula, Typeset]:
        """Every formula in ``formulas`` typeset: from memory, the disk cache, or one batch
        (both keep KaTeX's own output; ``html.math.compact`` trims it on the way out)."""
        wanted = list(dict.fromkeys(formulas))
        self._load_disk()
        missing = [f for f in wanted if self.key(f) not in self.memory]
        if missing:
            for formula, typeset in zip(missing, self._run_node(missing)):
                self.memory[self.key(formula)] = typeset
            self._save_disk([self.key(f) for f in wanted])
        return {f: Typeset(compact(self.memory[self.key(f)].html), self.memory[self.key(f)].error)
                for f in wanted}

    # -- Node.js ---------------------------------------------------------------------------

    def _run_node(self, formulas: list[Formula]) -> list[Typeset]:
        node = node_command()
        request = json.dumps({"formulas": [[f.tex, f.display] for f in formulas],
                              "options": OUTPUTS})
        try:
            done = subprocess.run([node, str(SCRIPT), str(self.katex_dir)], input=request,
                                  capture_output=True, text=True, encoding="utf-8",
                                  timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise DocsBuildError(f"KaTeX (Node.js) took over {TIMEOUT:.0f} s to typeset "
                                 f"{len(formulas)} formulas; check that '{node}' runs") from None
        except OSError as error:
            raise DocsBuildError(f"cannot run Node.js ('{node}': {error.strerror}); install "
                                 f"Node.js 18 or later, or set {NODE_ENV} to its path") from None
        self.node_runs += 1
        try:
            answer = json.loads(done.stdout) if done.returncode == 0 else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or len(answer.get("answers", ())) != len(formulas):
            detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise DocsBuildError(f"KaTeX could not typeset the site's formulas in Node.js "
                                 f"('{node}' exited with {done.returncode}: {detail}); run "
                                 f"'npm ci' in the repository, and use Node.js 18 or later")
        if answer.get("version") != self.version:
            raise DocsBuildError(f"Node.js loaded KaTeX {answer.get('version')} from "
                                 f"{self.katex_dir}, not {self.version}: run 'npm ci'")
        return [Typeset(html, error) for html, error in answer["answers"]]

    # -- the disk cache ----------------------------------------------------------------------

    def _cache_file(self) -> Path | None:
        folder = cache.cache_dir()
        return None if folder is None else folder / CACHE_FILE

    def _load_disk(self) -> None:
        if self._disk_loaded:
            return
        self._disk_loaded = True
        path = self._cache_file()
        try:
            stored = json.loads(path.read_text(encoding="utf-8")) if path else {}
        except (OSError, ValueError):
            return  # absent or damaged: typeset again
        if not isinstance(stored, dict):
            return
        for key, value in stored.items():
            if (key not in self.memory and isinstance(value, list) and len(value) == 2
                    and isinstance(value[0], str) and isinstance(value[1], (str, type(None)))):
                self.memory[key] = Typeset(*value)

    def _save_disk(self, used: list[str]) -> None:
        """This build's formulas first, then older ones, up to ``CACHE_LIMIT``; written beside
        the file and renamed, so a parallel build reads a whole file or the one before."""
        path = self._cache_file()
        if path is None:
            return
        keys = list(dict.fromkeys(used + list(self.memory)))[:CACHE_LIMIT]
        data = json.dumps({k: [self.memory[k].html, self.memory[k].error] for k in keys})
        handle, tmp = tempfile.mkstemp(prefix=".katex-", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(data)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def node_command() -> str:
    """The Node.js executable: ``$GLASSLLM_NODE``, else ``node`` on PATH."""
    setting = os.environ.get(NODE_ENV)
    found = setting or shutil.which("node")
    if not found:
        raise DocsBuildError("Node.js is needed to typeset the site's formulas with KaTeX at "
                             "build, and no 'node' is on PATH: install Node.js 18 or later "
                             "(the same that runs 'npm ci'), or set "
                             f"{NODE_ENV} to its path")
    return found
