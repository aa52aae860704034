/* glassllm replay: a training recording's update — the optimiser's step after the backward
 * pass — checked as glassllm.recording.document._checked_update checks it, and the events
 * the player shows for it: one per parameter, after the gradients. Pure module (no DOM).
 */

import { RecordingError } from "./error.js";
import { isObject, own } from "./objects.js";

// what the update keeps of each sampled weight (glassllm.recording.document.UPDATE_VALUES)
export const UPDATE_VALUES = ["before", "grad", "m", "v", "after"];
export const MAX_UPDATE_ENTRIES = 64;

// an update event's facts, in the shape of a step's (steps.js): no axes, no head
export const UPDATE_FACTS = Object.freeze({
  id: "update", axes: Object.freeze([]), where: "training", headAxis: false,
  kinds: Object.freeze(["training"]), causal: false, vocabulary: false, latex: "", plain: ""
});

/* Every parameter of a model of `cfg`, as glassllm.checkpoint.tensor_shapes (and so
   GlassLM.state_dict()) orders them: [name, shape]. */
export function parameterShapes(cfg) {
  const d = cfg.d_model;
  const kv = cfg.n_kv_heads * (d / cfg.n_heads);
  const out = [["model.embed_tokens.weight", [cfg.vocab_size, d]]];
  for (let i = 0; i < cfg.n_layers; i++) {
    const block = "model.layers." + i + ".";
    out.push([block + "input_layernorm.weight", [d]], [block + "self_attn.q_proj.weight", [d, d]],
      [block + "self_attn.k_proj.weight", [kv, d]], [block + "self_attn.v_proj.weight", [kv, d]],
      [block + "self_attn.o_proj.weight", [d, d]], [block + "post_attention_layernorm.weight", [d]],
      [block + "mlp.gate_proj.weight", [cfg.d_ff, d]], [block + "mlp.up_proj.weight", [cfg.d_ff, d]],
      [block + "mlp.down_proj.weight", [d, cfg.d_ff]]);
  }
  out.push(["model.norm.weight", [d]]);
  if (!cfg.tie_word_embeddings) out.push(["lm_head.weight", [cfg.vocab_size, d]]);
  return out;
}

/* The checked update (RecordingError "update" for anything Python refuses). `isCount(v,
   path)`: the reader's integer test (numbers written as floats are not counts). */
export function checkUpdate(update, cfg, isCount) {
  const broken = () => new RecordingError("reasonBroken", { detail: "update" }, "update");
  const number = (v, low) => {
    if (typeof v !== "number" || !Number.isFinite(v) || v < low) throw broken();
    return v;
  };
  if (!isObject(update) || own(update, "optimizer") !== "AdamW") throw broken();
  const out = { optimizer: "AdamW" };
  for (const [key, low] of [["lr", 0], ["beta1", 0], ["beta2", 0], ["eps", 0], ["loss_after", -Infinity]]) {
    out[key] = number(own(update, key), low);
  }
  const step = own(update, "step");
  if (!isCount(step, ["update", "step"]) || step < 1) throw broken();
  out.step = step;
  const params = own(update, "params");
  const count = 9 * cfg.n_layers + 2 + (cfg.tie_word_embeddings ? 0 : 1);
  if (!Array.isArray(params) || params.length !== count) throw broken();
  out.params = parameterShapes(cfg).map(([name, shape], p) => {
    const param = params[p];
    const path = ["update", "params", p];
    if (!isObject(param) || own(param, "name") !== name) throw broken();
    const given = own(param, "shape");
    if (!Array.isArray(given) || given.length !== shape.length ||
        !given.every((s, k) => isCount(s, path.concat(["shape", k])) && s === shape[k])) throw broken();
    const checked = { name: name, shape: shape };
    for (const key of ["weight_decay", "grad_norm", "change_norm"]) checked[key] = number(own(param, key), 0);
    const entries = own(param, "entries");
    const size = shape.reduce((a, b) => a * b, 1);
    if (!Array.isArray(entries) || entries.length < 1 || entries.length > Math.min(MAX_UPDATE_ENTRIES, size)) throw broken();
    checked.entries = entries.map((entry, k) => {
      const index = isObject(entry) ? own(entry, "index") : undefined;
      if (!Array.isArray(index) || index.length !== shape.length ||
          !index.every((i, a) => isCount(i, path.concat(["entries", k, "index", a])) && i < shape[a])) throw broken();
      const values = { index: index.slice() };
      for (const key of UPDATE_VALUES) values[key] = number(own(entry, key), key === "v" ? 0 : -Infinity);
      return values;
    });
    return checked;
  });
  return out;
}

/* The block a parameter belongs to (from its name), or null outside the blocks. */
export function parameterLayer(name) {
  const match = /^model\.layers\.(\d+)\./.exec(name);
  return match ? Number(match[1]) : null;
}

/* The player's events of the update, numbered from `start`: one per parameter, in
   state_dict() order, each with its `param` (name, shape, decay, norms, sampled entries). */
export function updateEvents(update, start) {
  return update.params.map((param, p) => ({
    index: start + p, step: "update", layer: parameterLayer(param.name), order: p, gen: null,
    head: null, shape: [], facts: UPDATE_FACTS, pass: null, grad: false, param: param,
    dtype: "float32", values: new Float32Array(0)
  }));
}

/* Which part of a training step event `e` belongs to: "forward", "backward" or "update". */
export function phaseOf(e) {
  return e.param ? "update" : e.grad ? "backward" : "forward";
}

/* AdamW's step of one sampled weight redone from the update's settings (step 1 from zero
   moments: the page's one training step), as torch orders it; with the recorded `after`,
   how far the file's numbers are from it. */
export function adamwByHand(update, param, entry) {
  const t = update.step;
  const m = (1 - update.beta1) * entry.grad;
  const v = (1 - update.beta2) * entry.grad * entry.grad;
  const mHat = m / (1 - update.beta1 ** t);
  const vHat = v / (1 - update.beta2 ** t);
  const decayed = entry.before * (1 - update.lr * param.weight_decay);
  const step = update.lr * mHat / (Math.sqrt(vHat) + update.eps);
  return { m: m, v: v, mHat: mHat, vHat: vHat, decayed: decayed, step: step, after: decayed - step };
}
