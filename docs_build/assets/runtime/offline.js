// The site's service worker (glassllm-sw.js, at the site's root, written by the docs build
// with this build's revision and the sha256 of every runtime file) keeps the runtime's files
// in Cache Storage, one cache per revision, so that a reader's second visit starts without
// the network. It never answers for anything else (the pages, the search index, build.js,
// glassllm.js always come from the server), and it never serves a stale mix:
//
// - a request is answered from the cache of the revision it belongs to: the revision in its
//   URL (worker.js?v=..., client.js?v=...), in its referrer's (a module that client.js?v=...
//   imports) or in the URL of the worker that makes it (the runtime's worker is
//   worker.js?v=<revision>); a request of no known revision, or of a
//   revision this service worker was not built with, goes to the server as if there were no
//   service worker;
// - the cache is filled only when a page asks (after its runtime has loaded: glassllm.js
//   posts {type: "glassllm-cache", revision}), with bytes whose sha256 is the one the build
//   wrote into the service worker: a file of another build is never stored;
// - a new build writes a new glassllm-sw.js, which the browser installs on the next page
//   load; it waits while the old one serves (passing the new build's files through), until
//   a page of the new build has its first result and asks it to take over
//   ({type: "glassllm-activate", revision}); then it drops the caches of every other revision.
//   Taking over earlier would change a loading page's service worker under its module
//   imports, which Chromium 150 can leave waiting forever.
//
// The pure parts are exported for node --test (tests/docs_build/runtime/js); serviceWorker()
// wires them to the service worker's events.

export const CACHE_PREFIX = "glassllm-runtime-";
export const CACHE_MESSAGE = "glassllm-cache";
export const ACTIVATE_MESSAGE = "glassllm-activate";

// the name of a revision's cache
export function cacheName(revision) {
  return `${CACHE_PREFIX}${revision}`;
}

// the caches to drop: the runtime's caches of any other revision (other names are not ours)
export function staleCaches(names, revision) {
  return names.filter((name) => name.startsWith(CACHE_PREFIX) && name !== cacheName(revision));
}

// the revision a URL carries in its query (?v=<revision>), or null
export function revisionOf(url) {
  try {
    return new URL(url).searchParams.get("v");
  } catch {
    return null;
  }
}

// the path of `url` relative to `scope` (the site's root), without query or fragment, if it
// is one of `files` (the build's {path: sha256}); else null
export function listedPath(url, scope, files) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const bare = parsed.origin + parsed.pathname;
  if (!bare.startsWith(scope)) return null;
  let path;
  try {
    path = decodeURIComponent(bare.slice(scope.length));
  } catch {
    return null;
  }
  return Object.hasOwn(files, path) ? path : null;
}

// lowercase hex of an ArrayBuffer
export function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

// The service worker: `scope` is self (ServiceWorkerGlobalScope); `build` = {revision, files}.
export function serviceWorker(scope, build) {
  const { revision, files } = build;
  const root = () => scope.registration.scope;

  async function dropStale() {
    for (const name of staleCaches(await scope.caches.keys(), revision)) {
      await scope.caches.delete(name);
    }
  }

  // no skipWaiting here and no clients.claim: a page never changes service worker while it
  // loads (a first visit stays without one; the kept files serve the next visit)
  scope.addEventListener("activate", (event) => {
    event.waitUntil(dropStale());
  });

  // the revision a request belongs to: its URL's, else its referrer's (a module imported by
  // client.js?v=...), else its client's (the runtime's worker, worker.js?v=...)
  async function requestRevision(event) {
    const own = revisionOf(event.request.url) || revisionOf(event.request.referrer);
    if (own) return own;
    if (!event.clientId) return null;
    const client = await scope.clients.get(event.clientId);
    return client ? revisionOf(client.url) : null;
  }

  async function answer(event) {
    if ((await requestRevision(event)) === revision) {
      const cache = await scope.caches.open(cacheName(revision));
      const kept = await cache.match(event.request.url, { ignoreSearch: true });
      if (kept) return kept;
    }
    return fetch(event.request);
  }

  scope.addEventListener("fetch", (event) => {
    if (event.request.method !== "GET" || listedPath(event.request.url, root(), files) === null) {
      return; // not the runtime's: the browser fetches it as it would without us
    }
    event.respondWith(answer(event));
  });

  // Keep this revision's files: each fetched from the server and stored only if its sha256
  // is the build's. Replies {revision, stored, kept, refused}: files stored now, files the
  // cache already had, files whose bytes were not the build's (a newer build on the server).
  async function fill() {
    // a page's message can reach this worker while it is still activating (message events
    // do not wait for "activate" to finish): drop the other revisions' caches here too, so
    // that a reply means this revision's cache is the only one
    await dropStale();
    const cache = await scope.caches.open(cacheName(revision));
    const reply = { revision, stored: 0, kept: 0, refused: [] };
    for (const [path, sha256] of Object.entries(files)) {
      const url = new URL(path, root()).href;
      if (await cache.match(url)) {
        reply.kept += 1;
        continue;
      }
      // the browser's HTTP cache has it from the page's run, most likely: no second download;
      // bytes of another build there are asked of the server again
      const got = await checked(url, sha256, "default") || await checked(url, sha256, "reload");
      if (!got) {
        reply.refused.push(path);
        continue;
      }
      await cache.put(url, new Response(got.bytes, { headers: got.type ? { "Content-Type": got.type } : {} }));
      reply.stored += 1;
    }
    return reply;
  }

  // {bytes, type} of `url` fetched in the cache `mode`, if its sha256 is `sha256`; else null
  async function checked(url, sha256, mode) {
    const response = await fetch(url, { cache: mode });
    const bytes = response.ok ? await response.arrayBuffer() : null;
    if (!bytes || hex(await scope.crypto.subtle.digest("SHA-256", bytes)) !== sha256) return null;
    return { bytes, type: response.headers.get("Content-Type") };
  }

  let filling = null;
  scope.addEventListener("message", (event) => {
    const message = event.data || {};
    if (message.type === ACTIVATE_MESSAGE && message.revision === revision) {
      scope.skipWaiting(); // a page of this build has loaded: take over from the old one
      return;
    }
    if (message.type !== CACHE_MESSAGE) return;
    const port = event.ports && event.ports[0];
    if (message.revision !== revision) {
      // the page is of another build: it has the browser fetch the new service worker and
      // asks that one to take over
      if (port) port.postMessage({ revision, stale: true });
      return;
    }
    if (!filling) {
      filling = fill();
      filling.catch(() => {}).then(() => { filling = null; });
    }
    event.waitUntil(filling.then((reply) => { if (port) port.postMessage(reply); },
      (error) => { if (port) port.postMessage({ revision, error: String(error) }); }));
  });
}
