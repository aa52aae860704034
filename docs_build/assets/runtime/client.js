// The page's side of the runtime: one module Web Worker (worker.js) started on the first
// request, requests answered in order, progress and state as events, and cancel, which
// terminates the worker (Python cannot be interrupted mid-call): every pending request is
// refused with a "cancelled" error and the next request starts a new worker.
//
// glassllm.js makes one Runtime per page and exposes it as window.glassllm.

import {
  checkText, generateArguments, lessonAblateArguments, lessonAdvanceArguments, lessonStartArguments,
  recordArguments, trainArguments, workedArguments,
} from "./arguments.js";
import { unpackGeneration, unpackRecording, unpackRun } from "./records.js";

export const STATES = ["idle", "loading", "ready", "running", "cancelled", "failed"];

// An error the runtime gives a caller: `kind` is "engine" (the engine refused the input:
// `name` is its exception type, `message` its own words), "integrity" (a file is not the one
// the site was built with), "load" (the runtime could not start) or "cancelled".
export class RuntimeError extends Error {
  constructor(kind, name, message) {
    super(message);
    this.kind = kind;
    this.name = name;
  }
}

// What the worker should fetch, counted by its progress bar: every listed file but the
// scripts and modules, which load by import, not fetch.
export function fetchedFiles(download) {
  const out = {};
  for (const [path, sizes] of Object.entries((download && download.files) || {})) {
    if (!/\.m?js$/.test(path)) out[path] = sizes[0];
  }
  return out;
}

export class Runtime {
  // base: the runtime folder's URL; data: build.js's window.glassllmRuntime; events: an
  // EventTarget for "progress" and "state"; strings: the page language's runtime.* texts;
  // WorkerClass: Worker (a stand-in in node tests); started: {worker, failed}, worker.js of this
  // revision already started by glassllm.js (so that it loads while this module does; failed
  // set if its script failed to load), or null
  constructor({ base, data, events, strings, WorkerClass = globalThis.Worker, started = null }) {
    this.started = started;
    this.base = base;
    this.data = data;
    this.events = events;
    this.strings = strings || {};
    this.WorkerClass = WorkerClass;
    this.worker = null;
    this.pending = new Map();
    this.nextId = 1;
    this.ready = null; // the load request's promise, while this worker lives
    this.info = null;
    this.state = "idle";
  }

  setState(state, detail = {}) {
    this.state = state;
    this.events.dispatchEvent(new CustomEvent("state", { detail: { state, ...detail } }));
  }

  start() {
    const url = new URL(`worker.js?v=${this.data.revision}`, this.base);
    // the worker glassllm.js started while this module loaded, taken once (after a cancel, a
    // new one starts here); one whose script failed meanwhile is dropped, and the new one's
    // failure is reported
    const started = this.started;
    this.started = null;
    let worker = started && !started.failed ? started.worker : null;
    if (started && !worker) started.worker.terminate();
    try {
      worker = worker || new this.WorkerClass(url, { type: "module" });
    } catch (error) {
      throw new RuntimeError("load", "LoadError", `${this.strings.no_worker || "module Web Workers are not available"} (${error.message})`);
    }
    worker.onmessage = (event) => this.receive(event.data);
    worker.onerror = (event) => {
      if (event.preventDefault) event.preventDefault();
      const detail = event.message || "the worker script failed to load";
      this.fail(new RuntimeError("load", "LoadError", detail));
    };
    this.worker = worker;
  }

