// node --test: the browser runtime's pure modules (docs_build/assets/runtime): the download
// meter, the record unpacking, and the client's protocol with its worker (a stand-in here;
// tests/docs_build/runtime/test_browser.py runs the real one in chromium).
import assert from "node:assert/strict";
import { test } from "node:test";

import { DownloadMeter, countingFetch, relativePath } from "../../../../docs_build/assets/runtime/progress.js";
import { fill, nextTokens, unpackGeneration, unpackRun } from "../../../../docs_build/assets/runtime/records.js";
import { Runtime, RuntimeError, fetchedFiles } from "../../../../docs_build/assets/runtime/client.js";

test("the meter counts each listed file up to its size and ignores the others", () => {
  const meter = new DownloadMeter({ "a.wasm": 100, "b.whl": 50 });
  assert.equal(meter.total, 150);
  meter.add("a.wasm", 60);
  meter.add("other.js", 1000);
  assert.equal(meter.loaded, 60);
  meter.add("a.wasm", 60); // a body longer than listed never runs the bar past its end
  assert.equal(meter.loaded, 100);
  meter.finish("b.whl");
  assert.equal(meter.fraction, 1);
  assert.equal(new DownloadMeter({}).fraction, 1);
});

test("a fetched URL is named relative to the runtime's folder, or null outside it", () => {
  const base = "http://127.0.0.1:8000/assets/runtime/";
  assert.equal(relativePath("http://127.0.0.1:8000/assets/runtime/pyodide/pyodide.asm.wasm", base),
    "pyodide/pyodide.asm.wasm");
  // a lock's file names are relative to the core files' folder: "../wheels/..."
  assert.equal(relativePath(new URL("../wheels/a%2Bb.whl", base + "pyodide/").href, base), "wheels/a+b.whl");
  assert.equal(relativePath("http://127.0.0.1:8000/assets/katex/katex.js", base), null);
  assert.equal(relativePath("http://example.com/assets/runtime/lock.json", base), null);
});

function streamOf(chunks) {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new Uint8Array(chunk));
      controller.close();
    },
  });
}

test("counting fetch reports each chunk and the end, and hands back the body untouched", async () => {
  const seen = [];
  const fetched = countingFetch(
    async () => new Response(streamOf([[104, 105], [33]]), { headers: { "content-type": "application/wasm" } }),
    (url, count) => seen.push(["bytes", url, count]),
    (url) => seen.push(["done", url]));
  const response = await fetched("http://x/a.wasm");
  assert.equal(response.headers.get("content-type"), "application/wasm");
  assert.equal(await response.text(), "hi!");
  await new Promise((resolve) => setTimeout(resolve, 10)); // the clone is read alongside
  assert.deepEqual(seen, [["bytes", "http://x/a.wasm", 2], ["bytes", "http://x/a.wasm", 1], ["done", "http://x/a.wasm"]]);
});

test("counting fetch passes a failed response on as it came", async () => {
  const done = [];
  const fetched = countingFetch(async () => new Response("missing", { status: 404 }), () => {
    throw new Error("no bytes are counted");
  }, (url) => done.push(url));
  const response = await fetched("http://x/gone.whl");
  assert.equal(response.status, 404);
  assert.deepEqual(done, ["http://x/gone.whl"]);
});

function buffer(numbers) {
  return new Float32Array(numbers).buffer;
}

test("a run's records are views of its one buffer, shaped as the worker said", () => {
  const run = unpackRun({
    tokens: [72, 105],
    records: [
      { id: "embed", layer: null, head: null, shape: [2, 2], offset: 0, size: 4 },
      { id: "attn.mask", layer: 0, head: null, shape: [1, 2, 2], offset: 4, size: 4 },
    ],
    values: buffer([1, 2, 3, 4, 0.5, -Infinity, 0.25, 0.75]),
    timing: { forward_ms: 1.5 },
  });
  assert.deepEqual(run.tokens, [72, 105]);
  assert.deepEqual(run.records.map((r) => [r.id, r.layer, r.head, r.shape]),
    [["embed", null, null, [2, 2]], ["attn.mask", 0, null, [1, 2, 2]]]);
  assert.ok(run.records[1].values instanceof Float32Array);
  assert.deepEqual(Array.from(run.records[1].values), [0.5, -Infinity, 0.25, 0.75]);
  assert.equal(run.timing.forward_ms, 1.5);
});

