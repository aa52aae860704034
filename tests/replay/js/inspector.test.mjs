// The inspector's pure parts: slices, windows, number text, colour scale.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { readRecording } from "../../../docs_build/assets/replay-format.js";
import * as insp from "../../../docs_build/assets/replay-inspector.js";

const read = (name) => readRecording(readFileSync(new URL("../../fixtures/recordings/good/" + name, import.meta.url)));
const rec = read("generation.json");
const cfg = { n_heads: 4, n_kv_heads: 2 };

test("number text: exact float32 round trip, three digits in cells, infinities", () => {
  const third = Math.fround(1 / 3);
  assert.equal(insp.exactText(third), "0.33333334");
  assert.equal(Math.fround(Number(insp.exactText(third))), third);
  assert.equal(insp.exactText(Math.fround(0.1)), "0.1");
  assert.deepEqual([insp.exactText(-Infinity), insp.exactText(NaN), insp.exactText(7, "int32")], ["-Infinity", "NaN", "7"]);
  assert.deepEqual([insp.shortText(third), insp.shortText(12345), insp.shortText(0.0001), insp.shortText(0)],
    ["0.333", "1.2e+4", "1.0e-4", "0"]);
  assert.deepEqual([insp.shortText(-Infinity), insp.shortText(Infinity), insp.shortText(NaN)], ["−∞", "+∞", "NaN"]);
  assert.deepEqual([insp.tokenText(32), insp.tokenText(10), insp.tokenText(65), insp.tokenText(7), insp.tokenText(200)],
    ["␣", "⏎", "A", "\\x07", "\\xc8"]);
  assert.equal(insp.utf8([0xc3, 0xa9]), "é");
  // a large vocabulary recorded without its tokenizer: IDs, never wrapped into bytes
  assert.equal(insp.tokenText(41809), "#41809");
  assert.equal(insp.utf8([72, 41809, 256]), "H #41809 #256");
});

test("slices: the leading axis picks one head, the rest are rows and columns", () => {
  const e = rec.events.find((x) => x.step === "attn.softmax" && x.gen === 1);
  const [heads, n] = e.shape;
  const picks = {};
  insp.setPick(picks, "head", 1, rec.config);
  const s = insp.sliceOf(e, picks, rec.config);
  assert.deepEqual(s.lead, [{ axis: "head", size: heads, pick: 1 }]);
  assert.deepEqual([s.rows, s.cols, s.rowAxis, s.colAxis], [n, n, "query", "key"]);
  assert.deepEqual(Array.from(s.values), Array.from(e.values.subarray(n * n, 2 * n * n)));
  // a pick beyond the axis falls back to 0; scalars and vectors have no leading axes
  assert.equal(insp.sliceOf(e, { head: 99 }, rec.config).lead[0].pick, 0);
  const probs = insp.sliceOf(rec.events.find((x) => x.step === "probs"), {}, rec.config);
  assert.deepEqual([probs.rows, probs.cols, probs.rowAxis, probs.colAxis], [1, 8, null, "vocab"]);
  assert.equal(insp.sliceOf(rec.events.find((x) => x.step === "sample"), {}, rec.config).rows, 0);
});

test("a head recorded on its own has no head axis to pick", () => {
  const sliced = read("event-with-head.json").events.find((x) => x.head !== null);
  assert.deepEqual(insp.axesOf(sliced), ["query", "key"]);
  assert.deepEqual(insp.sliceOf(sliced, {}, rec.config).lead, []);
});

test("grouped-query attention: the KV head shown serves the picked query head", () => {
  const picks = { head: 3 };
  assert.equal(insp.pickFor(picks, "kv_head", 2, cfg), 1);
  insp.setPick(picks, "kv_head", 0, cfg);
  assert.equal(picks.head, 0);
  assert.equal(insp.headGroup(cfg), 2);
});

test("windows: 32 x 32, opening on the chosen vocabulary column until the reader pans", () => {
  const off = { row: 0, col: 0 };
  assert.deepEqual(insp.windowOf(5, 256, off, 200, false), { r0: 0, r1: 5, c0: 192, c1: 224 });
  assert.deepEqual(insp.windowOf(5, 256, { row: 0, col: 32 }, 200, true), { r0: 0, r1: 5, c0: 32, c1: 64 });
  assert.deepEqual(insp.windowOf(100, 10, { row: 90, col: 0 }, -1, true), { r0: 68, r1: 100, c0: 0, c1: 10 });
  assert.equal(insp.panned(32, -1, 32), 0);
  assert.equal(insp.panned(0, -1, 32), 0);
  assert.equal(insp.panned(0, 1, 32), 32);
});

test("the chosen column: the sampled token in the last row, each target in a loss run", () => {
  const logits = rec.events.find((x) => x.step === "logits" && x.gen === 1);
  const rows = logits.shape[0];
  assert.equal(insp.chosenColumn(rec, logits, rows - 1, rows, "vocab"), rec.generated[1]);
  assert.equal(insp.chosenColumn(rec, logits, 0, rows, "vocab"), -1);
  assert.equal(insp.chosenColumn(rec, logits, rows - 1, rows, "feature"), -1);
  const loss = read("loss.json");
  const grad = loss.events.find((x) => x.step === "loss.grad");
  assert.deepEqual([0, 1].map((r) => insp.chosenColumn(loss, grad, r, 2, "vocab")), loss.targets);
  assert.deepEqual(insp.sequenceOf(rec, logits), rec.prompt.concat(rec.generated.slice(0, 1)));
});

