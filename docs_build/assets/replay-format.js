/* glassllm replay: reading a recording file (format: glassllm/recording.py).
 *
 * `readRecording(bytes)` decodes and checks the WHOLE file before the page builds anything
 * from it, and accepts exactly the files `glassllm.recording.loads` accepts (both are tested
 * on tests/fixtures/recordings). Everything is checked against the model's Config: each
 * event's step, layer, head and generation step, and its shape against the shape that step
 * has in that pass — so no size in a file can make the page build more than the file holds.
 * Pure module: no DOM, runs under `node --test`.
 */

export const FORMAT = "glassllm.recording";
export const VERSION = 1;
export const MAX_SIZE = 2 ** 31 - 1; // any Config size: the sampled token is stored as int32
export const MAX_AXES = 32;
export const MAX_DEPTH = 32; // the format nests 4 levels; Python's parser fails near 1000
export const MAX_NUMBER_CHARS = 64; // a float32 written by repr takes at most 24

// The meaning of each axis of a step's snapshot (glassllm.recording.AXES).
export const AXES = {
  "embed": ["token", "feature"],
  "attn.norm": ["token", "feature"],
  "attn.q": ["head", "token", "dim"],
  "attn.k": ["kv_head", "token", "dim"],
  "attn.v": ["kv_head", "token", "dim"],
  "attn.q_rope": ["head", "token", "dim"],
  "attn.k_rope": ["kv_head", "token", "dim"],
  "attn.scores": ["head", "query", "key"],
  "attn.mask": ["head", "query", "key"],
  "attn.softmax": ["head", "query", "key"],
  "attn.context": ["head", "token", "dim"],
  "attn.out": ["token", "feature"],
  "attn.residual": ["token", "feature"],
  "mlp.norm": ["token", "feature"],
  "mlp.gate": ["token", "hidden"],
  "mlp.up": ["token", "hidden"],
  "mlp.act": ["token", "hidden"],
  "mlp.down": ["token", "feature"],
  "mlp.residual": ["token", "feature"],
  "final_norm": ["token", "feature"],
  "logits": ["token", "vocab"],
  "probs": ["vocab"],
  "sample": [],
  "loss": [],
  "loss.grad": ["token", "vocab"]
};
export const STEP_IDS = Object.keys(AXES);
export const LAYER_STEPS = [
  "attn.norm", "attn.q", "attn.k", "attn.v", "attn.q_rope", "attn.k_rope", "attn.scores",
  "attn.mask", "attn.softmax", "attn.context", "attn.out", "attn.residual", "mlp.norm",
  "mlp.gate", "mlp.up", "mlp.act", "mlp.down", "mlp.residual"
];
export const HEAD_STEPS = [
  "attn.q", "attn.k", "attn.v", "attn.q_rope", "attn.k_rope", "attn.scores", "attn.mask",
  "attn.softmax", "attn.context"
];
// No generation run includes the loss (SPEC 4).
export const KIND_STEPS = {
  generation: STEP_IDS.filter((id) => id !== "loss" && id !== "loss.grad"),
  loss: STEP_IDS.filter((id) => id !== "probs" && id !== "sample")
};
// glassllm.Config's fields: required ones have no default.
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
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// JSON's strings, punctuation and numbers: all the nesting scan needs to see
const JSON_TOKEN = /"[^"\\]*(?:\\.[^"\\]*)*"|[[\]{},:]|-?[0-9][0-9.eE+-]*/g;

/* A file the page refuses: `reason` names the page's UI string, `vars` fills it, `where`
   is the place in the file ("events[3]", "config", ...), as Python's message names it. */
export class RecordingError extends Error {
  constructor(reason, vars, where) {
    super(reason + (where ? " at " + where : ""));
    this.name = "RecordingError";
    this.reason = reason;
    this.vars = vars || {};
    this.where = where || "";
  }
}

const has = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);
const own = (obj, key) => (has(obj, key) ? obj[key] : undefined);
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function pathText(path) {
  const text = path.slice(0, 3).map((p) => (typeof p === "number" ? "[" + p + "]" : "." + p))
    .join("").replace(/^\./, "");
  return text + (path.length > 3 ? "…" : "");
}

function keyOf(token) {
  if (token.indexOf("\\") < 0) return token.slice(1, -1);
  try {
    return JSON.parse(token);
  } catch (e) {
    return token;
  }
}

/* Refuse nesting deeper than MAX_DEPTH and number literals longer than MAX_NUMBER_CHARS
   (glassllm.recording.check_text, the same scan). Returns the paths of numbers written as
   floats with an integral value ("1.0", "1e30"): JSON.parse cannot tell them from integers,
   Python's json can, and the format's integer fields refuse them. */
export function scanText(text) {
  const floats = new Set();
  const stack = []; // per open container: [isObject, key or index, expectingKey]
  JSON_TOKEN.lastIndex = 0;
  let match;
  while ((match = JSON_TOKEN.exec(text)) !== null) {
    const token = match[0];
    const first = token[0];
    const top = stack[stack.length - 1];
    if (first === "[" || first === "{") {
      if (stack.length === MAX_DEPTH) {
        throw new RecordingError("reasonDepth", { max: MAX_DEPTH, where: pathText(stack.map((s) => s[1])) },
          pathText(stack.map((s) => s[1])));
      }
      stack.push([first === "{", first === "{" ? null : 0, first === "{"]);
    } else if (first === "]" || first === "}") {
      stack.pop();
    } else if (first === ",") {
      if (top) {
        if (top[0]) top[2] = true;
        else top[1] += 1;
      }
    } else if (first === ":") {
      if (top) top[2] = false;
    } else if (first === '"') {
      if (top && top[0] && top[2]) top[1] = keyOf(token);
    } else {
      const path = stack.map((s) => s[1]);
      if (token.length > MAX_NUMBER_CHARS) {
        const where = pathText(path) || "the top level";
        throw new RecordingError("reasonNumber", { max: MAX_NUMBER_CHARS, where: where }, where);
      }
      const float = /[.eE]/.test(token);
      if (float && Number.isInteger(Number(token))) floats.add(JSON.stringify(path));
      else if (!float && floats.size) floats.delete(JSON.stringify(path));
    }
  }
  return floats;
}

/* Model width of the MLP when the file leaves d_ff out (glassllm.model.default_mlp_width). */
export function defaultMlpWidth(dModel) {
  const width = Math.ceil((8 * dModel) / 3);
  return Math.ceil(width / 8) * 8;
}

/* The shape a snapshot of `step` has in a pass over `n` tokens of model `cfg`. */
export function expectedShape(step, cfg, n) {
  const sizes = {
    token: n, query: n, key: n, feature: cfg.d_model, dim: cfg.d_model / cfg.n_heads,
    hidden: cfg.d_ff, vocab: cfg.vocab_size, head: cfg.n_heads, kv_head: cfg.n_kv_heads
  };
  return AXES[step].map((axis) => sizes[axis]);
}

export function eventsPerPass(cfg) {
  return LAYER_STEPS.length * cfg.n_layers + 5;
}

/* The checks of glassllm.recording.from_json, in the same order, on JSON.parse's result;
   `floats` (from scanText) marks the integral numbers written as floats. */
function check(doc, floats) {
  const isCount = (v, path) => typeof v === "number" && Number.isInteger(v) && v >= 0 &&
    !(floats.size && floats.has(JSON.stringify(path)));
  const broken = (where) => new RecordingError("reasonBroken", { detail: where }, where);

  if (!isObject(doc) || own(doc, "format") !== FORMAT) throw new RecordingError("reasonFormat", {}, "format");
  const version = own(doc, "version");
  if (!isCount(version, ["version"]) || version < 1) throw broken("version");
  if (version > VERSION) throw new RecordingError("reasonVersion", { version: version }, "version");
  const kind = own(doc, "kind");
  if (kind !== "generation" && kind !== "loss") throw broken("kind");
  const cfg = checkConfig(own(doc, "config"), isCount);

  const tokens = (key) => {
    const part = own(doc, key);
    const list = isObject(part) ? own(part, "tokens") : undefined;
    if (!Array.isArray(list) || !list.every((t, i) => isCount(t, [key, "tokens", i]) && t < cfg.vocab_size)) {
      throw broken(key + ".tokens");
    }
    return list;
  };
  const prompt = tokens("prompt");
  if (!prompt.length) throw broken("prompt.tokens");
  const rec = { kind: kind, config: cfg, prompt: prompt, generated: [], targets: [], loss: null, events: [] };
  let passes;
  if (kind === "generation") {
    rec.generated = tokens("generated");
    if (!rec.generated.length) throw broken("generated.tokens");
    rec.sampling = own(doc, "sampling");
    passes = rec.generated.map((_, gen) => prompt.length + gen);
  } else {
    rec.targets = tokens("targets");
    if (rec.targets.length !== prompt.length) throw broken("targets.tokens");
    const loss = own(doc, "loss");
    if (typeof loss !== "number" || !Number.isFinite(loss)) throw broken("loss");
    rec.loss = loss;
    passes = [prompt.length];
  }
  if (passes[passes.length - 1] > cfg.max_len) throw broken("config.max_len");
  const events = own(doc, "events");
  if (!Array.isArray(events)) throw broken("events");
  const perPass = eventsPerPass(cfg);
  if (events.length !== perPass * passes.length) {
    throw new RecordingError("reasonCount", { count: events.length, expected: perPass * passes.length }, "events");
  }
  rec.events = events.map((item, i) => checkEvent(item, i, rec, passes, perPass, isCount));
  rec.steps = isObject(own(doc, "steps")) ? own(doc, "steps") : {};
  rec.stepIds = Array.from(new Set(rec.events.map((e) => e.step)));
  return rec;
}

function checkConfig(config, isCount) {
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

function checkEvent(item, i, rec, passes, perPass, isCount) {
  const at = "events[" + i + "]";
  const broken = () => new RecordingError("reasonBroken", { detail: at }, at);
  const step = isObject(item) ? own(item, "step") : undefined;
  if (typeof step !== "string" || !has(AXES, step)) throw broken();
  if (KIND_STEPS[rec.kind].indexOf(step) < 0) throw broken();
  const ints = {};
  for (const key of ["layer", "order", "gen", "head"]) {
    const value = own(item, key);
    if (value !== null && value !== undefined && !isCount(value, ["events", i, key])) throw broken();
    ints[key] = value === undefined ? null : value;
  }
  const cfg = rec.config;
  if (ints.order === null || ints.order >= perPass) throw broken();
  const inBlock = LAYER_STEPS.indexOf(step) >= 0;
  if (inBlock && (ints.layer === null || ints.layer >= cfg.n_layers)) throw broken();
  if (!inBlock && ints.layer !== null) throw broken();
  if (rec.kind === "generation" && (ints.gen === null || ints.gen >= passes.length)) throw broken();
  if (rec.kind === "loss" && ints.gen !== null) throw broken();
  let shape = expectedShape(step, cfg, passes[ints.gen || 0]);
  if (ints.head !== null) {
    if (HEAD_STEPS.indexOf(step) < 0 || ints.head >= shape[0]) throw broken();
    shape = shape.slice(1);
  }
  const given = own(item, "shape");
  if (!Array.isArray(given) || given.length !== shape.length ||
      !given.every((s, k) => isCount(s, ["events", i, "shape", k]) && s === shape[k])) {
    throw new RecordingError("reasonShape", {
      where: at, step: step, shape: JSON.stringify(given), expected: JSON.stringify(shape)
    }, at);
  }
  const dtype = step === "sample" ? "int32" : "float32";
  if (own(item, "dtype") !== dtype) throw broken();
  return {
    index: i, step: step, layer: ints.layer, order: ints.order, gen: ints.gen, head: ints.head,
    shape: shape, dtype: dtype, values: decodeValues(own(item, "data"), shape, dtype, at)
  };
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/* The event's numbers as a Float32Array or Int32Array (`data`: base64 little-endian). */
export function decodeValues(data, shape, dtype, at) {
  const fail = () => new RecordingError("reasonData", { where: at }, at);
  if (typeof data !== "string" || !BASE64.test(data)) throw fail();
  const count = shape.reduce((a, b) => a * b, 1);
  const size = (data.length / 4) * 3 - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
  if (size !== count * 4) throw fail();
  const binary = atob(data);
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = binary.charCodeAt(i);
  if (!LITTLE_ENDIAN) {
    for (let i = 0; i < size; i += 4) bytes.subarray(i, i + 4).reverse();
  }
  return dtype === "int32" ? new Int32Array(bytes.buffer) : new Float32Array(bytes.buffer);
}

/* A recording from a file's bytes (an ArrayBuffer or Uint8Array, read as UTF-8 with an
   initial BOM skipped) or from text; throws RecordingError for anything Python refuses. */
export function readRecording(input) {
  let text = input;
  if (typeof input !== "string") {
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch (e) {
      throw new RecordingError("reasonText", {}, "");
    }
  }
  const floats = scanText(text);
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new RecordingError("reasonJson", {}, "");
  }
  return check(doc, floats);
}

/* The equation and source line the file carries for a step, where they are well-formed
   (the readers do not check this table, so the page uses it only when it is). */
export function fileStepInfo(rec, stepId) {
  const entry = isObject(rec.steps) && isObject(own(rec.steps, stepId)) ? own(rec.steps, stepId) : {};
  const text = (v) => (typeof v === "string" ? v : "");
  const source = isObject(own(entry, "source")) ? own(entry, "source") : null;
  return {
    latex: text(own(entry, "latex")),
    plain: text(own(entry, "plain")),
    source: source && typeof own(source, "file") === "string" && Number.isInteger(own(source, "line"))
      ? { file: source.file, line: source.line } : null
  };
}
