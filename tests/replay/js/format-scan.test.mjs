// Safe JSON scanning: bounded nesting and numbers, integral floats told apart.
import { test } from "node:test";
import assert from "node:assert/strict";

import { parseDocument, scanText } from "../../../docs_build/assets/replay/format/scan.js";

test("numbers written as floats are not integers, the last duplicate key counts", () => {
  assert.deepEqual([...scanText('{"a": [1, 2.0], "b": {"c": 1e3, "d": 1.5}}')],
    [JSON.stringify(["a", 1]), JSON.stringify(["b", "c"])]);
  assert.deepEqual([...scanText('{"a": 1.0, "a": 1}')], []);
  assert.deepEqual([...scanText('{"k\\"ey": 2.0}')], [JSON.stringify(['k"ey'])]);
});

test("deep nesting is refused quickly, naming the place", () => {
  const text = '{"events": [{}, {"shape": ' + "[".repeat(1_000_000) + "]".repeat(1_000_000) + "}]}";
  const start = Date.now();
  assert.throws(() => scanText(text), (err) => err.reason === "reasonDepth" && err.where === "events[1].shape…");
  assert.ok(Date.now() - start < 5000);
});

test("a number too long to be the format's is refused, naming where it is", () => {
  assert.throws(() => scanText('{"loss": ' + "1".repeat(65) + "}"), (err) => err.reason === "reasonNumber" && err.where === "loss");
  assert.equal(scanText('{"loss": ' + "1".repeat(64) + "}").size, 0);
});

test("text that is not JSON is refused as a whole, at the place given", () => {
  assert.throws(() => parseDocument("{nope", "index"), (err) => err.reason === "reasonJson" && err.where === "index");
  assert.deepEqual(parseDocument('{"a": 2.0}', "").doc, { a: 2 });
});
