// A snapshot's shape and values in a line of text.
import { test } from "node:test";
import assert from "node:assert/strict";

import { shapeText, statsText } from "../../../docs_build/assets/replay/inspect/describe.js";
import { translate } from "../../../docs_build/assets/replay/strings.js";
import { pageStrings } from "./fixtures.mjs";

const strings = pageStrings("en");
const t = (key, vars) => translate(strings, key, vars);

test("shapes as Python writes tuples", () => {
  assert.deepEqual([shapeText([3, 64]), shapeText([256]), shapeText([])], ["(3, 64)", "(256,)", "()"]);
});

test("the values' line: min, max, mean of the finite ones, and how many are not", () => {
  const e = { dtype: "float32", values: Float32Array.from([1, 3, -Infinity, -Infinity]) };
  assert.equal(statsText(t, e), "min 1 · max 3 · mean 2 · 2 non-finite");
  assert.equal(statsText(t, { dtype: "float32", values: Float32Array.from([-Infinity]) }), "1 non-finite");
});

test("the values' line in Portuguese writes the decimal comma", () => {
  const pt = (key, vars) => translate(pageStrings("pt"), key, vars);
  const e = { dtype: "float32", values: Float32Array.from([0.5, 1.25]) };
  const line = statsText(pt, e);
  assert.ok(line.includes("0,5") && line.includes("1,25") && !line.includes("."), line);
});
