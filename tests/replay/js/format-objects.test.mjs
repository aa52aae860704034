// Reading JSON objects without trusting them.
import { test } from "node:test";
import assert from "node:assert/strict";

import { has, isObject, own } from "../../../docs_build/assets/replay/format/objects.js";

test("only a file's own keys count, whatever their name", () => {
  const parsed = JSON.parse('{"a": 1, "__proto__": 2}');
  assert.deepEqual([has(parsed, "a"), has(parsed, "constructor"), has(parsed, "__proto__")], [true, false, true]);
  assert.equal(own(parsed, "constructor"), undefined);
  assert.equal(own(parsed, "__proto__"), 2);
  assert.deepEqual([isObject({}), isObject([]), isObject(null), isObject("x")], [true, false, false, false]);
});
