// How far the runtime's download has come: the worker counts the bytes of each file it
// fetches as they arrive, against the sizes the build measured (build.js: download.files).
// Pure logic; worker.js wires it to fetch, node --test checks it (tests/docs_build/runtime/js).

// The stages the page names while the runtime loads, in order.
export const STAGES = ["download", "start", "packages", "model", "ready"];

// Bytes arrived per file, against the expected raw sizes {site-relative path: bytes}.
export class DownloadMeter {
  constructor(expected) {
    this.expected = new Map(Object.entries(expected || {}));
    this.arrived = new Map();
    this.total = 0;
    for (const size of this.expected.values()) this.total += size;
  }

  // `path` received `count` more bytes (a file the build did not list counts for nothing:
  // the bar never runs past its end).
  add(path, count) {
    if (!this.expected.has(path)) return;
    const now = (this.arrived.get(path) || 0) + count;
    this.arrived.set(path, Math.min(now, this.expected.get(path)));
  }

  // `path` arrived in full (a file loaded without fetch, or a body smaller than listed).
  finish(path) {
    if (this.expected.has(path)) this.arrived.set(path, this.expected.get(path));
  }

  finishAll() {
    for (const path of this.expected.keys()) this.finish(path);
  }

  get loaded() {
    let sum = 0;
    for (const count of this.arrived.values()) sum += count;
    return sum;
  }

  // 0..1
  get fraction() {
    return this.total > 0 ? this.loaded / this.total : 1;
  }
}

// The file a fetched URL is, relative to the runtime's folder, or null outside it.
export function relativePath(url, base) {
  const target = new URL(url, base);
  const root = new URL(base);
  if (target.origin !== root.origin || !target.pathname.startsWith(root.pathname)) return null;
  return decodeURIComponent(target.pathname.slice(root.pathname.length));
}

// `fetchImpl` whose responses report their body's bytes as they arrive: onBytes(url, count)
// for each chunk, onDone(url) at the end. The caller gets the response itself, untouched (a
// wasm file keeps what WebAssembly.instantiateStreaming and the browser's code cache need);
// the counting reads a clone of it.
export function countingFetch(fetchImpl, onBytes, onDone) {
  return async function fetchCounted(resource, init) {
    const response = await fetchImpl(resource, init);
    const url = response.url || String(resource && resource.url ? resource.url : resource);
    if (!response.ok || !response.body) {
      onDone(url);
      return response;
    }
    count(response.clone().body.getReader(), url, onBytes, onDone);
    return response;
  };
}

async function count(reader, url, onBytes, onDone) {
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      onBytes(url, value.byteLength);
    }
  } catch (error) {
    // the response's own reader reports a broken download; the count just stops
  }
  onDone(url);
}
