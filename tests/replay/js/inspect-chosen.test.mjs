// The vocabulary entry a row leads to: the sampled token, or the loss run's target.
import { test } from "node:test";
import assert from "node:assert/strict";

import { chosenColumn } from "../../../docs_build/assets/replay/inspect/chosen.js";
import { read } from "./fixtures.mjs";

test("the chosen column: the sampled token in the last row, each target in a loss run", () => {
  const rec = read("generation-full-recompute.json");
  const logits = rec.events.find((x) => x.step === "logits" && x.gen === 1);
  const rows = logits.shape[0];
  assert.equal(chosenColumn(rec, logits, rows - 1, rows, "vocab"), rec.generated[1]);
  assert.equal(chosenColumn(rec, logits, 0, rows, "vocab"), -1);
  assert.equal(chosenColumn(rec, logits, rows - 1, rows, "feature"), -1);
  // a cached step's logits: one row, the newest position's, which leads to the sampled token
  const cached = read("generation.json");
  const row = cached.events.find((x) => x.step === "logits" && x.gen === 1);
  assert.deepEqual(row.shape, [1, 8]);
  assert.equal(chosenColumn(cached, row, 0, 1, "vocab"), cached.generated[1]);
  const loss = read("loss.json");
  const grad = loss.events.find((x) => x.step === "loss.grad");
  assert.deepEqual([0, 1].map((r) => chosenColumn(loss, grad, r, 2, "vocab")), loss.targets);
});
