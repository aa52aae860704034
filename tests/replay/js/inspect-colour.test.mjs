// A cell's colour: one scale over the slice, diverging or sequential, non-finite apart.
import { test } from "node:test";
import assert from "node:assert/strict";

import { cellColour, colourScale, scaleSpan } from "../../../docs_build/assets/replay/inspect/colour.js";
import { sliceOf } from "../../../docs_build/assets/replay/inspect/slice.js";
import { read } from "./fixtures.mjs";

test("colour scale: diverging around 0 with negatives, sequential otherwise, non-finite apart", () => {
  const mixed = colourScale(Float32Array.from([-2, 1, -Infinity, NaN]));
  assert.deepEqual(mixed, { lo: -2, hi: 1, diverging: true, scale: 2 });
  assert.deepEqual(cellColour(-1, mixed), { kind: "value", strength: 0.5, hue: "neg" });
  assert.deepEqual(cellColour(1, mixed), { kind: "value", strength: 0.5, hue: "pos" });
  assert.deepEqual([cellColour(-Infinity, mixed).kind, cellColour(Infinity, mixed).kind, cellColour(NaN, mixed).kind],
    ["masked", "posinf", "nan"]);
  const positive = colourScale(Float32Array.from([0, 0.5, 0.25]));
  assert.equal(positive.diverging, false);
  assert.deepEqual(cellColour(0.25, positive), { kind: "value", strength: 0.5, hue: "seq" });
  assert.equal(colourScale(Float32Array.from([0, 0])).scale, 1); // all zero: no division by 0
});

test("a masked cell keeps out of the colour scale even when it is the largest value", () => {
  const values = Float32Array.from([1, 5, 0.5, 0.25]);
  assert.equal(colourScale(values).hi, 5);
  assert.equal(colourScale(values, (i) => i === 1).hi, 1);
});

test("the legend says when the colour scale is one head's own", () => {
  const rec = read("generation.json");
  const softmax = rec.events.find((x) => x.step === "attn.softmax");
  const kRope = rec.events.find((x) => x.step === "attn.k_rope");
  const embed = rec.events.find((x) => x.step === "embed");
  assert.equal(scaleSpan(sliceOf(softmax, {}, rec.config)), "head");
  assert.equal(scaleSpan(sliceOf(kRope, {}, rec.config)), "head"); // a key/value head
  assert.equal(scaleSpan(sliceOf(embed, {}, rec.config)), "snapshot");
  const sliced = read("event-with-head.json").events.find((x) => x.head !== null);
  assert.equal(scaleSpan(sliceOf(sliced, {}, rec.config)), "snapshot"); // recorded as one head
});
