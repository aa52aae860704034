// A version 2 recording's events, read and decoded only when shown.
import { test } from "node:test";
import assert from "node:assert/strict";

import { BinaryEvent, EventStore } from "../../../docs_build/assets/replay/format/store.js";

/* A source of `bytes` read range by range (a File's way), counting the reads. */
function countedSource(bytes) {
  const reads = [];
  return {
    reads: reads, size: bytes.length,
    read: async (start, end) => { reads.push([start, end]); return bytes.slice(start, end); }
  };
}

const values = new Uint8Array(new Float32Array([1, -2, 3, 0.5]).buffer);

test("an event's bytes are read once, when loaded, and decoded when read", async () => {
  const source = countedSource(values);
  const store = new EventStore(source);
  const e = new BinaryEvent({ index: 0, step: "embed", shape: [2, 2] }, "float32", 0, 16, store);
  assert.equal(store.ready(e), false);
  assert.throws(() => e.values, /not loaded yet/);
  await store.load(e);
  await store.load(e);
  assert.deepEqual(source.reads, [[0, 16]]);
  assert.deepEqual(Array.from(e.values), [1, -2, 3, 0.5]);
  assert.equal(Object.keys(e).includes("store"), false); // not a field of the event's own
});

test("bytes that do not fill the event are refused, naming it", async () => {
  const store = new EventStore(countedSource(values.slice(0, 8)));
  const e = new BinaryEvent({ index: 3, step: "embed", shape: [2, 2] }, "float32", 0, 16, store);
  await assert.rejects(store.load(e), (err) => err.reason === "reasonBytes" && err.where === "events[3]");
});

test("bytes at hand are read in place, without a copy or a request", () => {
  const source = { size: values.length, at: (start, end) => values.subarray(start, end), read: () => assert.fail("read") };
  const store = new EventStore(source);
  const e = new BinaryEvent({ index: 1, step: "embed", shape: [4] }, "float32", 0, 16, store);
  assert.equal(store.ready(e), true);
  assert.equal(e.values.buffer, values.buffer);
});