test("a record that does not fit its shape or the buffer is refused", () => {
  const entry = { id: "embed", layer: null, head: null, shape: [2, 3], offset: 0, size: 4 };
  assert.throws(() => unpackRun({ tokens: [], records: [entry], values: buffer([1, 2, 3, 4]), timing: {} }),
    /does not fit its values/);
  const past = { id: "embed", layer: null, head: null, shape: [4], offset: 2, size: 4 };
  assert.throws(() => unpackRun({ tokens: [], records: [past], values: buffer([1, 2, 3, 4]), timing: {} }),
    /does not fit its values/);
});

test("a generation's steps carry their token, distribution and records", () => {
  const result = unpackGeneration({
    tokens: [65],
    steps: [
      { token: 1, probs: { offset: 0, size: 2 }, records: null },
      { token: 0, probs: { offset: 2, size: 2 }, records: [{ id: "sample", layer: null, head: null, shape: [], offset: 4, size: 1 }] },
    ],
    values: buffer([0.25, 0.75, 0.5, 0.5, 0]),
    timing: { generate_ms: 2 },
  });
  assert.deepEqual(result.steps.map((s) => [s.token, Array.from(s.probs)]), [[1, [0.25, 0.75]], [0, [0.5, 0.5]]]);
  assert.equal(result.steps[0].records, null);
  assert.deepEqual(result.steps[1].records[0].shape, []);
  assert.deepEqual(Array.from(result.steps[1].records[0].values), [0]);
});

test("the next tokens are the softmax of the last row of the logits, most likely first", () => {
  // last row [0, ln 3, 0]: probabilities 1/5, 3/5, 1/5
  const logits = { id: "logits", shape: [2, 3], values: new Float32Array([9, 9, 9, 0, Math.log(3), 0]) };
  const next = nextTokens([{ id: "embed", shape: [2, 1], values: new Float32Array(2) }, logits], 2);
  assert.deepEqual(next.map((n) => n.token), [1, 0]); // a tie keeps the lower ID first
  assert.ok(Math.abs(next[0].p - 0.6) < 1e-6 && Math.abs(next[1].p - 0.2) < 1e-6);
  assert.deepEqual(nextTokens([], 3), []);
});

test("fill puts values into the {name} placeholders and leaves unknown ones", () => {
  assert.equal(fill("about {mb} MB, {x}", { mb: "9.3" }), "about 9.3 MB, {x}");
});

test("the progress bar counts what the worker fetches, not the scripts it imports", () => {
  assert.deepEqual(fetchedFiles({ files: { "worker.js": [10, 5], "pyodide/pyodide.mjs": [10, 5],
    "pyodide/pyodide.asm.wasm": [100, 40], "lock.json": [3, 2] } }),
  { "pyodide/pyodide.asm.wasm": 100, "lock.json": 3 });
});

// A stand-in for the module worker: the test reads what the page posted and answers.
class FakeWorker {
  static made = [];
  constructor(url, options) {
    this.url = String(url);
    this.options = options;
    this.posted = [];
    this.terminated = false;
    FakeWorker.made.push(this);
  }
  postMessage(message) {
    this.posted.push(message);
  }
  terminate() {
    this.terminated = true;
  }
  reply(message) {
    this.onmessage({ data: message });
  }
}

const DATA = {
  revision: "abc", indexURL: "pyodide/", lock: { file: "lock.json", integrity: "sha256-x" },
  bridge: { file: "bridge.py", integrity: "sha256-y" }, build: { version: "0.1.0", commit: "c" },
  download: { files: { "worker.js": [1, 1], "pyodide/pyodide.asm.wasm": [100, 40] } },
  worked: { file: "worked.zip", integrity: "sha256-z" }, ui: { en: {}, pt: {} },
};

