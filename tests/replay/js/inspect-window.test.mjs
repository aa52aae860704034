// The window of a large slice on screen, panned instead of cut.
import { test } from "node:test";
import assert from "node:assert/strict";

import { panned, windowOf, windowSpan } from "../../../docs_build/assets/replay/inspect/window.js";

test("windows: 32 x 32, opening on the chosen vocabulary column until the reader pans", () => {
  const off = { row: 0, col: 0 };
  assert.deepEqual(windowOf(5, 256, off, 200, false), { r0: 0, r1: 5, c0: 192, c1: 224 });
  assert.deepEqual(windowOf(5, 256, { row: 0, col: 32 }, 200, true), { r0: 0, r1: 5, c0: 32, c1: 64 });
  assert.deepEqual(windowOf(100, 10, { row: 90, col: 0 }, -1, true), { r0: 68, r1: 100, c0: 0, c1: 10 });
  assert.equal(panned(32, -1, 32), 0);
  assert.equal(panned(0, -1, 32), 0);
  assert.equal(panned(0, 1, 32), 32);
});

test("window labels count from 0, like the axis labels beside them", () => {
  assert.deepEqual(windowSpan(0, 11), { from: 0, to: 10 });
  const win = windowOf(5, 256, { row: 0, col: 0 }, 200, false);
  assert.deepEqual(windowSpan(win.c0, win.c1), { from: 192, to: 223 });
});
