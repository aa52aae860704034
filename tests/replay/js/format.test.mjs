// The replay page's reader on the shared recording files: it must accept exactly what
// glassllm.recording.loads accepts (tests/replay/test_fixtures.py holds Python to the same
// files and runs these tests).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";

import * as format from "../../../docs_build/assets/replay-format.js";

const FIXTURES = new URL("../../fixtures/recordings/", import.meta.url);
const files = (folder) => readdirSync(new URL(folder + "/", FIXTURES)).filter((n) => n.endsWith(".json")).sort();
const bytes = (folder, name) => readFileSync(new URL(folder + "/" + name, FIXTURES));
const expected = JSON.parse(readFileSync(new URL("expected.json", FIXTURES), "utf8"));
const tables = JSON.parse(readFileSync(new URL("format.json", FIXTURES), "utf8"));

test("the fixture set is the one Python is tested on", () => {
  assert.deepEqual(files("bad"), Object.keys(expected).sort());
  assert.ok(files("good").length >= 5 && files("bad").length >= 40);
});

for (const name of files("good")) {
  test("accepts good/" + name, () => {
    const rec = format.readRecording(bytes("good", name));
    const passes = rec.kind === "generation" ? rec.generated.length : 1;
    assert.equal(rec.events.length, format.eventsPerPass(rec.config) * passes);
    for (const e of rec.events) {
      assert.equal(e.values.length, e.shape.reduce((a, b) => a * b, 1));
    }
  });
}

for (const name of files("bad")) {
  test("refuses bad/" + name + " naming the place", () => {
    assert.throws(() => format.readRecording(bytes("bad", name)), (err) => {
      assert.ok(err instanceof format.RecordingError, "not a RecordingError: " + err);
      if (expected[name] !== null) {
        assert.ok(err.where.includes(expected[name]), `where "${err.where}" lacks "${expected[name]}"`);
      }
      return true;
    });
  });
}

test("the page's format tables equal Python's", () => {
  assert.equal(format.FORMAT, tables.format);
  assert.equal(format.VERSION, tables.version);
  assert.deepEqual(format.AXES, tables.axes);
  assert.deepEqual(Object.keys(format.AXES), Object.keys(tables.axes)); // STEPS order
  assert.deepEqual(format.LAYER_STEPS, tables.layer_steps);
  assert.deepEqual(format.HEAD_STEPS, tables.head_steps);
  for (const kind of Object.keys(tables.kind_steps)) {
    assert.deepEqual([...format.KIND_STEPS[kind]].sort(), tables.kind_steps[kind]);
  }
  assert.deepEqual(Object.keys(format.KIND_STEPS).sort(), Object.keys(tables.kind_steps).sort());
  assert.deepEqual(format.CONFIG_FIELDS, tables.config_fields);
  assert.equal(format.MAX_SIZE, tables.max_size);
  assert.equal(format.MAX_AXES, tables.max_axes);
  assert.equal(format.MAX_DEPTH, tables.max_depth);
  assert.equal(format.MAX_NUMBER_CHARS, tables.max_number_chars);
});

test("values arrive exactly: -inf above the diagonal of the mask, the sampled token", () => {
  const rec = format.readRecording(bytes("good", "generation.json"));
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
  const rec = format.readRecording(bytes("good", "event-with-head.json"));
  const e = rec.events.find((x) => x.head !== null);
  assert.equal(e.head, 1);
  assert.deepEqual(e.shape, [2, 2]);
});

test("numbers written as floats are not integers, the last duplicate key counts", () => {
  assert.deepEqual([...format.scanText('{"a": [1, 2.0], "b": {"c": 1e3, "d": 1.5}}')],
    [JSON.stringify(["a", 1]), JSON.stringify(["b", "c"])]);
  assert.deepEqual([...format.scanText('{"a": 1.0, "a": 1}')], []);
  assert.deepEqual([...format.scanText('{"k\\"ey": 2.0}')], [JSON.stringify(['k"ey'])]);
});

test("deep nesting is refused quickly, naming the place", () => {
  const text = '{"events": [{}, {"shape": ' + "[".repeat(1_000_000) + "]".repeat(1_000_000) + "}]}";
  const start = Date.now();
  assert.throws(() => format.scanText(text), (err) => err.reason === "reasonDepth" && err.where === "events[1].shape…");
  assert.ok(Date.now() - start < 5000);
});

test("the file's steps table is used only where it is well-formed", () => {
  const rec = format.readRecording(bytes("good", "extra-fields-and-odd-steps-table.json"));
  assert.deepEqual(format.fileStepInfo(rec, "embed"), { latex: "", plain: "", source: null });
  const full = format.readRecording(bytes("good", "generation.json"));
  const info = format.fileStepInfo(full, "attn.softmax");
  assert.ok(info.latex.length > 0 && info.source.file === "glassllm/nn.py");
  assert.deepEqual(format.fileStepInfo(full, "constructor"), { latex: "", plain: "", source: null });
});

test("text input: a BOM in a string is not skipped, as Python's json does not skip it", () => {
  const text = readFileSync(new URL("good/generation.json", FIXTURES), "utf8");
  assert.equal(format.readRecording(text).kind, "generation");
  assert.throws(() => format.readRecording("\ufeff" + text), (err) => err.reason === "reasonJson");
});
