// The runtime's module Web Worker: Pyodide, NumPy and the glassllm wheel, loaded from the
// site's own files when the page first asks, then bridge.py's calls, one at a time. The
// page never waits on Python: a long call only keeps this thread busy, and the page can
// end it (client.js: cancel terminates the worker).
//
// Messages in:  {id, op: "load", args: {indexURL, lock, bridge, expected, build, revision}}
//               {id, op: "run" | "generate", args}            (bridge.py's call)
//               {id, op: "worked", args: {code, text, step, lang, layer, head}}
// Messages out: {type: "progress", stage, loaded, total}
//               {type: "reply", id, ok: true, result} | {type: "reply", id, ok: false, error}
//               where error = {kind: "engine" | "integrity" | "load", name, message}

import { loadPyodide } from "./pyodide/pyodide.mjs";
import { DownloadMeter, countingFetch, relativePath } from "./progress.js";
import { UNREAD_SUFFIXES, wheelFiles } from "./wheels.js";

const BASE = new URL("./", import.meta.url).href;
// What a later visit of the same build starts from (kept in this revision's cache, beside the
// service worker's copies of the files; offline.js drops it with them when a new build comes):
// Python's memory once the model has loaded (NumPy, glassllm and bridge.py imported, the demo
// read: a revisit skips the boot, the imports and the model), with what the dynamic linker
// needs to load NumPy's compiled modules again at the places that memory expects (relink),
// and the installed packages, NumPy and glassllm as their wheels unpacked with the bytecode of
// every module a run imported (for the modules a later call imports). Both are made by this
// very Pyodide from this build's files and are only ever read back by the same revision; where
// the browser has no Cache Storage (plain http off localhost), every visit starts from scratch.
const SNAPSHOT_KEY = "glassllm-start/python-memory";
const PACKAGES_KEY = "glassllm-start/site-packages";
// bridge.py runs as this module, so that a restored memory still holds it
const BRIDGE_MODULE = "_glassllm_bridge";
const CACHE_PREFIX = "glassllm-runtime-"; // offline.js's
const SITE_PACKAGES = "/lib/python3.12/site-packages";
// Python, run after the first result of a first visit: every file under site-packages (the two
// wheels as installed, and the .pyc files the imports wrote) as one buffer: a 4-byte
// little-endian length, a JSON index [[path, size], ...], then the files' bytes in that order
// (unpackPackages writes them back from JavaScript, without unzipping). Each .pyc becomes an
// unchecked hash-based pyc (PEP 552) of its source, which the import system uses as it is.
// Left out: what only builds or type-checks against NumPy (wheels.js's UNREAD_SUFFIXES: its C
// headers and sources, Cython declarations, type stubs: 129 of its files), which nothing in a
// page's Python reads
const PACKAGES_CODE = `
import importlib.util, json, os
_UNREAD = tuple(${JSON.stringify(UNREAD_SUFFIXES)})
def _packages(root):
    index, parts = [], []
    for folder, folders, names in os.walk(root):
        folders.sort()
        for name in sorted(names):
            if name.endswith(_UNREAD):
                continue
            path = os.path.join(folder, name)
            with open(path, "rb") as file:
                data = file.read()
            if os.path.basename(folder) == "__pycache__":
                source = os.path.join(os.path.dirname(folder), name.split(".", 1)[0] + ".py")
                if not name.endswith(".pyc") or not os.path.exists(source):
                    continue
                with open(source, "rb") as file:
                    digest = importlib.util.source_hash(file.read())
                data = data[:4] + (1).to_bytes(4, "little") + digest + data[16:]
            index.append([os.path.relpath(path, root), len(data)])
            parts.append(data)
    head = json.dumps(index).encode()
    return len(head).to_bytes(4, "little") + head + b"".join(parts)
_packages
`;
// NumPy's wheel holds 19 compiled extension modules (7.5 MB of WebAssembly) and a run imports
// three of them (the array core, its test helpers, which NumPy imports, and linalg, 4.6 MB).
// Pyodide compiles and links every one when it installs a wheel; with this, its installer
// (Pyodide 0.27's pyodide._package_loader) leaves NumPy's to Python's import, which loads each
// the first time it is imported (dlopen from the unpacked wheel, as CPython does natively):
// numpy.random or numpy.fft, if a run ever imports them, then cost their time, and the 15
// others never load
const LAZY_EXTENSIONS_CODE = `
import os.path, pyodide._package_loader as _loader
if not getattr(_loader.unpack_buffer, "_glassllm_lazy", False):
    def _lazy(unpack):
        def unpack_buffer(*args, **kwargs):
            dynlibs = unpack(*args, **kwargs)
            # the lock's file name, a path such as ../wheels/numpy-2.0.2-...whl
            if os.path.basename(str(kwargs.get("filename", ""))).startswith("numpy-"):
                return []
            return dynlibs
        unpack_buffer._glassllm_lazy = True
        return unpack_buffer
    _loader.unpack_buffer = _lazy(_loader.unpack_buffer)
`;
// Python, run once files have been written under site-packages: its import system forgets what
// it had listed of those folders. Not importlib.invalidate_caches(), which Python 3.12 makes
// import importlib.metadata and re-read the index of the standard library's zip (about 0.35 s
// here, a tenth of a first result), for folders that did not change. Defines the function the
// wheels' install calls in its place (installWheels) and returns it.
const SITE_PACKAGES_CHANGED_CODE = `
import sys
def _site_packages_changed():
    for path, finder in list(sys.path_importer_cache.items()):
        if path == "${SITE_PACKAGES}" or path.startswith("${SITE_PACKAGES}/"):
            if finder is None:
                del sys.path_importer_cache[path]  # a folder not there before: look again
            elif hasattr(finder, "invalidate_caches"):
                finder.invalidate_caches()
_site_packages_changed
`;
// Begun as soon as this worker starts, before the page's load request (glassllm.js starts the
// worker while the page's client.js loads): Pyodide's script imported (loadPyodide's own import
// of it then finds it loaded, or tries again), and this revision's (the worker's ?v=) kept start
// looked up, its bytes read. load uses them for that revision.
const REVISION = new URL(import.meta.url).searchParams.get("v");
import("./pyodide/pyodide.asm.js").catch(() => {});
const begun = { store: openStore(REVISION) };
begun.kept = begun.store.then(findStart);
begun.kept.catch(() => {});
let kept = null; // what a first visit keeps for the next, stored after its first result
let store = null; // this revision's cache, or null
let bridgeCall = null; // bridge.py's call(op, args), once loaded
let pyodide = null;
let loaded = null; // what load returned
let queue = Promise.resolve();

