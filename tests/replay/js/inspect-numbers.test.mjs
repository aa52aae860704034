// The text of a number: exact in data-value, three digits in a cell, infinities spelled.
import { test } from "node:test";
import assert from "node:assert/strict";

import { exactText, shortText, written } from "../../../docs_build/assets/replay/inspect/numbers.js";

test("number text: exact float32 round trip, three digits in cells, infinities", () => {
  const third = Math.fround(1 / 3);
  assert.equal(exactText(third), "0.33333334");
  assert.equal(Math.fround(Number(exactText(third))), third);
  assert.equal(exactText(Math.fround(0.1)), "0.1");
  assert.deepEqual([exactText(-Infinity), exactText(NaN), exactText(7, "int32")], ["-Infinity", "NaN", "7"]);
  assert.deepEqual([shortText(third), shortText(12345), shortText(0.0001), shortText(0)],
    ["0.333", "1.2e+4", "1.0e-4", "0"]);
  assert.deepEqual([shortText(-Infinity), shortText(Infinity), shortText(NaN)], ["−∞", "+∞", "NaN"]);
});

test("a number as the page's language writes it: its decimal mark, the rest as it is", () => {
  assert.equal(written("0.333", ","), "0,333");
  assert.equal(written("1.0e-4", ","), "1,0e-4");
  assert.deepEqual([written("0.333", "."), written("7", ","), written("−∞", ",")], ["0.333", "7", "−∞"]);
});
