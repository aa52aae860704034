// The causal mask's region of a slice, in the steps the table marks causal.
import { test } from "node:test";
import assert from "node:assert/strict";

import { cellColour, colourScale } from "../../../docs_build/assets/replay/inspect/colour.js";
import { causalMasked, maskedShown } from "../../../docs_build/assets/replay/inspect/mask.js";
import { sliceOf } from "../../../docs_build/assets/replay/inspect/slice.js";
import { read } from "./fixtures.mjs";

const rec = read("generation-full-recompute.json");

test("softmax's zero region above the diagonal is masked, as on the step page", () => {
  const e = rec.events.find((x) => x.step === "attn.softmax" && x.gen === 1);
  const s = sliceOf(e, {}, rec.config);
  const n = s.rows;
  assert.deepEqual([causalMasked(e, s, 0, 1), causalMasked(e, s, 1, 0), causalMasked(e, s, 1, 1)],
    [true, false, false]);
  for (let r = 0; r < n; r++) {
    for (let c = r + 1; c < n; c++) assert.equal(s.values[r * n + c], 0); // the engine's zeros
  }
  const full = { r0: 0, r1: n, c0: 0, c1: n };
  assert.equal(maskedShown(e, s, full), 0);
  // the last row's first cell has nothing masked in it: no legend entry for masked cells
  assert.equal(maskedShown(e, s, { r0: n - 1, r1: n, c0: 0, c1: 1 }), null);
  // masked zeros stay out of the scale and are drawn as masked, not as "no weight"
  const scale = colourScale(s.values, (i) => causalMasked(e, s, Math.floor(i / n), i % n));
  assert.equal(scale.diverging, false);
  assert.deepEqual(cellColour(0, scale, true), { kind: "masked" });
  assert.equal(cellColour(0, scale, false).kind, "value");
});

test("the masked legend only where the slice shows masked cells", () => {
  const pick = (step) => {
    const e = rec.events.find((x) => x.step === step && x.gen === 1 && (x.layer || 0) === 0);
    const s = sliceOf(e, {}, rec.config);
    return maskedShown(e, s, { r0: 0, r1: s.rows, c0: 0, c1: s.cols });
  };
  assert.equal(pick("attn.mask"), -Infinity);
  assert.equal(pick("attn.scores"), null); // same (query, key) shape, nothing masked yet
  assert.equal(pick("embed"), null);
});

test("a cached step's one row is the newest position: every key is visible, nothing masked", () => {
  const cached = read("generation.json");
  for (const step of ["attn.mask", "attn.softmax"]) {
    const e = cached.events.find((x) => x.step === step && x.gen === 1);
    const s = sliceOf(e, {}, cached.config);
    assert.deepEqual([s.rows, s.cols], [1, 3]);
    assert.deepEqual([0, 1, 2].map((c) => causalMasked(e, s, 0, c)), [false, false, false]);
    assert.equal(maskedShown(e, s, { r0: 0, r1: 1, c0: 0, c1: 3 }), null);
  }
  // the prompt's pass is a forward pass: the keys after each query are masked
  const first = cached.events.find((x) => x.step === "attn.mask" && x.gen === 0);
  const s = sliceOf(first, {}, cached.config);
  assert.deepEqual([causalMasked(first, s, 0, 1), causalMasked(first, s, 1, 1)], [true, false]);
  assert.equal(maskedShown(first, s, { r0: 0, r1: 2, c0: 0, c1: 2 }), -Infinity);
});