self.onmessage = (event) => {
  queue = queue.then(() => handle(event.data));
};

async function handle(message) {
  const { id, op, args } = message;
  try {
    const result = op === "load" ? await load(args)
      : op === "worked" ? await worked(args) : callBridge(op, args);
    self.postMessage({ type: "reply", id, ok: true, result }, transferables(result));
  } catch (error) {
    self.postMessage({ type: "reply", id, ok: false, error: describe(error) });
  }
  if (op !== "load" && kept) {
    const keeping = kept;
    kept = null;
    await keep(keeping).catch((error) => console.warn(`glassllm runtime: not kept for the next visit (${error.message})`));
  }
}

// this revision's cache (offline.js's), or null where there is no Cache Storage
async function openStore(revision) {
  if (!revision || !self.caches) return null;
  try {
    return await self.caches.open(`${CACHE_PREFIX}${revision}`);
  } catch {
    return null; // a browser that refuses storage here (a private window, say)
  }
}

// a kept entry (SNAPSHOT_KEY, PACKAGES_KEY) of the cache `opened`: null, or {bytes}, the
// promise of its bytes, read while Pyodide loads
async function findKept(opened, key) {
  const response = opened && await opened.match(new URL(key, BASE).href).catch(() => null);
  if (!response) return null;
  const bytes = response.arrayBuffer().then((buffer) => new Uint8Array(buffer));
  bytes.catch(() => {}); // a failed read surfaces where the bytes are used
  return { bytes };
}