function runtime() {
  FakeWorker.made = [];
  const events = new EventTarget();
  const states = [];
  events.addEventListener("state", (event) => states.push(event.detail.state));
  const made = new Runtime({ base: "http://site/assets/runtime/", data: DATA, events,
    strings: { cancelled_error: "cancelled: stopped" }, WorkerClass: FakeWorker });
  return { made, states, events };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
const INFO = { build: DATA.build, labels: [], config: {}, timing: {} };

test("nothing starts until asked; a run loads first, then runs, in one module worker", async () => {
  const { made, states } = runtime();
  assert.equal(FakeWorker.made.length, 0);
  const run = made.run("Hi");
  const worker = FakeWorker.made[0];
  assert.equal(worker.url, "http://site/assets/runtime/worker.js?v=abc");
  assert.deepEqual(worker.options, { type: "module" });
  const load = worker.posted[0];
  assert.equal(load.op, "load");
  assert.deepEqual(load.args.expected, { "pyodide/pyodide.asm.wasm": 100 });
  assert.deepEqual(load.args.build, DATA.build);
  worker.reply({ type: "reply", id: load.id, ok: true, result: INFO });
  await tick();
  const request = worker.posted[1];
  assert.deepEqual([request.op, request.args], ["run", { text: "Hi" }]);
  worker.reply({ type: "reply", id: request.id, ok: true, result: {
    tokens: [72, 105], records: [{ id: "embed", layer: null, head: null, shape: [1], offset: 0, size: 1 }],
    values: buffer([7]), timing: { forward_ms: 1 } } });
  const result = await run;
  assert.deepEqual(result.tokens, [72, 105]);
  assert.deepEqual(Array.from(result.records[0].values), [7]);
  assert.deepEqual(states, ["loading", "ready", "running", "ready"]);
  assert.equal(FakeWorker.made.length, 1);
});

test("a worker glassllm.js started is used for the first load, once; one that failed is dropped", async () => {
  FakeWorker.made = [];
  const handed = new FakeWorker("http://site/assets/runtime/worker.js?v=abc", { type: "module" });
  FakeWorker.made = [];
  const made = new Runtime({ base: "http://site/assets/runtime/", data: DATA, events: new EventTarget(),
    strings: {}, WorkerClass: FakeWorker, started: { worker: handed, failed: false } });
  const first = made.load();
  assert.equal(FakeWorker.made.length, 0); // none started: the one handed over took the load
  assert.equal(handed.posted[0].op, "load");
  made.cancel();
  assert.equal(handed.terminated, true);
  await assert.rejects(first, (error) => error.kind === "cancelled");
  made.load().catch(() => {}); // after a cancel, a new worker
  assert.equal(FakeWorker.made.length, 1);

  const broken = new FakeWorker("http://site/assets/runtime/worker.js?v=abc", { type: "module" });
  FakeWorker.made = [];
  const other = new Runtime({ base: "http://site/assets/runtime/", data: DATA, events: new EventTarget(),
    strings: {}, WorkerClass: FakeWorker, started: { worker: broken, failed: true } });
  other.load().catch(() => {});
  assert.equal(broken.terminated, true);
  assert.equal(broken.posted.length, 0);
  assert.equal(FakeWorker.made.length, 1); // started anew, to report its own failure
  assert.equal(FakeWorker.made[0].posted[0].op, "load");
});

test("the engine's refusal arrives with its own type and message", async () => {
  const { made } = runtime();
  const run = made.run("");
  const worker = FakeWorker.made[0];
  worker.reply({ type: "reply", id: worker.posted[0].id, ok: true, result: INFO });
  await tick();
  worker.reply({ type: "reply", id: worker.posted[1].id, ok: false,
    error: { kind: "engine", name: "ValueError", message: "tokens is empty; give at least one token" } });
  await assert.rejects(run, (error) => error instanceof RuntimeError && error.kind === "engine"
    && error.name === "ValueError" && error.message === "tokens is empty; give at least one token");
  assert.equal(made.state, "ready"); // the runtime stays loaded for the next text
});

test("cancel ends the worker, refuses what was pending, and the next call starts anew", async () => {
  const { made, states } = runtime();
  const run = made.run("Hi");
  const first = FakeWorker.made[0];
  assert.equal(made.cancel(), true);
  assert.equal(first.terminated, true);
  await assert.rejects(run, (error) => error.kind === "cancelled" && error.message === "cancelled: stopped");
  assert.deepEqual(states, ["loading", "cancelled"]);
  assert.equal(made.cancel(), false); // nothing left to stop
  made.load();
  assert.equal(FakeWorker.made.length, 2);
  assert.equal(FakeWorker.made[1].posted[0].op, "load");
});

test("a worker that fails to start refuses every pending call as a load error", async () => {
  const { made, states } = runtime();
  const run = made.run("Hi");
  FakeWorker.made[0].onerror({ message: "SyntaxError: bad module", preventDefault() {} });
  await assert.rejects(run, (error) => error.kind === "load" && /bad module/.test(error.message));
  assert.equal(states.at(-1), "failed");
  assert.equal(FakeWorker.made[0].terminated, true);
});

test("a refused load (a wheel that is not the site's) fails the runtime, and a retry starts a new worker", async () => {
  const { made, states } = runtime();
  const load = made.load();
  const worker = FakeWorker.made[0];
  worker.reply({ type: "reply", id: worker.posted[0].id, ok: false,
    error: { kind: "integrity", name: "IntegrityError", message: "the glassllm wheel did not install" } });
  await assert.rejects(load, (error) => error.kind === "integrity");
  assert.equal(worker.terminated, true);
  assert.equal(states.at(-1), "failed");
  made.load();
  assert.equal(FakeWorker.made.length, 2);
});

test("progress messages become progress events", () => {
  const { made, events } = runtime();
  const seen = [];
  events.addEventListener("progress", (event) => seen.push(event.detail));
  made.load();
  FakeWorker.made[0].reply({ type: "progress", stage: "download", loaded: 5, total: 100 });
  assert.deepEqual(seen, [{ type: "progress", stage: "download", loaded: 5, total: 100 }]);
});

test("run and generate take a string", async () => {
  const { made } = runtime();
  await assert.rejects(made.run(42), TypeError);
  await assert.rejects(made.generate(null, 3), TypeError);
  assert.equal(FakeWorker.made.length, 0);
});

test("generate passes only the options given, as GlassLM.generate names them", async () => {
  const { made } = runtime();
  made.generate("Hi", 3, { greedy: true, top_k: 5, seed: undefined });
  const worker = FakeWorker.made[0];
  worker.reply({ type: "reply", id: worker.posted[0].id, ok: true, result: INFO });
  await tick();
  assert.deepEqual(worker.posted[1].args, { text: "Hi", n: 3, greedy: true, top_k: 5 });
});

test("a call the arguments refuse rejects before anything loads, and a head out of range once the model's sizes are known", async () => {
  const { made } = runtime();
  await assert.rejects(made.generate("Hi", 3, { ignored: 1 }), (error) => error instanceof TypeError
    && error.kind === "arguments" && /unknown option "ignored"/.test(error.message));
  await assert.rejects(made.record("Hi", 0), (error) => error instanceof RangeError && error.kind === "arguments");
  await assert.rejects(made.worked("Hi", "attn.softmax", { lang: "xx" }), /option lang must be one of "en", "pt"/);
  assert.equal(FakeWorker.made.length, 0);
  const worked = made.worked("Hi", "attn.softmax", { layer: 1, head: 99 });
  const worker = FakeWorker.made[0];
  worker.reply({ type: "reply", id: worker.posted[0].id, ok: true,
    result: { ...INFO, config: { vocab_size: 256, n_layers: 2, n_heads: 4 } } });
  await assert.rejects(worked, (error) => error instanceof RangeError
    && error.message === "glassllm.worked: option head must be an integer in [0, 3], got 99");
  assert.equal(worker.posted.length, 1); // only the load: the worker never saw the call
});
