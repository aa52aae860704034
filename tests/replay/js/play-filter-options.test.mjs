// The choices of the filters for a recording.
import { test } from "node:test";
import assert from "node:assert/strict";

import { filterOptions } from "../../../docs_build/assets/replay/play/filter-options.js";
import { translate } from "../../../docs_build/assets/replay/strings.js";
import { pageStrings, read } from "./fixtures.mjs";
import { TABLE } from "./step-table.mjs";

const strings = pageStrings("en");
const t = (key, vars) => translate(strings, key, vars);

test("a generation's steps in order with their labels, its blocks, heads and tokens", () => {
  const rec = read("generation.json");
  const options = filterOptions({ t: t, labels: TABLE.tokenLabels, rec: rec }, (id) => (id === "embed" ? "Token embedding" : ""));
  assert.deepEqual(options.step.map(([value]) => value), rec.stepIds);
  assert.deepEqual(options.step[0], ["embed", "embed — Token embedding"]);
  assert.deepEqual(options.step[1], ["attn.norm", "attn.norm"]);
  assert.deepEqual(options.layer, [["0", "0"]]);
  assert.deepEqual(options.head, [["0", "0"], ["1", "1"]]);
  assert.deepEqual(options.gen, rec.generated.map((token, k) => [String(k), k + ": " + TABLE.tokenLabels[token]]));
});

test("a loss run has no generation steps to choose", () => {
  const rec = read("loss.json");
  assert.deepEqual(filterOptions({ t: t, labels: TABLE.tokenLabels, rec: rec }, () => "").gen, []);
});