// the kept start of the cache `opened`: [memory, packages], each null or findKept's; the memory
// is of no use without the packages (its modules' files), so it is read only beside them
async function findStart(opened) {
  const packages = await findKept(opened, PACKAGES_KEY);
  return [packages && await findKept(opened, SNAPSHOT_KEY), packages];
}

// Python's memory now, for a later visit (SNAPSHOT_KEY): a 4-byte little-endian length, the
// links (JSON, padded to 8 bytes: Pyodide reads the memory as 32-bit words), then Pyodide's own
// snapshot of the memory. Pyodide 0.27 snapshots a Python that has loaded no compiled module
// (it keeps no record of the dynamic linker's work); the links are that record: the handle of
// each library Python's dlopen loaded, in order (its file, and where its data and functions
// were placed, are in the handle, in the memory), every symbol's address and the size of the
// function table. Throws if a library was loaded another way.
function snapshotLoaded() {
  const linker = pyodide._module;
  const handles = new Map(Object.entries(linker.LDSO.loadedLibsByHandle)
    .filter(([handle]) => handle !== "0").map(([handle, library]) => [library, Number(handle)]));
  const libraries = [];
  for (const library of new Set(Object.values(linker.LDSO.loadedLibsByName))) {
    if (library.name === "__main__") continue;
    if (!handles.has(library)) throw new Error(`${library.name} was not loaded by Python's dlopen`);
    libraries.push(handles.get(library));
  }
  const links = { libraries, table: linker.wasmTable.length,
    symbols: Object.entries(linker.GOT).map(([name, entry]) => [name, entry.value]) };
  // the snapshot expects the packages Pyodide installed to be an empty record (index 6 of its
  // table of JS objects), as at boot; the record is given back as it was
  const installed = Object.entries(pyodide.loadedPackages);
  for (const [name] of installed) delete pyodide.loadedPackages[name];
  let memory;
  try {
    memory = pyodide.makeMemorySnapshot();
  } finally {
    for (const [name, source] of installed) pyodide.loadedPackages[name] = source;
  }
  let head = JSON.stringify(links);
  head += " ".repeat((8 - ((4 + head.length) % 8)) % 8);
  const bytes = new Uint8Array(4 + head.length + memory.length);
  new DataView(bytes.buffer).setUint32(0, head.length, true);
  new TextEncoder().encodeInto(head, bytes.subarray(4));
  bytes.set(memory, 4 + head.length);
  return bytes;
}

// SNAPSHOT_KEY's bytes as {links, memory}; throws on bytes that are not that
function splitSnapshot(bytes) {
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  if ((4 + length) % 8 || 4 + length >= bytes.byteLength) throw new Error("not a kept memory");
  return { links: JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length))),
    memory: bytes.subarray(4 + length) };
}

// A restored memory expects NumPy's compiled modules where the first visit's dynamic linker put
// them. Each is loaded again from its handle in that memory, which holds its file's name and the
// places of its data and its functions (Emscripten's loader reuses them for a handle it has
// loaded before, as for a thread): the same functions at the same places of the function table.
// Loading writes each module's initial data over the data the first visit had changed, so the
// memory is put back as restored once all are loaded. Throws if anything differs from the first
// visit's links: a symbol's address, the table's size, or a table already past a module's place.
function relink(links) {
  const linker = pyodide._module;
  if (links.libraries.length
      && linker.wasmTable.length > linker.HEAPU32[(links.libraries[0] + 20) >>> 2]) {
    throw new Error("the function table is already past the first module's place");
  }
  const restored = linker.HEAP8.slice();
  for (const handle of links.libraries) {
    if (!linker.dlopenInternal(handle, { loadAsync: false })) {
      throw new Error(`${linker.UTF8ToString(handle + 36)} did not load again`);
    }
  }
  linker.HEAP8.set(restored);
  const moved = links.symbols.filter(([name, value]) => !linker.GOT[name]
    || linker.GOT[name].value !== value);
  if (moved.length || linker.wasmTable.length !== links.table) {
    throw new Error(`the modules did not load as before (${moved.length} symbols moved, a table of `
      + `${linker.wasmTable.length} functions, not ${links.table})`);
  }
}

