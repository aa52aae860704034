/* glassllm replay: a recording's model settings, checked as `glassllm.Config(**config)`
 * checks them.
 */

import { MAX_SIZE } from "./constants.js";
import { RecordingError } from "./error.js";
import { has, isObject } from "./objects.js";

// glassllm.Config's fields: required ones have no default (format.json holds Python's).
export const CONFIG_FIELDS = {
  vocab_size: { required: true, default: null },
  d_model: { required: true, default: null },
  n_layers: { required: true, default: null },
  n_heads: { required: true, default: null },
  n_kv_heads: { required: true, default: null },
  max_len: { required: true, default: null },
  d_ff: { required: false, default: null },
  rope_theta: { required: false, default: 10000.0 },
  norm_eps: { required: false, default: 1e-5 },
  seed: { required: false, default: 0 },
  tie_word_embeddings: { required: false, default: false }
};
const SIZES = ["vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "max_len", "d_ff"];

/* Model width of the MLP when the file leaves d_ff out (glassllm.model.default_mlp_width). */
export function defaultMlpWidth(dModel) {
  const width = Math.ceil((8 * dModel) / 3);
  return Math.ceil(width / 8) * 8;
}

/* The file's `config` completed with the defaults; `isCount(value, path)` tells a
   non-negative integer written as one. RecordingError "config" for anything Config refuses. */
export function checkConfig(config, isCount) {
  const where = "config";
  const fail = () => new RecordingError("reasonConfig", {}, where);
  if (!isObject(config)) throw fail();
  // Config(**config): unknown fields and missing required ones are errors
  if (!Object.keys(config).every((key) => has(CONFIG_FIELDS, key))) throw fail();
  const cfg = {};
  for (const name of Object.keys(CONFIG_FIELDS)) {
    const field = CONFIG_FIELDS[name];
    if (!has(config, name)) {
      if (field.required) throw fail();
      cfg[name] = field.default;
    } else {
      cfg[name] = config[name];
    }
  }
  for (const name of SIZES) {
    if (name === "d_ff" && cfg.d_ff === null) continue;
    if (!isCount(cfg[name], [where, name]) || cfg[name] < 1) throw fail();
  }
  for (const name of ["rope_theta", "norm_eps"]) {
    if (typeof cfg[name] !== "number" || !(cfg[name] > 0) || !Number.isFinite(cfg[name])) throw fail();
  }
  if (!isCount(cfg.seed, [where, "seed"])) throw fail();
  if (typeof cfg.tie_word_embeddings !== "boolean") throw fail();
  if (cfg.d_ff === null) cfg.d_ff = defaultMlpWidth(cfg.d_model);
  // bounds before arithmetic, so the divisions below are exact
  if (SIZES.some((name) => cfg[name] > MAX_SIZE)) throw fail();
  if (cfg.d_model % cfg.n_heads || cfg.n_heads % cfg.n_kv_heads || (cfg.d_model / cfg.n_heads) % 2) throw fail();
  return cfg;
}
