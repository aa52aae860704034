// The document checks, directly: in Python's order, each event given its step's facts.
import { test } from "node:test";
import assert from "node:assert/strict";

import { checkDocument } from "../../../docs_build/assets/replay/format/check.js";
import { bytes } from "./fixtures.mjs";
import { TABLE } from "./step-table.mjs";

const doc = () => JSON.parse(bytes("good", "generation.json").toString("utf8"));
const keep = (item, i, event) => event;
const check = (d, version) => checkDocument(d, new Set(), version === undefined ? 1 : version, TABLE, keep);

test("a good document: its run, its events in order with their facts and shapes", () => {
  const rec = check(doc());
  assert.equal(rec.kind, "generation");
  assert.equal(rec.events.length, 2 * 23);
  assert.equal(rec.cache, true); // recorded as generate runs, with the KV cache
  const queries = rec.events.find((e) => e.step === "attn.q" && e.gen === 1);
  assert.equal(queries.facts, TABLE.facts.get("attn.q"));
  assert.deepEqual(queries.shape, [2, 1, 2]); // heads, the one new position of pass 1, head width
  assert.deepEqual(queries.pass, { tokens: 1, keys: 3, first: 2 });
  assert.deepEqual(rec.events.find((e) => e.step === "attn.scores" && e.gen === 1).shape, [2, 1, 3]);
  assert.deepEqual(rec.events.find((e) => e.step === "attn.q" && e.gen === 0).shape, [2, 2, 2]);
  assert.deepEqual(rec.stepIds, TABLE.kindSteps.generation);
});

test("a full recompute, and a file from before the cache field, has each pass's whole sequence", () => {
  for (const name of ["generation-full-recompute.json", "generation-written-before-the-cache-field.json"]) {
    const rec = check(JSON.parse(bytes("good", name).toString("utf8")));
    assert.equal(rec.cache, false);
    const queries = rec.events.find((e) => e.step === "attn.q" && e.gen === 1);
    assert.deepEqual(queries.shape, [2, 3, 2]); // heads, the 3 tokens of pass 1, head width
    assert.deepEqual(queries.pass, { tokens: 3, keys: 3, first: 0 });
  }
});

test("the first defect found is the one Python names first", () => {
  const refusal = (change, reason, where, version) => {
    const d = doc();
    change(d);
    assert.throws(() => check(d, version), (err) => err.reason === reason && err.where === where);
  };
  refusal((d) => { d.format = "other"; d.version = 99; }, "reasonFormat", "format");
  refusal((d) => { d.version = 99; d.kind = "x"; }, "reasonVersion", "version");
  refusal((d) => { d.kind = "x"; }, "reasonBroken", "version", 2); // a JSON document is version 1
  refusal((d) => { d.kind = "x"; }, "reasonBroken", "kind");
  refusal((d) => { d.cache = "yes"; d.events.pop(); }, "reasonBroken", "cache"); // before the events
  refusal((d) => { d.cache = false; }, "reasonShape", "events[23]"); // the shapes are a cached run's
  refusal((d) => { d.events.pop(); }, "reasonCount", "events");
  refusal((d) => { d.events[4].step = "loss"; }, "reasonBroken", "events[4]"); // no loss in a generation
  refusal((d) => { d.events[1].layer = null; }, "reasonBroken", "events[1]"); // a block step needs its block
  refusal((d) => { d.events[2].shape = [2, 2, 1]; }, "reasonShape", "events[2]");
});

test("integral numbers written as floats are no counts", () => {
  const d = doc();
  assert.throws(() => checkDocument(d, new Set([JSON.stringify(["events", 3, "order"])]), 1, TABLE, keep),
    (err) => err.where === "events[3]");
});