// After the first result: store what the next visit starts from (see SNAPSHOT_KEY)
async function keep({ snapshot, packages }) {
  if (snapshot) {
    await store.put(new URL(SNAPSHOT_KEY, BASE).href, new Response(snapshot));
  }
  if (packages) {
    const collect = pyodide.runPython(PACKAGES_CODE);
    let bytes;
    try {
      const proxy = collect(SITE_PACKAGES);
      bytes = proxy.toJs();
      proxy.destroy();
    } finally {
      collect.destroy();
    }
    await store.put(new URL(PACKAGES_KEY, BASE).href, new Response(bytes));
  }
}

// A revisit: the kept packages (PACKAGES_CODE's buffer) written back under site-packages, each
// file a view of the buffer that the file system keeps (canOwn: no copy). Throws on a buffer
// whose index does not add up to its length (then the wheels are installed instead)
function unpackPackages(bytes) {
  const headLength = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  const index = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + headLength)));
  const total = index.reduce((sum, [, size]) => sum + size, 4 + headLength);
  if (total !== bytes.byteLength) {
    throw new Error(`the kept packages hold ${bytes.byteLength} bytes, their index ${total}`);
  }
  let offset = 4 + headLength;
  writePackages(index.map(([path, size]) => {
    offset += size;
    return [path, bytes.subarray(offset - size, offset)];
  }));
}

// Files ([[path under site-packages, bytes]]) written there, each its bytes as given, which the
// file system keeps (canOwn: no copy)
function writePackages(files) {
  const FS = pyodide.FS;
  // each folder made once, below one known to exist (FS.mkdirTree tries every folder of the
  // path and throws, then catches, an error for each that exists: a third of the time here)
  const folders = new Set([SITE_PACKAGES]);
  const makeFolder = (folder) => {
    if (folders.has(folder)) return;
    makeFolder(folder.slice(0, folder.lastIndexOf("/")));
    try {
      FS.mkdir(folder);
    } catch (error) {
      if (!FS.isDir(FS.stat(folder).mode)) throw error; // it exists, as a folder: fine
    }
    folders.add(folder);
  };
  for (const [path, content] of files) {
    const file = `${SITE_PACKAGES}/${path}`;
    makeFolder(file.slice(0, file.lastIndexOf("/")));
    FS.writeFile(file, content, { canOwn: true });
  }
  // the import system's finders may have listed site-packages before these files were there
  const changed = pyodide.runPython(SITE_PACKAGES_CHANGED_CODE);
  try {
    changed();
  } finally {
    changed.destroy();
  }
}

class RuntimeFailure extends Error {
  constructor(kind, name, message) {
    super(message);
    this.kind = kind;
    this.name = name;
  }
}

function describe(error) {
  if (error instanceof RuntimeFailure) {
    return { kind: error.kind, name: error.name, message: error.message };
  }
  return { kind: "load", name: (error && error.name) || "Error", message: String(error && error.message || error) };
}

function transferables(result) {
  return result && result.values instanceof ArrayBuffer ? [result.values] : [];
}

function progress(stage, meter) {
  self.postMessage({ type: "progress", stage, loaded: meter.loaded, total: meter.total });
}

// a lock's hex sha256 as a subresource-integrity string
function integrityOf(hex) {
  const bytes = hex.match(/../g).map((pair) => parseInt(pair, 16));
  return `sha256-${btoa(String.fromCharCode(...bytes))}`;
}

// fetch with subresource integrity: the browser refuses (TypeError) bytes of another hash
async function fetchChecked(url, integrity, what, as = "text") {
  let response;
  try {
    response = await fetch(url, { integrity, cache: "no-cache" });
  } catch (error) {
    throw new RuntimeFailure("integrity", "IntegrityError",
      `${what} (${url}) could not be fetched with the sha256 this page's build.js lists `
      + `(${error.message}): the file is missing or is not the one this site was built with. `
      + `Rebuild the site and serve the new build.`);
  }
  if (!response.ok) {
    throw new RuntimeFailure("load", "LoadError", `${what} (${url}): HTTP ${response.status}`);
  }
  return as === "bytes" ? response.arrayBuffer() : response.text();
}

