// node --test: a step page's view of the reader's run (docs_build/assets/stepview.js): the
// slice it draws, its colours on the site's scales, the table's cut
import { test } from "node:test";
import assert from "node:assert/strict";

import { cellText, colourOf, scaleOf, shownIndices, sliceOf } from "../../../docs_build/assets/stepview.js";

test("a record with a head axis shows one head's rows; a vector is one row; a scalar one cell", () => {
  const values = Float32Array.from({ length: 2 * 3 * 3 }, (_, i) => i);
  const second = sliceOf({ shape: [2, 3, 3], values }, 1);
  assert.deepEqual([second.rows, second.cols, Array.from(second.values)], [3, 3, [9, 10, 11, 12, 13, 14, 15, 16, 17]]);
  assert.deepEqual([sliceOf({ shape: [5], values: new Float32Array(5) }).rows, sliceOf({ shape: [5], values: new Float32Array(5) }).cols], [1, 5]);
  assert.equal(sliceOf({ shape: [], values: Float32Array.of(2.5) }).cols, 1);
});

test("colours: sequential from 0 for weights, diverging around 0 for signed values, the mask grey", () => {
  const weights = scaleOf(Float32Array.of(0, 0.5, 1, -Infinity));
  assert.deepEqual(weights, { diverging: false, low: 0, high: 1 });
  assert.deepEqual(colourOf(0, weights), [247, 251, 255]); // the first stop
  assert.deepEqual(colourOf(1, weights), [8, 48, 107]); // the last
  assert.deepEqual(colourOf(0.5, weights), [107, 174, 214]); // the middle stop
  assert.deepEqual(colourOf(-Infinity, weights), [217, 217, 217]);
  const signed = scaleOf(Float32Array.of(-2, 1));
  assert.equal(signed.diverging, true);
  assert.deepEqual(colourOf(0, signed), [247, 247, 247]); // zero is white
  assert.deepEqual(colourOf(-2, signed), [33, 102, 172]); // the larger magnitude ends the scale
  assert.deepEqual(colourOf(1, signed), [239, 138, 98]); // half way up: the 0.75 stop
});

test("a table cuts long axes like the step pages: the first ones, an ellipsis, the last two", () => {
  assert.deepEqual(shownIndices(5, 12), [0, 1, 2, 3, 4]);
  assert.deepEqual(shownIndices(20, 6), [0, 1, 2, 3, null, 18, 19]);
  assert.equal(cellText(-Infinity), "−∞");
  assert.equal(cellText(0.123456), "0.1235");
});

test("a worked formula of the reader's run is typeset as the build typesets it (katex_batch.mjs)", async () => {
  const { execFileSync } = await import("node:child_process");
  const { fileURLToPath } = await import("node:url");
  const { markerFormula, katexOptions } = await import("../../../docs_build/assets/stepview.js");
  const root = fileURLToPath(new URL("../../../", import.meta.url));
  const katex = (await import(new URL("node_modules/katex/dist/katex.mjs", `file://${root}`).href)).default;
  // markers as docs_build/html/worked.py writes them, a byte label KaTeX's fonts lack included
  const markers = ["\\[\\begin{aligned} t_{3} &= 32 \\;(\\text{“␣”}) \\end{aligned}\\]", "\\(A^{(2)}_{9,3}\\)"];
  const formulas = markers.map(markerFormula);
  assert.deepEqual(formulas.map((f) => f.display), [true, false]);
  const request = JSON.stringify({ formulas: formulas.map((f) => [f.tex, f.display]),
    options: { inline: "mathml", display: "mathml" } });  // docs_build/site/katex.py's OUTPUTS
  const built = JSON.parse(execFileSync(process.execPath,
    [`${root}docs_build/site/katex_batch.mjs`, `${root}node_modules/katex`], { input: request }));
  formulas.forEach((f, k) => {
    assert.equal(built.answers[k][1], null);
    assert.equal(katex.renderToString(f.tex, katexOptions(f.display)), built.answers[k][0]);
  });
});
