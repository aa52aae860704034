// The slice the inspector shows: leading axes pick one index, the last two are the grid.
import { test } from "node:test";
import assert from "node:assert/strict";

import * as slices from "../../../docs_build/assets/replay/inspect/slice.js";
import { read } from "./fixtures.mjs";

const rec = read("generation-full-recompute.json");
const cfg = { n_heads: 4, n_kv_heads: 2 };

test("slices: the leading axis picks one head, the rest are rows and columns", () => {
  const e = rec.events.find((x) => x.step === "attn.softmax" && x.gen === 1);
  const [heads, n] = e.shape;
  const picks = {};
  slices.setPick(picks, "head", 1, rec.config);
  const s = slices.sliceOf(e, picks, rec.config);
  assert.deepEqual(s.lead, [{ axis: "head", size: heads, pick: 1 }]);
  assert.deepEqual([s.rows, s.cols, s.rowAxis, s.colAxis], [n, n, "query", "key"]);
  assert.deepEqual(Array.from(s.values), Array.from(e.values.subarray(n * n, 2 * n * n)));
  // a pick beyond the axis falls back to 0; scalars and vectors have no leading axes
  assert.equal(slices.sliceOf(e, { head: 99 }, rec.config).lead[0].pick, 0);
  const probs = slices.sliceOf(rec.events.find((x) => x.step === "probs"), {}, rec.config);
  assert.deepEqual([probs.rows, probs.cols, probs.rowAxis, probs.colAxis], [1, 8, null, "vocab"]);
  assert.equal(slices.sliceOf(rec.events.find((x) => x.step === "sample"), {}, rec.config).rows, 0);
});

test("a head recorded on its own has no head axis to pick", () => {
  const sliced = read("event-with-head.json").events.find((x) => x.head !== null);
  assert.deepEqual(slices.axesOf(sliced), ["query", "key"]);
  assert.deepEqual(slices.sliceOf(sliced, {}, rec.config).lead, []);
  const full = rec.events.find((x) => x.step === "attn.softmax");
  assert.deepEqual(slices.axesOf(full), ["head", "query", "key"]);
});

test("grouped-query attention: the KV head shown serves the picked query head", () => {
  const picks = { head: 3 };
  assert.equal(slices.pickFor(picks, "kv_head", 2, cfg), 1);
  slices.setPick(picks, "kv_head", 0, cfg);
  assert.equal(picks.head, 0);
  assert.equal(slices.headGroup(cfg), 2);
});

test("the rows of a generation step are the prompt and the tokens generated before it", () => {
  const logits = rec.events.find((x) => x.step === "logits" && x.gen === 1);
  assert.deepEqual(slices.sequenceOf(rec, logits), rec.prompt.concat(rec.generated.slice(0, 1)));
  const loss = read("loss.json");
  assert.deepEqual(slices.sequenceOf(loss, loss.events[0]), loss.prompt);
});

test("a cached step's rows are its newest position; its keys every position so far", () => {
  const cached = read("generation.json");
  const e = cached.events.find((x) => x.step === "attn.softmax" && x.gen === 1);
  const s = slices.sliceOf(e, {}, cached.config);
  assert.deepEqual([s.rows, s.cols, s.rowAxis, s.colAxis], [1, 3, "query", "key"]);
  assert.equal(slices.positionOf(e, "query", 0), 2); // the prompt's 2 tokens, then this one
  assert.deepEqual([0, 1, 2].map((i) => slices.positionOf(e, "key", i)), [0, 1, 2]);
  const prompt = cached.events.find((x) => x.step === "attn.softmax" && x.gen === 0);
  assert.deepEqual([0, 1].map((i) => slices.positionOf(prompt, "query", i)), [0, 1]);
});