// A step page's worked numbers of the reader's run (bridge.py's worked): the docs build's
// code that writes them (worked.zip, checked against build.js) unpacked on the first call.
const WORKED_DIR = "/home/pyodide/glassllm-worked";
let workedReady = null;

async function worked(args) {
  if (!workedReady) {
    workedReady = fetchChecked(new URL(args.code.file, BASE).href, args.code.integrity,
      "The worked numbers' code", "bytes").then((buffer) => {
      pyodide.unpackArchive(buffer, "zip", { extractDir: WORKED_DIR });
      return callBridge("use_worked", { folder: WORKED_DIR });
    });
    workedReady.catch(() => { workedReady = null; });
  }
  await workedReady;
  const { code, ...call } = args;
  return callBridge("worked", call);
}

async function load(args) {
  if (bridgeCall) return loaded;
  const meter = new DownloadMeter(args.expected);
  const wasm = `${args.indexURL}pyodide.asm.wasm`;
  // what the boot reads: the wheels' downloads wait for these to arrive (below)
  const bootFiles = new Set([wasm, `${args.indexURL}python_stdlib.zip`]);
  let stage = "download";
  let shown = -1;
  const report = () => {
    const percent = Math.floor(meter.fraction * 200); // a message per half percent at most
    if (percent !== shown) {
      shown = percent;
      progress(stage, meter);
    }
  };
  // Pyodide fetches its wasm and standard library with fetch, the wheels are fetched below:
  // count their bytes
  const counted = countingFetch(self.fetch.bind(self), (url, count) => {
    const path = relativePath(url, BASE);
    if (path !== null) {
      meter.add(path, count);
      report();
    }
  }, (url) => {
    const path = relativePath(url, BASE);
    if (path === null) return;
    meter.finish(path);
    if (path === wasm && stage === "download") {
      stage = "start"; // the big download is done: compiling and booting the wasm
      progress(stage, meter);
    }
    if (bootFiles.delete(path) && !bootFiles.size) fetchWheels();
  });
  // the wheels download while Python boots (unless this revision's packages are kept): their
  // install (unzipWheels, or Pyodide's installer, its fallback, whose request has the same
  // integrity) gets the response already on its way. They start once the wasm and the
  // standard library have arrived, which the boot needs first: on a reader's line they would
  // otherwise share it with those and delay the boot (measured at 10 Mbit/s: see
  // benchmarks.md); from a cache or loopback that is a few milliseconds.
  const early = new Map();
  let wheels = null; // [url, integrity] of each wheel to fetch, once the lock is read
  const fetchWheels = () => {
    if (!wheels || bootFiles.size) return;
    for (const [url, integrity] of wheels) {
      const response = counted(url, { integrity });
      response.catch(() => {}); // a refusal surfaces where the wheel is installed
      early.set(url, response);
    }
    wheels = [];
  };
  // a request's response: the one already on its way, or a new (counted) request
  const fetchEarly = (resource, init) => {
    const url = String(resource && resource.url ? resource.url : resource);
    const response = early.get(url);
    early.delete(url);
    return response || counted(resource, init);
  };
  self.fetch = fetchEarly;
  progress(stage, meter);
  const started = performance.now();
  const ours = args.revision === REVISION;
  store = await (ours ? begun.store : openStore(args.revision));
  const [lockText, [snapshot, packages]] = await Promise.all([
    fetchChecked(new URL(args.lock.file, BASE).href, args.lock.integrity, "The runtime's lock"),
    ours ? begun.kept : findStart(store),
  ]);
  const indexURL = new URL(args.indexURL, BASE).href;
  const listed = Object.values(JSON.parse(lockText).packages).map((entry) => [
    new URL(entry.file_name, indexURL).href, integrityOf(entry.sha256)]);
  if (packages) {
    // kept: written back from this revision's cache, not fetched (unless they fail to unpack);
    // the bar counts them done
    for (const [url] of listed) meter.finish(relativePath(url, BASE));
  } else {
    wheels = listed;
    fetchWheels(); // at once if the boot's files have arrived already
  }
  const lockURL = URL.createObjectURL(new Blob([lockText], { type: "application/json" }));
  const options = {
    indexURL,
    lockFileURL: lockURL,
    stdout: () => {},
    stderr: (line) => console.warn(`glassllm runtime (Python): ${line}`),
  };
  let restored = false;
  try {
    if (snapshot && packages) {
      try {
        const kept = snapshot.bytes.then(splitSnapshot);
        // Pyodide loads its script and its wasm while the cache reads the memory
        pyodide = await loadPyodide({ ...options, _loadSnapshot: kept.then((part) => part.memory) });
        stage = "packages";
        progress(stage, meter);
        unpackPackages(await packages.bytes);
        relink((await kept).links);
        bridgeCall = pyodide.runPython(`__import__("${BRIDGE_MODULE}").call`);
        restored = true;
      } catch (error) {
        // not this Pyodide's memory after all: start from scratch, and keep a new one
        console.warn(`glassllm runtime: the kept start did not restore (${error.message})`);
        await store.delete(new URL(SNAPSHOT_KEY, BASE).href);
        pyodide = null;
        bridgeCall = null;
      }
    }
    if (!pyodide) {
      pyodide = await loadPyodide({ ...options, _makeSnapshot: Boolean(store) });
    }
  } finally {
    URL.revokeObjectURL(lockURL);
  }
  const booted = performance.now();
  let unpacked = restored;
  let installedBy = "kept"; // the packages: kept, or a first visit's "wheels.js" or "pyodide"
  if (!restored) {
    stage = "packages";
    progress(stage, meter);
    if (packages) {
      try {
        unpackPackages(await packages.bytes);
        unpacked = true;
      } catch (error) {
        console.warn(`glassllm runtime: the kept packages did not unpack (${error.message})`);
        await store.delete(new URL(PACKAGES_KEY, BASE).href);
      }
    }
    if (!unpacked) {
      try {
        writePackages(await unzipWheels(listed,
          (url, integrity) => fetchEarly(url, { integrity })));
        installedBy = "wheels.js";
      } catch (error) {
        if (!(error instanceof WheelRefused)) {
          console.warn(`glassllm runtime: the wheels did not unpack in JavaScript (${error.message}); `
            + "Pyodide installs them");
        }
        await installWheels(); // and says which wheel the browser refused, if one was
        installedBy = "pyodide";
      }
      pyodide.runPython("import sys; sys.dont_write_bytecode = False"); // for the next visit
    }
  }
  const installed = performance.now();
  if (!restored) {
    const code = await fetchChecked(new URL(args.bridge.file, BASE).href, args.bridge.integrity,
      "The runtime's bridge.py");
    const namespace = pyodide.runPython(`import sys, types\nsys.modules["${BRIDGE_MODULE}"] = `
      + `types.ModuleType("${BRIDGE_MODULE}")\nsys.modules["${BRIDGE_MODULE}"].__dict__`);
    try {
      pyodide.runPython(code, { globals: namespace, filename: "bridge.py" });
    } finally {
      namespace.destroy();
    }
    bridgeCall = pyodide.runPython(`__import__("${BRIDGE_MODULE}").call`);
  }
  stage = "model";
  progress(stage, meter);
  const info = callBridge("load", {});
  const build = args.build || {};
  if (info.build.version !== build.version || info.build.commit !== build.commit) {
    throw new RuntimeFailure("integrity", "IntegrityError",
      `the glassllm installed is ${info.build.version} (commit ${info.build.commit}), not the `
      + `${build.version} (commit ${build.commit}) this page was built with; rebuild the site`);
  }
  let made = null;
  if (store && !restored) {
    try {
      made = snapshotLoaded();
    } catch (error) {
      console.warn(`glassllm runtime: Python's memory not kept for the next visit (${error.message})`);
    }
  }
  if (store && (made || !unpacked)) kept = { snapshot: made, packages: !unpacked };
  meter.finishAll();
  progress("ready", meter);
  info.timing = {
    ...info.timing,
    boot_ms: booted - started,
    packages_ms: installed - booted,
    ready_ms: performance.now() - started,
    kept: { memory: restored, packages: unpacked },
    wheels: installedBy,
  };
  loaded = info;
  return info;
}

