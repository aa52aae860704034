// A snapshot's statistics.
import { test } from "node:test";
import assert from "node:assert/strict";

import { statsOf } from "../../../docs_build/assets/replay/inspect/stats.js";

test("statistics skip nothing silently", () => {
  const s = statsOf(Float32Array.from([1, 3, -Infinity, NaN]));
  assert.deepEqual(s, { min: 1, max: 3, mean: 2, finite: 2, count: 4 });
  assert.ok(Number.isNaN(statsOf(Float32Array.from([NaN])).mean));
});
