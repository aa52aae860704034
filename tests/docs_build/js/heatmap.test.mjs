// The heatmap readout's pure logic: which cell a point is over, its labels and its value.
import { test } from "node:test";
import assert from "node:assert/strict";

import { cellAt, cellText, decodeValues, formatG4, inLanguage, LABELS_URL, labelsFrom, mergeValues,
  tokenLabel, tokenLabels, valuesFromTable } from "../../../docs_build/assets/heatmap.js";

test("a point maps to the cell under it, and nothing outside the grid", () => {
  const box = { x: 15, y: 14, width: 220, height: 140 }; // 10 x 10 cells of 22 x 14
  assert.deepEqual(cellAt(15, 14, box, 10, 10), [0, 0]);
  assert.deepEqual(cellAt(15 + 22 * 3 + 21.9, 14 + 14 * 7 + 0.1, box, 10, 10), [7, 3]);
  assert.deepEqual(cellAt(234.9, 153.9, box, 10, 10), [9, 9]);
  for (const [x, y] of [[14.9, 20], [20, 13.9], [235, 20], [20, 154]]) {
    assert.equal(cellAt(x, y, box, 10, 10), null);
  }
});

test("labels come back from runs of one-character texts and from single texts", () => {
  const labels = labelsFrom([
    { at: 0, positions: 3, text: "The" },
    { at: 3, positions: 1, text: "\\n" },
    { at: 4, positions: 2, text: "␣c" },
  ]);
  assert.deepEqual(labels, ["T", "h", "e", "\\n", "␣", "c"]);
  assert.deepEqual(labelsFrom([{ at: 0, positions: 1, text: "10" }]), ["10"]);
});

test("the values of a table that shows every cell are laid out row-major", () => {
  const values = valuesFromTable([0, 1], [0, 1, 2], [["a", "b", "c"], ["d", "e", "f"]], 2, 3);
  assert.deepEqual(values, ["a", "b", "c", "d", "e", "f"]);
});

test("the readout names the row and column, or the token of a vocabulary grid, and skips the padding", () => {
  assert.equal(cellText("token", ["T", "h"], ["T", "h"], 1, 0, 2, "−∞"), "h · T: −∞");
  assert.equal(cellText("feature", ["T"], [], 0, 5, 8, "0.25"), "T · 5: 0.25");
  const labels = Array.from({ length: 70 }, (_, t) => "t" + t);
  labels[65] = "␣the";
  assert.equal(cellText("byte-grid", [], [], 4, 1, 16, "0.7", labels), "65 (␣the): 0.7");
  // before the labels came (or a token outside them): the ID alone
  assert.equal(cellText("byte-grid", [], [], 4, 1, 16, "0.7"), "65: 0.7");
  assert.equal(cellText("byte-grid", [], [], 5, 0, 16, "0.7", labels), "80: 0.7");
  assert.equal(cellText("byte-grid", [], [], 15, 15, 16, "-", labels), null);
  assert.equal(cellText("token", ["T"], ["T"], 0, 0, 1, undefined), null);
});

test("the vocabulary's labels are the site's one table, fetched once on demand", async () => {
  // beside heatmap.js's folder: in the site, assets/glassllm/../replay/steps.json
  assert.equal(LABELS_URL.href, new URL("../../../docs_build/replay/steps.json", import.meta.url).href);
  let calls = 0;
  const load = () => { calls += 1; return Promise.resolve({ token_labels: ["a", "␣b"] }); };
  assert.equal(tokenLabels(load), null); // asked: not there yet
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(tokenLabels(load), ["a", "␣b"]);
  assert.equal(calls, 1);
  assert.equal(tokenLabel(tokenLabels(load), 1), "1 (␣b)");
});

test("a table's cells and the figure's own values fill the grid once each, row-major", () => {
  // a 2 x 4 slice whose table shows columns 0 and 3: the figure carries columns 1 and 2
  const fromTable = valuesFromTable([0, 1], [0, 3], [["a", "d"], ["e", "h"]], 2, 4, null);
  assert.deepEqual(fromTable, ["a", null, null, "d", "e", null, null, "h"]);
  assert.deepEqual(mergeValues(fromTable, ["b", "c", "f", "g"]), ["a", "b", "c", "d", "e", "f", "g", "h"]);
});

test("values come back from their codes in the notation of Python's %.4g", () => {
  assert.equal(formatG4(false, 1234, -4), "0.1234");
  assert.equal(formatG4(true, 5000, -4), "-0.5");
  assert.equal(formatG4(false, 1000, 1), "1e+04");
  assert.equal(formatG4(false, 1234, -8), "1.234e-05");
  assert.equal(formatG4(false, 1000, -1), "100");
  assert.deepEqual(decodeValues("AAAAAAABAAACAAADAAAE"), ["-", "0", "+∞", "−∞", "NaN"]);
});

test("a number is written with the page language's decimal mark", () => {
  assert.equal(inLanguage("0.8865", "pt"), "0,8865");
  assert.equal(inLanguage("-1.158e-05", "pt"), "-1,158e-05");
  assert.equal(inLanguage("0.8865", "en"), "0.8865");
  assert.equal(inLanguage("12", "pt"), "12");
  assert.equal(inLanguage(null, "pt"), null); // a cell the readout says nothing about
  assert.equal(inLanguage("0.8865"), "0.8865"); // outside a page: English
});
