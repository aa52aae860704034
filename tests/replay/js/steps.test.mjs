// The build's step table as the page indexes it: the same tables Python's reader uses
// (tests/fixtures/recordings/format.json), derived, never copied.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { stepTable } from "../../../docs_build/assets/replay/steps.js";
import { FIXTURES } from "./fixtures.mjs";
import { STEPS_JSON, TABLE } from "./step-table.mjs";

const tables = JSON.parse(readFileSync(new URL("format.json", FIXTURES), "utf8"));

test("the page's step tables equal glassllm.recording's", () => {
  const axes = Object.fromEntries(TABLE.ids.map((id) => [id, [...TABLE.facts.get(id).axes]]));
  assert.deepEqual(axes, tables.axes);
  assert.deepEqual(TABLE.ids, Object.keys(tables.axes)); // execution order
  assert.deepEqual([...TABLE.blockSteps], tables.layer_steps);
  assert.deepEqual([...TABLE.headSteps], tables.head_steps);
  assert.deepEqual([...TABLE.kinds].sort(), Object.keys(tables.kind_steps).sort());
  for (const kind of TABLE.kinds) assert.deepEqual([...TABLE.kindSteps[kind]].sort(), tables.kind_steps[kind]);
});

test("each step's facts, read from the table's rows", () => {
  assert.equal(TABLE.ids.length, 25);
  const softmax = TABLE.facts.get("attn.softmax");
  assert.deepEqual([softmax.where, softmax.headAxis, softmax.causal, softmax.vocabulary], ["block", true, true, false]);
  assert.deepEqual(TABLE.ids.filter((id) => TABLE.facts.get(id).causal), ["attn.mask", "attn.softmax"]);
  assert.deepEqual(TABLE.ids.filter((id) => TABLE.facts.get(id).vocabulary), ["logits", "probs", "loss.grad"]);
  assert.deepEqual(TABLE.facts.get("attn.k").axes, ["kv_head", "token", "dim"]);
  assert.equal(TABLE.facts.get("embed").latex, STEPS_JSON.steps[0].latex);
  // a step ID that is a property of every object is no step
  assert.equal(TABLE.facts.has("constructor"), false);
  // one label and one hex string of bytes per token ID of the demo's vocabulary
  assert.equal(TABLE.tokenLabels.length, STEPS_JSON.token_labels.length);
  assert.ok(TABLE.tokenLabels.length > 256);
  assert.equal(TABLE.tokenBytes.length, TABLE.tokenLabels.length);
});

test("a table that is not as the build writes it is refused, naming the part", () => {
  const refused = (json, part) => assert.throws(() => stepTable(json), (err) => err.message.includes(part));
  refused(null, "steps");
  const tokens = { token_labels: STEPS_JSON.token_labels, token_bytes: STEPS_JSON.token_bytes };
  refused({ steps: [], ...tokens }, "steps");
  refused({ steps: STEPS_JSON.steps, token_labels: [], token_bytes: [] }, "token_labels");
  refused({ steps: STEPS_JSON.steps, ...tokens, token_bytes: STEPS_JSON.token_bytes.slice(1) }, "token_bytes");
  refused({ steps: STEPS_JSON.steps, ...tokens, token_bytes: STEPS_JSON.token_bytes.map((h, i) => (i === 7 ? "zz" : h)) }, "token_bytes");
  const broken = STEPS_JSON.steps.map((row, i) => (i === 3 ? Object.assign({}, row, { axes: "token" }) : row));
  refused({ steps: broken, ...tokens }, "steps[3].axes");
  const twice = [...STEPS_JSON.steps, STEPS_JSON.steps[0]];
  refused({ steps: twice, ...tokens }, "steps[25].id");
});