// A first visit (or a revisit without kept packages): the files of the lock's wheels
// ([[url, integrity]]; `responseOf(url, integrity)` their responses), read by wheels.js and
// inflated by Python's zlib, as [[path under site-packages, bytes]]: what Pyodide's installer
// writes, without its zipfile and the rest of its installer in Python (0.4-0.6 s of a first
// result here) and without what a page never reads (nor the INSTALLER and PYODIDE_SOURCE
// files it adds to each .dist-info, which nothing here reads). The files are not checked
// against the zip's CRCs: the browser has checked each wheel's sha256 against the lock.
// NumPy's compiled modules are left to Python's import, as LAZY_EXTENSIONS_CODE has Pyodide do.
// Throws WheelRefused if the browser refused a wheel (its sha256 is not the lock's).
async function unzipWheels(wheels, responseOf) {
  const responses = wheels.map(([url, integrity]) => responseOf(url, integrity));
  const decompress = pyodide.runPython("import zlib\nzlib.decompress");
  // raw deflate data inflated by Python's zlib (-15: raw, as a zip member is); the browser's
  // DecompressionStream takes two to three times as long over a wheel's hundreds of members
  const inflate = (data) => {
    const compressed = pyodide.toPy(data);
    try {
      const inflated = decompress(compressed, -15);
      try {
        return inflated.toJs();
      } finally {
        inflated.destroy();
      }
    } finally {
      compressed.destroy();
    }
  };
  try {
    return await unzipEach(wheels, responses, inflate);
  } finally {
    decompress.destroy();
  }
}