test("colour scale: diverging around 0 with negatives, sequential otherwise, non-finite apart", () => {
  const mixed = insp.colourScale(Float32Array.from([-2, 1, -Infinity, NaN]));
  assert.deepEqual(mixed, { lo: -2, hi: 1, diverging: true, scale: 2 });
  assert.deepEqual(insp.cellColour(-1, mixed), { kind: "value", strength: 0.5, hue: "neg" });
  assert.deepEqual(insp.cellColour(1, mixed), { kind: "value", strength: 0.5, hue: "pos" });
  assert.deepEqual([insp.cellColour(-Infinity, mixed).kind, insp.cellColour(Infinity, mixed).kind, insp.cellColour(NaN, mixed).kind],
    ["masked", "posinf", "nan"]);
  const positive = insp.colourScale(Float32Array.from([0, 0.5, 0.25]));
  assert.equal(positive.diverging, false);
  assert.deepEqual(insp.cellColour(0.25, positive), { kind: "value", strength: 0.5, hue: "seq" });
  assert.equal(insp.colourScale(Float32Array.from([0, 0])).scale, 1); // all zero: no division by 0
});

test("statistics and the top entries skip nothing silently", () => {
  const s = insp.statsOf(Float32Array.from([1, 3, -Infinity, NaN]));
  assert.deepEqual(s, { min: 1, max: 3, mean: 2, finite: 2, count: 4 });
  assert.deepEqual(insp.topEntries(Float32Array.from([0.1, 0.5, 0.2, 0.5]), 3), [1, 3, 2]);
});

// issue 8 item 7: the inspector agrees with the step pages and with its own labels

test("window labels count from 0, like the axis labels beside them", () => {
  assert.deepEqual(insp.windowSpan(0, 11), { from: 0, to: 10 });
  const win = insp.windowOf(5, 256, { row: 0, col: 0 }, 200, false);
  assert.deepEqual(insp.windowSpan(win.c0, win.c1), { from: 192, to: 223 });
});

test("softmax's zero region above the diagonal is masked, as on the step page", () => {
  const e = rec.events.find((x) => x.step === "attn.softmax" && x.gen === 1);
  const s = insp.sliceOf(e, {}, rec.config);
  const n = s.rows;
  assert.deepEqual([insp.causalMasked(e, s, 0, 1), insp.causalMasked(e, s, 1, 0), insp.causalMasked(e, s, 1, 1)],
    [true, false, false]);
  for (let r = 0; r < n; r++) {
    for (let c = r + 1; c < n; c++) assert.equal(s.values[r * n + c], 0); // the engine's zeros
  }
  const full = { r0: 0, r1: n, c0: 0, c1: n };
  assert.equal(insp.maskedShown(e, s, full), 0);
  // the last row's first cell has nothing masked in it: no legend entry for masked cells
  assert.equal(insp.maskedShown(e, s, { r0: n - 1, r1: n, c0: 0, c1: 1 }), null);
  // masked zeros stay out of the scale and are drawn as masked, not as "no weight"
  const scale = insp.colourScale(s.values, (i) => insp.causalMasked(e, s, Math.floor(i / n), i % n));
  assert.equal(scale.diverging, false);
  assert.deepEqual(insp.cellColour(0, scale, true), { kind: "masked" });
  assert.equal(insp.cellColour(0, scale, false).kind, "value");
});

test("the masked legend only where the slice shows masked cells", () => {
  const pick = (step) => {
    const e = rec.events.find((x) => x.step === step && x.gen === 1 && (x.layer || 0) === 0);
    const s = insp.sliceOf(e, {}, rec.config);
    return insp.maskedShown(e, s, { r0: 0, r1: s.rows, c0: 0, c1: s.cols });
  };
  assert.equal(pick("attn.mask"), -Infinity);
  assert.equal(pick("attn.scores"), null); // same (query, key) shape, nothing masked yet
  assert.equal(pick("embed"), null);
});

test("a masked cell keeps out of the colour scale even when it is the largest value", () => {
  const values = Float32Array.from([1, 5, 0.5, 0.25]);
  assert.equal(insp.colourScale(values).hi, 5);
  assert.equal(insp.colourScale(values, (i) => i === 1).hi, 1);
});

test("the legend says when the colour scale is one head's own", () => {
  const softmax = rec.events.find((x) => x.step === "attn.softmax");
  const kRope = rec.events.find((x) => x.step === "attn.k_rope");
  const embed = rec.events.find((x) => x.step === "embed");
  assert.equal(insp.scaleSpan(insp.sliceOf(softmax, {}, rec.config)), "head");
  assert.equal(insp.scaleSpan(insp.sliceOf(kRope, {}, rec.config)), "head"); // a key/value head
  assert.equal(insp.scaleSpan(insp.sliceOf(embed, {}, rec.config)), "snapshot");
  const sliced = read("event-with-head.json").events.find((x) => x.head !== null);
  assert.equal(insp.scaleSpan(insp.sliceOf(sliced, {}, rec.config)), "snapshot"); // recorded as one head
});
