// The most likely entries of a distribution.
import { test } from "node:test";
import assert from "node:assert/strict";

import { topEntries } from "../../../docs_build/assets/replay/inspect/top.js";

test("the top entries, largest first, ties by index", () => {
  assert.deepEqual(topEntries(Float32Array.from([0.1, 0.5, 0.2, 0.5]), 3), [1, 3, 2]);
  assert.deepEqual(topEntries(Float32Array.from([0.1]), 5), [0]);
});
