// node --test of lessondraw.js, the "Watch it learn" page's pure logic, on the recording the
// build ships (docs_build/data/lesson_induction.json).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { attentionTable, chartSvg, fixed, formatDuration, formedAt, indexAt, timeLeft } from "../../../../docs_build/assets/runtime/lessondraw.js";

const recording = JSON.parse(readFileSync(new URL("../../../../docs_build/data/lesson_induction.json", import.meta.url)));

test("formedAt applies the Python rule: the recording's formed steps", () => {
  for (const kind of ["previous_token", "induction"]) {
    assert.equal(formedAt(recording.history, kind), recording.formed[kind]);
  }
  const dips = [{ step: 0, induction: 0.6 }, { step: 10, induction: 0.4 }, { step: 20, induction: 0.5 },
    { step: 30, induction: 0.9 }];
  assert.equal(formedAt(dips, "induction"), 20); // formed only from where it stays
  assert.equal(formedAt(dips.slice(0, 2), "induction"), null);
  assert.equal(formedAt([], "induction"), null);
});

test("attention tables decode to causal rows that sum to one, to a byte per weight", () => {
  const n = recording.probe.tokens.length;
  for (const snapshot of [recording.history[0], recording.history.at(-1)]) {
    for (const name of ["previous_token_attention", "induction_attention"]) {
      const table = attentionTable(snapshot[name], n);
      for (let i = 0; i < n; i++) {
        let sum = 0;
        for (let j = 0; j < n; j++) {
          if (j > i) assert.equal(table[i * n + j], 0);
          sum += table[i * n + j];
        }
        assert.ok(Math.abs(sum - 1) <= (i + 1) * 0.5 / 255 + 1e-6, `${name} row ${i}: ${sum}`);
      }
    }
  }
  // the trained previous-token head: each row's weight just before the diagonal
  const last = attentionTable(recording.history.at(-1).previous_token_attention, n);
  assert.ok(last[5 * n + 4] > 0.8);
  assert.deepEqual(Array.from(attentionTable([[1, 0], [0.25, 0.75]], 2)), [1, 0, 0.25, 0.75]);
  assert.throws(() => attentionTable(recording.history[0].induction_attention, n + 1), /weights up to the diagonal/);
});

test("the chart draws a line per series, the formed marks and the cursor", () => {
  const svg = chartSvg(recording.history, {
    series: [{ key: "loss", label: "loss", className: "a" }, { key: "second_copy_loss", label: "b & <c>", className: "b" }],
    steps: recording.steps, yMax: 5, cursor: 400, title: "Losses",
    marks: [{ step: 390, label: "formed" }, { step: null, label: "never" }],
  });
  assert.equal((svg.match(/<polyline/g) || []).length, 2);
  assert.equal((svg.match(/gl-lesson-mark/g) || []).length, 1);
  assert.match(svg, /gl-lesson-cursor/);
  assert.match(svg, /b &amp; &lt;c&gt;/);
  const points = svg.match(/points="([^"]*)"/)[1].split(" ");
  assert.equal(points.length, recording.history.length);
});

test("indexAt, timeLeft, formatDuration and fixed", () => {
  assert.equal(indexAt(recording.history, 415), 41);
  assert.equal(indexAt(recording.history, 0), 0);
  assert.equal(timeLeft(0, 800, 0), null);
  assert.equal(timeLeft(200, 800, 50_000), 150_000);
  assert.equal(formatDuration(42_400), "42 s");
  assert.equal(formatDuration(65_000), "1 min 05 s");
  assert.equal(fixed(0.12345, 2, ","), "0,12");
});
