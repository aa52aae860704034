// The page's reader (docs_build/assets/replay/format/) on the shared recording files: it must
// accept exactly what glassllm.recording.loads accepts (tests/replay/test_fixtures.py holds
// Python to the same files and runs these tests).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import * as format from "../../../docs_build/assets/replay/format/index.js";
import { stepTable } from "../../../docs_build/assets/replay/steps.js";
import { FIXTURES, bytes, files, read } from "./fixtures.mjs";
import { STEPS_JSON, TABLE } from "./step-table.mjs";

const expected = JSON.parse(readFileSync(new URL("expected.json", FIXTURES), "utf8"));

test("the reader opens exactly the kinds of recording Python writes", () => {
  const tables = JSON.parse(readFileSync(new URL("format.json", FIXTURES), "utf8"));
  const kinds = files("good").map((name) => read(name).kind);
  assert.deepEqual([...new Set(kinds)].sort(), [...tables.recording_kinds].sort());
});

test("the fixture set is the one Python is tested on", () => {
  assert.deepEqual(files("bad"), Object.keys(expected).sort());
  assert.ok(files("good").length >= 5 && files("bad").length >= 40);
  assert.ok(files("good").filter((n) => n.endsWith(".glrec")).length >= 5);
});

for (const name of files("good")) {
  test("accepts good/" + name, () => {
    const rec = read(name);
    // a training step: its forward, the gradients, then one update event per parameter
    const passes = rec.kind === "generation" ? rec.generated.length : rec.kind === "training" ? 2 : 1;
    const updates = rec.kind === "training" ? format.parameterShapes(rec.config).length : 0;
    assert.equal(rec.events.length, format.eventsPerPass(TABLE, rec.kind, rec.config) * passes + updates);
    for (const e of rec.events.slice(0, rec.events.length - updates)) {
      assert.equal(e.values.length, e.shape.reduce((a, b) => a * b, 1));
      assert.equal(e.facts, TABLE.facts.get(e.step)); // each event knows its step's facts
    }
  });
}

const refusal = (name) => (err) => {
  assert.ok(err instanceof format.RecordingError, "not a RecordingError: " + err);
  if (expected[name] !== null) {
    assert.ok(err.where.includes(expected[name]), `where "${err.where}" lacks "${expected[name]}"`);
  }
  return true;
};

for (const name of files("bad")) {
  test("refuses bad/" + name + " naming the place", async () => {
    assert.throws(() => format.readRecording(bytes("bad", name), TABLE), refusal(name));
    // as the page opens a file: from its header and index (a File is read range by range)
    await assert.rejects(format.openRecording(format.blobSource(new Blob([bytes("bad", name)])), TABLE), refusal(name));
  });
}

for (const name of files("good").filter((n) => n.endsWith(".glrec"))) {
  test("opens good/" + name + " from a File, reading only the ranges it shows", async () => {
    const whole = read(name);
    const blob = new Blob([bytes("good", name)]);
    const reads = [];
    const source = format.blobSource(blob);
    const readRange = source.read;
    source.read = (start, end) => { reads.push([start, end]); return readRange(start, end); };
    const rec = await format.openRecording(source, TABLE);
    assert.equal(reads.length, 1); // the header and the index
    const e = rec.events[5];
    assert.equal(format.eventReady(rec, e), false);
    assert.throws(() => e.values, /not loaded/);
    await format.loadEvent(rec, e);
    assert.deepEqual(reads[1], [e.start, e.start + e.length]);
    assert.deepEqual(Array.from(e.values), Array.from(whole.events[5].values));
    for (const x of rec.events) await format.loadEvent(rec, x);
    rec.events.forEach((x, i) => assert.deepEqual(Array.from(x.values), Array.from(whole.events[i].values)));
  });
}

test("values arrive exactly: -inf above the diagonal of the mask, the sampled token", () => {
  const rec = read("generation.json");
  const mask = rec.events.find((e) => e.step === "attn.mask" && e.gen === 1);
  const [heads, n] = mask.shape;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const v = mask.values[(h * n + i) * n + j];
        assert.equal(j > i ? v === -Infinity : Number.isFinite(v), true);
      }
    }
  }
  const samples = rec.events.filter((e) => e.step === "sample").map((e) => e.values[0]);
  assert.deepEqual(samples, rec.generated);
  assert.ok(rec.events.find((e) => e.step === "embed").values instanceof Float32Array);
});

test("a head recorded on its own keeps its head index and loses the axis", () => {
  const rec = read("event-with-head.json");
  const e = rec.events.find((x) => x.head !== null);
  assert.equal(e.head, 1);
  assert.deepEqual(e.shape, [2, 2]);
});

test("text input: a BOM in a string is not skipped, as Python's json does not skip it", () => {
  const text = readFileSync(new URL("good/generation.json", FIXTURES), "utf8");
  assert.equal(format.readRecording(text, TABLE).kind, "generation");
  assert.throws(() => format.readRecording("\ufeff" + text, TABLE), (err) => err.reason === "reasonJson");
});

test("a binary recording holds exactly the JSON one's values; float16 within its precision", () => {
  const json = read("generation.json");
  const f32 = read("bin-generation.glrec");
  const f16 = read("bin-generation-float16.glrec");
  assert.equal(f32.events.length, json.events.length);
  json.events.forEach((e, i) => {
    assert.deepEqual(Array.from(f32.events[i].values), Array.from(e.values));
    assert.equal(f32.events[i].dtype, e.dtype);
    const half = f16.events[i].values;
    assert.ok(half instanceof (e.dtype === "int32" ? Int32Array : Float32Array));
    e.values.forEach((v, k) => {
      if (!Number.isFinite(v)) assert.ok(Object.is(half[k], v), `${i}/${k}: ${half[k]} for ${v}`);
      else assert.ok(Math.abs(half[k] - v) <= Math.abs(v) * 2 ** -11 + 2 ** -25, `${i}/${k}: ${half[k]} for ${v}`);
    });
  });
  // the prompt's pass masks the keys after each query; a cached step's one row masks none
  const mask = f16.events.find((e) => e.step === "attn.mask" && e.gen === 0);
  assert.equal(mask.dtype, "float16");
  assert.ok(Array.from(mask.values).some((v) => v === -Infinity));
  const cached = f16.events.find((e) => e.step === "attn.mask" && e.gen === 1);
  assert.ok(Array.from(cached.values).every((v) => Number.isFinite(v)));
});

test("the reader checks files against the table it is given, not a copy of its own", () => {
  const stepTableOf = (steps) => stepTable({ steps: steps, token_labels: STEPS_JSON.token_labels, token_bytes: STEPS_JSON.token_bytes });
  const rows = STEPS_JSON.steps;
  // the same good file against a table whose step of a head event has no head axis: refused
  const withHead = read("event-with-head.json").events.find((e) => e.head !== null);
  const changed = rows.map((r) => (r.id === withHead.step ? Object.assign({}, r, { head_axis: false }) : r));
  const other = stepTableOf(changed);
  assert.throws(() => format.readRecording(bytes("good", "event-with-head.json"), other),
    (err) => err.where === "events[" + withHead.index + "]");
  // and a table without the loss steps has no loss runs
  const noLoss = stepTableOf(rows.filter((r) => r.where !== "training"));
  assert.throws(() => format.readRecording(bytes("good", "loss.json"), noLoss), format.RecordingError);
  assert.equal(format.readRecording(bytes("good", "generation.json"), noLoss).kind, "generation");
});
