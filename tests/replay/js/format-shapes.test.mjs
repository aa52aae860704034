// What a recording of a model must hold, from the build's step table.
import { test } from "node:test";
import assert from "node:assert/strict";

import { eventsPerPass, expectedShape } from "../../../docs_build/assets/replay/format/shapes.js";
import { TABLE } from "./step-table.mjs";

const cfg = { vocab_size: 256, d_model: 64, n_heads: 4, n_kv_heads: 2, d_ff: 176, n_layers: 2 };
const shape = (step, n) => expectedShape(TABLE.facts.get(step).axes, cfg, n);

test("each step's shape in a pass over n tokens", () => {
  assert.deepEqual(shape("embed", 5), [5, 64]);
  assert.deepEqual(shape("attn.q", 5), [4, 5, 16]);
  assert.deepEqual(shape("attn.k", 5), [2, 5, 16]); // grouped-query attention: H_kv heads
  assert.deepEqual(shape("mlp.act", 5), [5, 176]);
  assert.deepEqual(shape("logits", 5), [5, 256]);
  assert.deepEqual(shape("probs", 5), [256]);
  assert.deepEqual(shape("sample", 5), []);
});

test("a pass records 18 * L + 5 events in both kinds of run", () => {
  for (const kind of ["generation", "loss"]) {
    assert.equal(eventsPerPass(TABLE, kind, cfg), 18 * 2 + 5);
    assert.equal(eventsPerPass(TABLE, kind, { n_layers: 4 }), 77); // a generation step of 4 blocks: 77 events
  }
});
