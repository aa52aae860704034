// node --test: the service worker's pure parts (docs_build/assets/runtime/offline.js): which
// requests are the runtime's, which revision a URL names, which caches a new build drops;
// tests/docs_build/runtime/test_offline.py runs the service worker itself in chromium.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";

import {
  ACTIVATE_MESSAGE, CACHE_MESSAGE, CACHE_PREFIX, cacheName, hex, listedPath, revisionOf,
  serviceWorker, staleCaches,
} from "../../../../docs_build/assets/runtime/offline.js";

const SCOPE = "http://127.0.0.1:8000/site/";
const FILES = { "assets/runtime/pyodide/pyodide.asm.wasm": "aa", "assets/runtime/wheels/a+b.whl": "bb" };

test("a request is the runtime's when its path from the scope is listed, query aside", () => {
  assert.equal(listedPath(`${SCOPE}assets/runtime/pyodide/pyodide.asm.wasm`, SCOPE, FILES),
    "assets/runtime/pyodide/pyodide.asm.wasm");
  assert.equal(listedPath(`${SCOPE}assets/runtime/pyodide/pyodide.asm.wasm?v=1#x`, SCOPE, FILES),
    "assets/runtime/pyodide/pyodide.asm.wasm");
  assert.equal(listedPath(`${SCOPE}assets/runtime/wheels/a%2Bb.whl`, SCOPE, FILES),
    "assets/runtime/wheels/a+b.whl");
  // a page, an unlisted file, another scope or origin, a broken URL: not ours
  assert.equal(listedPath(`${SCOPE}steps/embed/`, SCOPE, FILES), null);
  assert.equal(listedPath(`${SCOPE}assets/runtime/build.js`, SCOPE, FILES), null);
  assert.equal(listedPath("http://127.0.0.1:8000/assets/runtime/pyodide/pyodide.asm.wasm", SCOPE, FILES), null);
  assert.equal(listedPath(`http://other.example/site/assets/runtime/pyodide/pyodide.asm.wasm`, SCOPE, FILES), null);
  assert.equal(listedPath("not a url", SCOPE, FILES), null);
  assert.equal(listedPath(`${SCOPE}assets/runtime/%E0%A4%A`, SCOPE, FILES), null);
  assert.equal(listedPath(`${SCOPE}toString`, SCOPE, FILES), null); // own keys only
});

test("a URL's revision is its v parameter, or null", () => {
  assert.equal(revisionOf(`${SCOPE}assets/runtime/worker.js?v=0123abcd`), "0123abcd");
  assert.equal(revisionOf(`${SCOPE}assets/runtime/worker.js`), null);
  assert.equal(revisionOf(""), null); // a request with no referrer
  assert.equal(revisionOf(undefined), null);
});

test("a new revision drops the runtime's caches of every other revision, and no other cache", () => {
  assert.equal(cacheName("r2"), `${CACHE_PREFIX}r2`);
  const names = [cacheName("r1"), cacheName("r2"), "someone-else", cacheName("r0")];
  assert.deepEqual(staleCaches(names, "r2"), [cacheName("r1"), cacheName("r0")]);
  assert.deepEqual(staleCaches([cacheName("r2")], "r2"), []);
});

test("hex writes a digest as the build writes sha256 (hashlib's hexdigest)", () => {
  const bytes = new TextEncoder().encode("glassllm");
  const expected = createHash("sha256").update(bytes).digest("hex");
  assert.equal(hex(new Uint8Array(createHash("sha256").update(bytes).digest()).buffer), expected);
  assert.equal(hex(new Uint8Array([0, 15, 255]).buffer), "000fff");
});

// a ServiceWorkerGlobalScope with what serviceWorker() touches: events, caches, skipWaiting
function fakeScope(cacheNames) {
  const listeners = {};
  const scope = {
    names: [...cacheNames],
    skipped: 0,
    claimed: 0,
    registration: { scope: SCOPE },
    addEventListener: (type, listener) => { listeners[type] = listener; },
    skipWaiting: () => { scope.skipped += 1; return Promise.resolve(); },
    clients: { claim: () => { scope.claimed += 1; return Promise.resolve(); } },
    caches: {
      keys: async () => [...scope.names],
      delete: async (name) => { scope.names = scope.names.filter((n) => n !== name); return true; },
    },
    async dispatch(type, data) {
      const waits = [];
      const replies = [];
      const port = { postMessage: (reply) => replies.push(reply) };
      if (listeners[type]) {
        listeners[type]({ data, ports: [port], waitUntil: (promise) => waits.push(promise) });
      }
      await Promise.all(waits);
      return replies;
    },
  };
  return scope;
}

test("a new build's service worker takes over only when a page of its build asks", async () => {
  const scope = fakeScope([cacheName("r1"), cacheName("r2"), "other"]);
  serviceWorker(scope, { revision: "r2", files: FILES });
  await scope.dispatch("install");
  assert.equal(scope.skipped, 0); // installed, it waits while the old one serves
  await scope.dispatch("message", { type: ACTIVATE_MESSAGE, revision: "r1" });
  assert.equal(scope.skipped, 0); // a page of another build cannot make it take over
  await scope.dispatch("message", { type: ACTIVATE_MESSAGE, revision: "r2" });
  assert.equal(scope.skipped, 1);
  await scope.dispatch("activate");
  assert.deepEqual(scope.names, [cacheName("r2"), "other"]);
  assert.equal(scope.claimed, 0); // no page changes service worker while it loads
});

test("a page of another build is told the service worker is stale", async () => {
  const scope = fakeScope([]);
  serviceWorker(scope, { revision: "r1", files: FILES });
  assert.deepEqual(await scope.dispatch("message", { type: CACHE_MESSAGE, revision: "r2" }),
    [{ revision: "r1", stale: true }]);
});
