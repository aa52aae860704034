// A training recording as the page reads it (format/update.js, format/check.js): the
// forward, the gradients in reverse order, then one event per parameter of the AdamW
// update — on the shared fixtures that Python's reader is held to as well.
import { test } from "node:test";
import assert from "node:assert/strict";

import * as format from "../../../docs_build/assets/replay/format/index.js";
import { parameterLayer, updateEvents } from "../../../docs_build/assets/replay/format/update.js";
import { read } from "./fixtures.mjs";
import { TABLE } from "./step-table.mjs";

for (const name of ["training.json", "bin-training.glrec"]) {
  test(name + ": forward, then each value's gradient in reverse, then the update", () => {
    const rec = read(name);
    const perPass = format.eventsPerPass(TABLE, rec.kind, rec.config);
    const params = format.parameterShapes(rec.config);
    assert.equal(rec.kind, "training");
    assert.equal(rec.events.length, 2 * perPass + params.length);
    const phases = rec.events.map(format.phaseOf);
    assert.deepEqual(phases, [...Array(perPass).fill("forward"), ...Array(perPass).fill("backward"),
      ...Array(params.length).fill("update")]);
    for (let i = 0; i < perPass; i++) {
      const grad = rec.events[perPass + i];
      const forward = rec.events[perPass - 1 - i];
      assert.deepEqual([grad.step, grad.layer, grad.head, grad.shape], [forward.step, forward.layer, forward.head, forward.shape]);
      assert.equal(grad.order, i);
    }
    // ∂ℒ/∂ℒ = 1, and ∂ℒ/∂logits is loss.grad itself
    assert.equal(rec.events[perPass + 1].step, "loss");
    assert.equal(rec.events[perPass + 1].values[0], 1);
    assert.deepEqual(Array.from(rec.events[perPass + 2].values), Array.from(rec.events[perPass - 1].values));
    // the steps, the map and the filters know only the forward's steps
    assert.equal(rec.stepIds.includes("update"), false);
    // each update event: its parameter, in state_dict() order, with its block
    rec.events.slice(2 * perPass).forEach((e, p) => {
      assert.equal(e.param.name, params[p][0]);
      assert.deepEqual(e.param.shape, params[p][1]);
      assert.equal(e.layer, parameterLayer(e.param.name));
      assert.equal(format.eventReady(rec, e), true);
    });
  });
}

test("AdamW redone from the file's settings gives the weight the file says", () => {
  const rec = read("training.json");
  let worst = 0;
  for (const param of rec.update.params) {
    for (const entry of param.entries) {
      const hand = format.adamwByHand(rec.update, param, entry);
      worst = Math.max(worst, Math.abs(hand.after - entry.after), Math.abs(hand.m - entry.m),
        Math.abs(hand.v - entry.v));
    }
  }
  assert.ok(worst < 1e-6, "AdamW by hand is " + worst + " from the file");
  assert.ok(rec.update.loss_after < rec.loss);
});

test("the model's parameters in state_dict() order, tied or not", () => {
  const cfg = { vocab_size: 8, d_model: 4, n_layers: 2, n_heads: 2, n_kv_heads: 1, d_ff: 6, tie_word_embeddings: true };
  const shapes = format.parameterShapes(cfg);
  assert.equal(shapes.length, 9 * 2 + 2);
  assert.deepEqual(shapes[0], ["model.embed_tokens.weight", [8, 4]]);
  assert.deepEqual(shapes[3], ["model.layers.0.self_attn.k_proj.weight", [2, 4]]);
  assert.deepEqual(shapes[shapes.length - 1], ["model.norm.weight", [4]]);
  assert.equal(format.parameterShapes({ ...cfg, tie_word_embeddings: false }).pop()[0], "lm_head.weight");
  assert.equal(parameterLayer("model.layers.12.mlp.up_proj.weight"), 12);
  assert.equal(parameterLayer("lm_head.weight"), null);
});

test("an update is checked as Python checks it", () => {
  const rec = read("training.json");
  const isCount = (v) => Number.isInteger(v) && v >= 0;
  const good = JSON.parse(JSON.stringify(rec.update));
  assert.deepEqual(format.checkUpdate(good, rec.config, isCount), rec.update);
  const refused = (change) => {
    const copy = JSON.parse(JSON.stringify(rec.update));
    change(copy);
    assert.throws(() => format.checkUpdate(copy, rec.config, isCount),
      (err) => err instanceof format.RecordingError && err.where === "update");
  };
  refused((u) => { u.optimizer = "SGD"; });
  refused((u) => { u.lr = -1; });
  refused((u) => { u.step = 0; });
  refused((u) => { u.params.reverse(); });
  refused((u) => { u.params[0].entries = []; });
  refused((u) => { u.params[0].entries[0].index = [99, 0]; });
  refused((u) => { u.params[1].entries[0].after = "1"; });
  refused((u) => { u.params[1].entries[0].v = -1e-9; });
  refused((u) => { u.params[1].shape = [5]; });
  assert.equal(updateEvents(rec.update, 10)[0].index, 10);
});
