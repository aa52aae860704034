// The engine's own tests under Pyodide, in Node: the same CPython 3.12 and NumPy wasm the
// site's browser runtime runs (node_modules/pyodide, third_party/pyodide's NumPy, checked
// against Pyodide's lock), on this checkout, mounted read-only.
//
//   node tests/glassllm/under_pyodide.mjs DEPS_JSON -- PYTEST_ARGS...
//
// DEPS_JSON: a JSON list of paths of pure-Python packages pytest needs (pytest, _pytest,
// pluggy, iniconfig, packaging, ...), as the Python running this found them
// (tests/glassllm/test_under_pyodide.py). Exits with pytest's exit code.

import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const PYODIDE = path.join(ROOT, "node_modules/pyodide");
const NUMPY = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl";

const separator = process.argv.indexOf("--");
const deps = JSON.parse(process.argv[2]);
const pytestArgs = separator < 0 ? [] : process.argv.slice(separator + 1);

const { loadPyodide } = await import(path.join(PYODIDE, "pyodide.mjs"));
const lock = JSON.parse(readFileSync(path.join(PYODIDE, "pyodide-lock.json"), "utf8"));
const wheel = path.join(ROOT, "third_party/pyodide", NUMPY);
const digest = createHash("sha256").update(readFileSync(wheel)).digest("hex");
if (digest !== lock.packages.numpy.sha256) {
  console.error(`${wheel}: sha256 ${digest}, but Pyodide's lock lists ${lock.packages.numpy.sha256}`);
  process.exit(3);
}

const pyodide = await loadPyodide({ indexURL: PYODIDE + "/" });
await pyodide.loadPackage(wheel, { messageCallback: () => {} });
const FS = pyodide.FS;
FS.mkdirTree("/repo");
FS.mount(FS.filesystems.NODEFS, { root: ROOT }, "/repo");
FS.mkdirTree("/deps");
for (const dep of deps) {
  const name = path.basename(dep);
  if (statSync(dep).isDirectory()) {
    FS.mkdirTree(`/deps/${name}`);
    FS.mount(FS.filesystems.NODEFS, { root: dep }, `/deps/${name}`);
  } else {
    FS.writeFile(`/deps/${name}`, readFileSync(dep));
  }
}
pyodide.globals.set("pytest_args", pyodide.toPy(pytestArgs));
let code;
try {
  code = pyodide.runPython(`
import os, sys
sys.path[:0] = ["/deps", "/repo"]
os.chdir("/repo")
import pytest
int(pytest.main(list(pytest_args)))
`);
} catch (error) {
  // a Python error's message is its traceback; never the minified runtime's source
  console.error(String(error && error.message || error).slice(0, 20000));
  process.exit(4);
}
process.exit(code);
