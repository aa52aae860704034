// A recording's model settings, checked as glassllm.Config(**config) checks them.
import { test } from "node:test";
import assert from "node:assert/strict";

import { checkConfig, defaultMlpWidth } from "../../../docs_build/assets/replay/format/config.js";

const isCount = (v) => Number.isInteger(v) && v >= 0;
const base = { vocab_size: 8, d_model: 4, n_layers: 1, n_heads: 2, n_kv_heads: 1, max_len: 8 };

test("the defaults fill what the file leaves out; d_ff from d_model", () => {
  const cfg = checkConfig(base, isCount);
  assert.deepEqual(cfg, Object.assign({}, base, {
    d_ff: 16, rope_theta: 10000, norm_eps: 1e-5, seed: 0, tie_word_embeddings: false
  }));
  // by hand: 8 * 64 / 3 = 170.67, up to 171, up to the next multiple of 8
  assert.equal(defaultMlpWidth(64), 176);
  assert.equal(defaultMlpWidth(4), 16);
});

test("what Config refuses, the page refuses, naming config", () => {
  const refused = (change) => assert.throws(() => checkConfig(Object.assign({}, base, change), isCount),
    (err) => err.reason === "reasonConfig" && err.where === "config");
  refused({ unknown: 1 });
  refused({ n_heads: 3 }); // d_model % n_heads
  refused({ n_kv_heads: 2, n_heads: 1 }); // n_heads % n_kv_heads
  refused({ d_model: 6, n_heads: 2 }); // odd head width: RoPE rotates pairs
  refused({ vocab_size: 0 });
  refused({ norm_eps: -1 });
  refused({ tie_word_embeddings: 1 });
  refused({ d_model: 2 ** 31 }); // larger than the format's int32 sizes
  assert.throws(() => checkConfig({ vocab_size: 8 }, isCount), (err) => err.reason === "reasonConfig");
});
