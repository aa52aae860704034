// Version 1: one JSON document with base64 arrays, decoded as it is read.
import { test } from "node:test";
import assert from "node:assert/strict";

import { jsonRecording } from "../../../docs_build/assets/replay/format/version1.js";
import { bytes } from "./fixtures.mjs";
import { TABLE } from "./step-table.mjs";

const text = bytes("good", "generation.json").toString("utf8");

test("each event's values decoded, float32 but the sampled token's int32", () => {
  const rec = jsonRecording(text, TABLE);
  const sample = rec.events.find((e) => e.step === "sample");
  assert.equal(sample.dtype, "int32");
  assert.ok(sample.values instanceof Int32Array);
  assert.ok(rec.events.filter((e) => e.step !== "sample").every((e) => e.dtype === "float32" && e.values instanceof Float32Array));
});

test("a dtype other than the step's is refused, naming the event", () => {
  const doc = JSON.parse(text);
  const i = doc.events.findIndex((e) => e.step === "sample");
  doc.events[i].dtype = "float32";
  assert.throws(() => jsonRecording(JSON.stringify(doc), TABLE), (err) => err.where === "events[" + i + "]");
});