async function unzipEach(wheels, responses, inflate) {
  const files = [];
  for (const [index, pending] of responses.entries()) {
    let bytes;
    try {
      const response = await pending;
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      throw new WheelRefused(`${wheels[index][0]}: ${error.message}`);
    }
    files.push(...await wheelFiles(bytes, inflate));
  }
  return files;
}

class WheelRefused extends Error {}

// A first visit whose wheels did not unpack in JavaScript: the wheels of the lock, installed
// by Pyodide, which the browser refuses if their sha256 differs from the lock's
async function installWheels() {
  const problems = [];
  pyodide.runPython(LAZY_EXTENSIONS_CODE);
  // Pyodide's install ends with importlib.invalidate_caches(): site-packages' alone, for once
  const importlib = pyodide.pyimport("importlib");
  const everything = importlib.invalidate_caches;
  const narrow = pyodide.runPython(SITE_PACKAGES_CHANGED_CODE);
  importlib.invalidate_caches = narrow;
  try {
    await pyodide.loadPackage("glassllm", {
      messageCallback: () => {},
      errorCallback: (text) => problems.push(text),
    });
  } finally {
    importlib.invalidate_caches = everything;
    for (const proxy of [narrow, everything, importlib]) proxy.destroy();
  }
  // loadPackage does not throw when the browser refuses a wheel: look at what it installed
  const missing = ["numpy", "glassllm"].filter((name) => !(name in pyodide.loadedPackages));
  if (missing.length) {
    throw new RuntimeFailure("integrity", "IntegrityError",
      `the ${missing.join(" and ")} wheel did not install: ${problems.join(" ") || "no reason given"}. `
      + `The browser refuses a wheel whose sha256 differs from the site's lock (lock.json); `
      + `rebuild the site and serve the new build.`);
  }
}

// bridge.py's call, its reply as plain JS; the values' bytes as an ArrayBuffer of float32
function callBridge(op, args) {
  if (!bridgeCall) {
    throw new RuntimeFailure("load", "LoadError", "the runtime is not loaded yet");
  }
  const pyArgs = pyodide.toPy(args || {});
  let reply;
  try {
    const proxy = bridgeCall(op, pyArgs);
    try {
      reply = proxy.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
    } finally {
      proxy.destroy();
    }
  } finally {
    pyArgs.destroy();
  }
  if (!reply.ok) {
    throw new RuntimeFailure("engine", reply.error.type, reply.error.message);
  }
  const result = reply.result;
  if (result && result.values instanceof Uint8Array) {
    const bytes = result.values;
    result.values = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
      ? bytes.buffer : bytes.slice().buffer;
  }
  return result;
}
