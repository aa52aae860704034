// window.glassllm on every page of the site: the documented glassllm, run in this browser.
//
//   const { tokens, records } = await glassllm.run("The cat sat");
//
// A classic script, not a module, so that it also runs on a page opened from disk (file://),
// where browsers load no module: there it says, in the page's language, to serve the folder.
// Nothing else loads until a page or a script asks: the first call imports client.js, which
// starts the module worker (worker.js) that loads Pyodide, NumPy and the glassllm wheel. On a
// page with a run panel or the lesson's trainer, the reader's pointer or focus there asks.
// The first call also registers the service worker (offline.js), which keeps the build's
// runtime files for the next visit once the runtime has loaded.
// build.js, loaded before this script, is what the build knows: window.glassllmRuntime.
(function () {
  "use strict";
  var script = document.currentScript;
  var base = new URL(".", script.src).href;
  var data = window.glassllmRuntime;
  var events = new EventTarget();
  var fromDisk = location.protocol === "file:";

  function language() {
    var known = (data && data.languages) || {};
    var lang = document.documentElement.lang || "";
    return known[lang] || known[lang.split("-")[0]] || Object.values(known)[0] || "en";
  }
  var lang = language();
  var strings = (data && data.ui && data.ui[lang]) || {};

  function refusal(message) {
    var error = new Error(message);
    error.name = "LoadError";
    error.kind = "load";
    return Promise.reject(error);
  }

  // The service worker (offline.js) that keeps this build's runtime files for the next
  // visit: registered on the first call (nothing loads before), asked to keep the files once
  // the first result is there. Only where the browser allows one (https, or http on localhost);
  // elsewhere the runtime loads from the server every time, as it would without it.
  var offline = null; // the registration's promise
  function registerOffline() {
    if (offline || !data || !data.serviceWorker || !window.isSecureContext
        || !("serviceWorker" in navigator)) return;
    offline = navigator.serviceWorker.register(new URL(data.serviceWorker.file, base).href,
      { type: "module", scope: new URL(data.serviceWorker.scope, base).href });
    offline.catch(function (error) {
      console.warn("glassllm: the service worker did not register (" + error.message + "): "
        + "the runtime loads from the server each time");
    });
  }
  var kept = false;
  function keepOffline() {
    if (kept || !offline) return;
    kept = true;
    var ask = function (tries) {
      navigator.serviceWorker.ready.then(function (registration) {
        var channel = new MessageChannel();
        // a service worker replaced or stopped while it fills never answers: ask again
        var silent = setTimeout(function () {
          channel.port1.onmessage = null;
          if (tries > 1) ask(tries - 1);
          else events.dispatchEvent(new CustomEvent("cached", { detail:
            { revision: data.revision, error: "the service worker did not answer" } }));
        }, 60000);
        channel.port1.onmessage = function (event) {
          clearTimeout(silent);
          if (event.data.stale && tries > 1) {
            // the service worker of an older build. This build's (fetched again here) waits
            // for a page of its build to have loaded (offline.js), as this one has: ask it to
            // take over, then ask again once it has ("controllerchange"), or after 5 s
            var again = function () {
              navigator.serviceWorker.removeEventListener("controllerchange", again);
              clearTimeout(wait);
              ask(tries - 1);
            };
            var wait = setTimeout(again, 5000);
            navigator.serviceWorker.addEventListener("controllerchange", again);
            registration.update().catch(function () {}).then(function () {
              var next = registration.waiting || registration.installing;
              if (next) next.postMessage({ type: "glassllm-activate", revision: data.revision });
            });
            return;
          }
          events.dispatchEvent(new CustomEvent("cached", { detail: event.data }));
        };
        registration.active.postMessage({ type: "glassllm-cache", revision: data.revision },
          [channel.port2]);
      });
    };
    offline.then(function () { ask(20); }, function () {});
  }

  // {worker, failed}: worker.js of this build started (failed: its script did not load), or
  // null where no module worker starts
  function startWorker() {
    var started = null;
    try {
      started = { worker: new Worker(new URL("worker.js?v=" + data.revision, base).href,
        { type: "module" }), failed: false };
    } catch (error) {
      return null; // client.js says why
    }
    started.worker.addEventListener("error", function () { started.failed = true; });
    return started;
  }

  var state = "idle";
  var runtime = null; // the promise of client.js's Runtime, made on the first call
  function getRuntime() {
    if (fromDisk) return refusal(strings.file_protocol || "serve this site's folder over HTTP");
    if (!data) return refusal("the runtime's build data (assets/runtime/build.js) did not load");
    registerOffline();
    if (!runtime) {
      // the worker starts loading (worker.js, Pyodide's script, the kept start) while client.js
      // does
      var started = startWorker();
      runtime = import(new URL("client.js?v=" + data.revision, base).href).then(function (module) {
        return new module.Runtime({ base: base, data: data, events: events, strings: strings,
          started: started });
      });
      runtime.catch(function () {
        runtime = null;
        if (started) started.worker.terminate();
      });
    }
    return runtime;
  }

  var api = {
    // {tokens, records}: GlassLM.from_pretrained(DEMO_CHECKPOINT).forward(encode(text), Tracer()),
    // encode: the demo's own tokenizer (load_tokenizer(DEMO_CHECKPOINT).encode)
    run: function (text) {
      return getRuntime().then(function (r) { return r.run(text); });
    },
    // {tokens}: the demo's tokenizer's IDs of text, without running the model
    encode: function (text) {
      return getRuntime().then(function (r) { return r.encode(text); });
    },
    // {tokens, words: [{word, ids, merges: [{left, right, joined, rank, count}]}]}: how the
    // demo's tokenizer splits text, word by word, with the BPE merges it applied
    tokenize: function (text) {
      return getRuntime().then(function (r) { return r.tokenize(text); });
    },
    // {tokens, steps: [{token, probs, records}]}: GlassLM.generate(encode(text), n, ...)
    generate: function (text, n, options) {
      return getRuntime().then(function (r) { return r.generate(text, n, options); });
    },
    // {tokens, generated, bytes, events}: n tokens after text, recorded as
    // glassllm.recording.record_generation records them; bytes: a version 2 .glrec file
    record: function (text, n, options) {
      return getRuntime().then(function (r) { return r.record(text, n, options); });
    },
    // {heads, mode, clean, edited}: the probes' measures (glassllm.circuits.measure) of the
    // clean model and with heads ([[layer, head], ...]) ablated at attn.context
    ablate: function (heads, mode) {
      return getRuntime().then(function (r) { return r.ablate(heads, mode); });
    },
    // {html}: a step page's worked numbers redone on text's run (options: lang, layer, head)
    worked: function (text, step, options) {
      return getRuntime().then(function (r) { return r.worked(text, step, options); });
    },
    // {history, formed, check, ...}: glassllm.lessons.induction(seed) trained in the worker,
    // snapshot by snapshot (options: seed, steps, snapshot_every, onSnapshot)
    train: function (options) {
      return getRuntime().then(function (r) { return r.train(options); });
    },
    // the lesson in pieces, as the "Watch it learn" page trains it: start(options),
    // advance(maxSteps), ablate([[layer, head], ...])
    lesson: {
      start: function (options) {
        return getRuntime().then(function (r) { return r.lessonStart(options); });
      },
      advance: function (maxSteps) {
        return getRuntime().then(function (r) { return r.lessonAdvance(maxSteps); });
      },
      ablate: function (heads) {
        return getRuntime().then(function (r) { return r.lessonAblate(heads); });
      },
    },
    // start the runtime without running anything; resolves to {build, labels, config, timing}
    load: function () {
      return getRuntime().then(function (r) { return r.load(); });
    },
    // stop whatever runs or loads (the worker ends); true if there was something to stop
    cancel: function () {
      return runtime ? runtime.then(function (r) { return r.cancel(); }) : Promise.resolve(false);
    },
    // "idle" until asked, then "loading", "ready", "running", "cancelled" or "failed"
    get state() {
      return state;
    },
    // the glassllm this site's runtime holds: {version, commit, modified}, the build's
    build: data ? data.build : null,
    // bytes the first run downloads: {bytes, gzip} (what a gzip-serving server sends)
    download: data ? { bytes: data.download.bytes, gzip: data.download.gzip } : null,
    language: lang,
    strings: strings,
    fromDisk: fromDisk,
    // "progress" ({stage, loaded, total}) and "state" ({state, info, error}) events; "cached"
    // ({revision, stored, kept, refused}) once the service worker holds this build's files,
    // ({revision, error}) if it could not
    addEventListener: events.addEventListener.bind(events),
    removeEventListener: events.removeEventListener.bind(events),
  };
  events.addEventListener("state", function (event) {
    // after the first result (ready again after running), not while it is computed
    if (state === "running" && event.detail.state === "ready") keepOffline();
    state = event.detail.state;
  });
  window.glassllm = api;

  var mounts = document.querySelectorAll(".glassllm-run");
  var lessons = document.querySelectorAll(".glassllm-lesson");
  if (!mounts.length && !lessons.length) return;
  if (fromDisk || !data) {
    Array.from(mounts).concat(Array.from(lessons)).forEach(function (mount) {
      var note = document.createElement("p");
      note.className = "glr-message glr-message--error";
      note.setAttribute("role", "alert");
      note.textContent = fromDisk ? strings.file_protocol
        : "the runtime's build data (assets/runtime/build.js) did not load";
      mount.replaceChildren(note);
    });
    return;
  }
  // The reader's intent starts the runtime: the pointer on a run panel or on the lesson's
  // controls (data-glassllm-live), or the keyboard's focus there, loads it (nothing runs) so
  // that the click finds it started or ready. A failure shows when the reader asks.
  var intent = function (event) {
    var target = event.target;
    if (!target || !target.closest || !target.closest(".glassllm-run, [data-glassllm-live]")) return;
    ["pointerover", "focusin", "touchstart"].forEach(function (type) {
      document.removeEventListener(type, intent, true);
    });
    api.load().catch(function () {});
  };
  ["pointerover", "focusin", "touchstart"].forEach(function (type) {
    document.addEventListener(type, intent, { capture: true, passive: true });
  });
  if (mounts.length) {
    import(new URL("panel.js?v=" + data.revision, base).href).then(function (module) {
      module.mountAll(mounts, api, data);
    });
  }
  // the "Watch it learn" page: the lesson's player and trainer (lesson.js)
  if (lessons.length) {
    import(new URL("lesson.js?v=" + data.revision, base).href).then(function (module) {
      module.mountLessons(lessons, api, data);
    });
  }
})();