  send(op, args) {
    if (!this.worker) this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, op, args });
    });
  }

  receive(message) {
    if (message.type === "progress") {
      this.events.dispatchEvent(new CustomEvent("progress", { detail: message }));
      return;
    }
    const request = this.pending.get(message.id);
    if (!request) return;
    this.pending.delete(message.id);
    if (message.ok) request.resolve(message.result);
    else request.reject(new RuntimeError(message.error.kind, message.error.name, message.error.message));
  }

  // Start the runtime (nothing loads before the first call); resolves to what the worker
  // loaded: {build, labels, config, timing}.
  load() {
    if (!this.ready) {
      this.setState("loading");
      const data = this.data;
      this.ready = this.send("load", {
        indexURL: data.indexURL, lock: data.lock, bridge: data.bridge,
        expected: fetchedFiles(data.download), build: data.build, revision: data.revision,
      }).then((info) => {
        this.info = info;
        this.setState("ready", { info });
        return info;
      }, (error) => {
        this.fail(error);
        throw error;
      });
    }
    return this.ready;
  }

  async request(op, args, unpack) {
    await this.load();
    this.setState("running");
    try {
      return unpack(await this.send(op, args));
    } finally {
      if (this.state === "running" && this.pending.size === 0) this.setState("ready", { info: this.info });
    }
  }

  // A request whose arguments `check(config)` checks (arguments.js): first right away, with
  // the model's sizes if it has loaded (else null), so a wrong call downloads nothing, then
  // again with them after the load
  async checked(op, check, unpack) {
    check(this.info ? this.info.config : null);
    const info = await this.load();
    return this.request(op, check(info.config), unpack);
  }

  // {tokens, records, timing} of one traced forward pass over the tokens of `text` (the
  // demo's own tokenizer)
  run(text) {
    return this.checked("run", () => ({ text: checkText("run", text) }), unpackRun);
  }

  // {tokens}: the token IDs of `text` by the demo's tokenizer, the model not run
  encode(text) {
    return this.checked("encode", () => ({ text: checkText("encode", text) }),
      (result) => ({ tokens: Array.from(result.tokens) }));
  }

  // {tokens, words}: how the demo's tokenizer splits `text`, each word with the BPE merges
  // applied to its bytes ({left, right, joined, rank, count}) and its token IDs; words: null
  // for a byte tokenizer
  tokenize(text) {
    return this.checked("tokenize", () => ({ text: checkText("tokenize", text) }), (result) => result);
  }

  // {tokens, steps: [{token, probs, records}], timing}: `n` generated tokens after `text`
  // (options: greedy, temperature, top_k, seed, trace, as GlassLM.generate takes them)
  generate(text, n, options = {}) {
    return this.checked("generate", (config) => generateArguments(text, n, options, config),
      unpackGeneration);
  }

  // {tokens, generated, bytes, events, timing}: `n` tokens generated after `text` and
  // recorded as glassllm.recording does, `bytes` a version 2 recording file (the replay
  // page plays it); options: greedy (default true), temperature, top_k, seed
  record(text, n, options = {}) {
    return this.checked("record", (config) => recordArguments(text, n, options, config),
      unpackRecording);
  }

  // {heads, mode, clean, edited, timing}: glassllm.circuits.measure of the clean model and
  // with `heads` ([[layer, head], ...]) ablated at attn.context; `mode` "zero" or "mean"
  ablate(heads, mode = "zero") {
    if (!Array.isArray(heads)) {
      return Promise.reject(new TypeError(`glassllm.ablate(heads) takes a list of [layer, head] pairs, got ${typeof heads}`));
    }
    return this.request("ablate", { heads, mode }, (result) => result);
  }

  // {html}: a step page's worked numbers (docs_build/html/worked.py) redone on the reader's
  // run over `text`, formulas as arithmatex markers; html null where a forward pass does not
  // give what `step` works. options: lang (the page's), layer and head (the page's head).
  worked(text, step, options = {}) {
    const languages = Object.keys(this.data.ui || {});
    return this.checked("worked", (config) => ({
      code: { file: this.data.worked.file, integrity: this.data.worked.integrity },
      ...workedArguments(text, step, options, languages, config),
    }), (result) => ({ ...result, html: result.html ?? null })); // Pyodide turns None into undefined
  }

  // The induction lesson (glassllm.lessons) in the worker, in pieces: lessonStart begins it
  // ({seed, steps, snapshot_every, probe}), each lessonAdvance trains up to `maxSteps` more
  // steps ({snapshots, step, done, formed, check}), lessonAblate silences heads
  // ([[layer, head], ...]) in the lesson's model as it is ({heads, clean, edited}). One
  // lesson at a time: starting one ends the one before. The lesson's bounds come with the
  // page (build.js's lesson), so a wrong call is refused before anything loads.
  lessonStart(options = {}) {
    return this.checked("lesson_start", () => lessonStartArguments(options, this.data.lesson ?? null),
      (result) => result);
  }

  lessonAdvance(maxSteps) {
    return this.checked("lesson_advance", () => lessonAdvanceArguments(maxSteps), (result) => result);
  }

  lessonAblate(heads) {
    return this.checked("lesson_ablate", () => lessonAblateArguments(heads, this.data.lesson ?? null),
      (result) => result);
  }

  // The whole lesson: {history, formed, check, seed, steps, snapshot_every}, the snapshots
  // of glassllm.lessons.induction(seed) (options: seed, steps, snapshot_every, and
  // onSnapshot, called with each snapshot as it comes)
  async train(options = {}) {
    const { settings, onSnapshot } = trainArguments(options, this.data.lesson ?? null);
    const started = await this.lessonStart(settings);
    const history = [];
    let reply;
    do {
      reply = await this.lessonAdvance(started.snapshot_every);
      for (const snapshot of reply.snapshots) {
        history.push(snapshot);
        if (onSnapshot) onSnapshot(snapshot);
      }
    } while (!reply.done);
    return { history, formed: reply.formed, check: reply.check, seed: started.seed,
      steps: started.steps, snapshot_every: started.snapshot_every };
  }

  // End the worker and whatever it was doing; true if there was something to stop.
  cancel() {
    if (!this.worker) return false;
    this.stop(new RuntimeError("cancelled", "CancelledError", this.strings.cancelled_error
      || "cancelled: the runtime was stopped"));
    this.setState("cancelled");
    return true;
  }

  fail(error) {
    if (!this.worker) return;
    this.stop(error);
    this.setState("failed", { error });
  }

  stop(error) {
    this.worker.terminate();
    this.worker = null;
    this.ready = null;
    this.info = null;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const request of pending) request.reject(error);
  }
}
