// The runtime's module Web Worker: Pyodide, NumPy and the glassllm wheel, loaded from the
// site's own files when the page first asks, then bridge.py's calls, one at a time. The
// page never waits on Python: a long call only keeps this thread busy, and the page can
// end it (client.js: cancel terminates the worker).
//
// Messages in:  {id, op: "load", args: {indexURL, lock, bridge, expected, build}}
//               {id, op: "run" | "generate", args}            (bridge.py's call)
//               {id, op: "worked", args: {code, text, step, lang, layer, head}}
// Messages out: {type: "progress", stage, loaded, total}
//               {type: "reply", id, ok: true, result} | {type: "reply", id, ok: false, error}
//               where error = {kind: "engine" | "integrity" | "load", name, message}

import { loadPyodide } from "./pyodide/pyodide.mjs";
import { DownloadMeter, countingFetch, relativePath } from "./progress.js";

const BASE = new URL("./", import.meta.url).href;
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
  let stage = "download";
  let shown = -1;
  const report = () => {
    const percent = Math.floor(meter.fraction * 200); // a message per half percent at most
    if (percent !== shown) {
      shown = percent;
      progress(stage, meter);
    }
  };
  // Pyodide fetches its wasm, standard library and wheels with fetch: count their bytes
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
  });
  // the wheels download while Python boots: Pyodide's own request for each (with the same
  // integrity) gets the response already on its way
  const early = new Map();
  self.fetch = (resource, init) => {
    const url = String(resource && resource.url ? resource.url : resource);
    const response = early.get(url);
    early.delete(url);
    return response || counted(resource, init);
  };
  progress(stage, meter);
  const lockText = await fetchChecked(new URL(args.lock.file, BASE).href, args.lock.integrity,
    "The runtime's lock");
  const indexURL = new URL(args.indexURL, BASE).href;
  for (const entry of Object.values(JSON.parse(lockText).packages)) {
    const url = new URL(entry.file_name, indexURL).href;
    const response = counted(url, { integrity: integrityOf(entry.sha256) });
    response.catch(() => {}); // a refusal surfaces when Pyodide asks for it
    early.set(url, response);
  }
  const lockURL = URL.createObjectURL(new Blob([lockText], { type: "application/json" }));
  const started = performance.now();
  try {
    pyodide = await loadPyodide({
      indexURL,
      lockFileURL: lockURL,
      stdout: () => {},
      stderr: (line) => console.warn(`glassllm runtime (Python): ${line}`),
    });
  } finally {
    URL.revokeObjectURL(lockURL);
  }
  const booted = performance.now();
  stage = "packages";
  progress(stage, meter);
  const problems = [];
  await pyodide.loadPackage("glassllm", {
    messageCallback: () => {},
    errorCallback: (text) => problems.push(text),
  });
  // loadPackage does not throw when the browser refuses a wheel: look at what it installed
  const missing = ["numpy", "glassllm"].filter((name) => !(name in pyodide.loadedPackages));
  if (missing.length) {
    throw new RuntimeFailure("integrity", "IntegrityError",
      `the ${missing.join(" and ")} wheel did not install: ${problems.join(" ") || "no reason given"}. `
      + `The browser refuses a wheel whose sha256 differs from the site's lock (lock.json); `
      + `rebuild the site and serve the new build.`);
  }
  const installed = performance.now();
  const code = await fetchChecked(new URL(args.bridge.file, BASE).href, args.bridge.integrity,
    "The runtime's bridge.py");
  const namespace = pyodide.globals.get("dict")();
  pyodide.runPython(code, { globals: namespace, filename: "bridge.py" });
  bridgeCall = namespace.get("call");
  stage = "model";
  progress(stage, meter);
  const info = callBridge("load", {});
  const build = args.build || {};
  if (info.build.version !== build.version || info.build.commit !== build.commit) {
    throw new RuntimeFailure("integrity", "IntegrityError",
      `the glassllm installed is ${info.build.version} (commit ${info.build.commit}), not the `
      + `${build.version} (commit ${build.commit}) this page was built with; rebuild the site`);
  }
  meter.finishAll();
  progress("ready", meter);
  info.timing = {
    ...info.timing,
    boot_ms: booted - started,
    packages_ms: installed - booted,
    ready_ms: performance.now() - started,
  };
  loaded = info;
  return info;
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
