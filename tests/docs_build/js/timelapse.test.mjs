// node --test: the training time-lapse's frame arithmetic (docs_build/assets/timelapse.js)
import { test } from "node:test";
import assert from "node:assert/strict";

import { fill, framePosition, nextFrame } from "../../../docs_build/assets/timelapse.js";

test("a strip of 29 frames: the first at 0 %, the last at 100 %, the 10th a ninth of 28 steps in", () => {
  assert.equal(framePosition(0, 29), "0% 0");
  assert.equal(framePosition(28, 29), "100% 0");
  assert.equal(framePosition(9, 29), `${Number((900 / 28).toFixed(4))}% 0`);
  assert.equal(framePosition(0, 1), "0% 0"); // one snapshot: nothing to move through
});

test("playing walks the snapshots in order and stops after the last", () => {
  const seen = [];
  for (let i = 0; i !== null; i = nextFrame(i, 4)) seen.push(i);
  assert.deepEqual(seen, [0, 1, 2, 3]);
});

test("captions are filled like the page's Python templates; an unknown name stays as written", () => {
  assert.equal(fill("{head}, step {step}: score {score}", { head: "L1H0", step: 2250, score: "0.8623" }),
    "L1H0, step 2250: score 0.8623");
  assert.equal(fill("step {step} of {total}", { step: 3 }), "step 3 of {total}");
});
