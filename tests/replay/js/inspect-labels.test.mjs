// The names and labels of a snapshot's axes, in the page's strings.
import { test } from "node:test";
import assert from "node:assert/strict";

import { axisLabel, axisName } from "../../../docs_build/assets/replay/inspect/labels.js";
import { translate } from "../../../docs_build/assets/replay/strings.js";
import { pageStrings, read } from "./fixtures.mjs";
import { TABLE } from "./step-table.mjs";

const rec = read("generation-full-recompute.json");
const context = (lang) => {
  const strings = pageStrings(lang);
  return { t: (key, vars) => translate(strings, key, vars), strings: strings, labels: TABLE.tokenLabels, rec: rec };
};

test("axis names in the page's language, else the name itself", () => {
  assert.equal(axisName(context("en"), "kv_head"), "KV head");
  assert.equal(axisName(context("pt"), "query"), "Consulta");
  assert.equal(axisName(context("en"), "unnamed"), "unnamed");
});

test("a position shows its token, a vocabulary entry its label, a KV head its query heads", () => {
  const ctx = context("en");
  const e = rec.events.find((x) => x.step === "attn.softmax" && x.gen === 1);
  const tokens = rec.prompt.concat(rec.generated.slice(0, 1));
  tokens.forEach((token, i) => {
    assert.equal(axisLabel(ctx, e, "key", i), i + " " + TABLE.tokenLabels[token]);
    assert.equal(axisLabel(ctx, e, "token", i), i + " " + TABLE.tokenLabels[token]);
  });
  // a vocabulary entry: the table's label of that token ID (the demo's subwords)
  const the = TABLE.tokenBytes.indexOf("20746865"); // " the"
  assert.equal(axisLabel(ctx, e, "vocab", the), the + " ␣the");
  assert.equal(axisLabel(ctx, e, "vocab", 10), "10 " + TABLE.tokenLabels[10]);
  assert.equal(axisLabel(ctx, e, "kv_head", 0), "0 (serves query heads 0–1)"); // 2 query heads per KV head
  assert.equal(axisLabel(ctx, e, "dim", 3), "3");
});

test("a cached step: its one row is labelled with the newest token, its keys with every token", () => {
  const cached = read("generation.json");
  const ctx = Object.assign(context("en"), { rec: cached });
  const e = cached.events.find((x) => x.step === "attn.softmax" && x.gen === 1);
  const tokens = cached.prompt.concat(cached.generated.slice(0, 1));
  tokens.forEach((token, i) => assert.equal(axisLabel(ctx, e, "key", i), i + " " + TABLE.tokenLabels[token]));
  assert.equal(axisLabel(ctx, e, "query", 0), "2 " + TABLE.tokenLabels[tokens[2]]);
  const embed = cached.events.find((x) => x.step === "embed" && x.gen === 1);
  assert.equal(axisLabel(ctx, embed, "token", 0), "2 " + TABLE.tokenLabels[tokens[2]]);
});
