// node --test: the temperature / top-k control's arithmetic (docs_build/assets/sampling.js)
import { test } from "node:test";
import assert from "node:assert/strict";

import { float32From, formatValue, nextTokenDistribution, topTokens } from "../../../docs_build/assets/sampling.js";

const close = (actual, expected) => actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]) < 1e-7, `${i}: ${a} vs ${expected[i]}`));

test("softmax of ℓ/T by hand: e^ℓ proportional to 1, 2, 3", () => {
  const logits = [0, Math.log(2), Math.log(3)];
  close(nextTokenDistribution(logits, 1, null), [1 / 6, 2 / 6, 3 / 6]);
  // T = 1/2 squares the ratios: 1, 4, 9
  close(nextTokenDistribution(logits, 0.5, null), [1 / 14, 4 / 14, 9 / 14]);
  // top-2 drops the smallest logit: 2, 3
  close(nextTokenDistribution(logits, 1, 2), [0, 2 / 5, 3 / 5]);
  // k at or over the vocabulary keeps every logit
  close(nextTokenDistribution(logits, 1, 3), [1 / 6, 2 / 6, 3 / 6]);
});

test("a tiny temperature gives the argmax's one-hot, tied maxima sharing it, and no NaN", () => {
  assert.deepEqual(nextTokenDistribution([1, 5, 2], 1e-300, null), [0, 1, 0]);
  assert.deepEqual(nextTokenDistribution([5, 1, 5], 1e-300, null), [0.5, 0, 0.5]);
  // ties at the top-k cutoff are kept, as np.sort(logits)[-k] keeps them
  close(nextTokenDistribution([1, 2, 2, 0], 1, 2), [0, 0.5, 0.5, 0]);
});

test("the top tokens by probability, ties by token ID", () => {
  assert.deepEqual(topTokens([0.1, 0.4, 0.1, 0.4], 3), [[1, 0.4], [3, 0.4], [0, 0.1]]);
});

test("logits come from their float32 bytes and probabilities print as the pages print them", () => {
  const bytes = new Float32Array([1.5, -2.25, 3.4028234663852886e38]);
  const base64 = Buffer.from(bytes.buffer).toString("base64");
  assert.deepEqual(float32From(base64), [1.5, -2.25, 3.4028234663852886e38]);
  assert.deepEqual([0.9798, 0.0105234, 1.234e-7, 1, 0, 0.5, 2.5].map(formatValue),
                   ["0.9798", "0.01052", "1.234e-07", "1", "0", "0.5", "2.5"]);
});
