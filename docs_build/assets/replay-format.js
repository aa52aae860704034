/* glassllm replay: reading a recording file (format: glassllm/recording.py).
 *
 * Both formats are accepted exactly as `glassllm.recording.loads` accepts them (both readers
 * are tested on tests/fixtures/recordings), and everything is checked against the model's
 * Config before the page builds anything: each event's step, layer, head and generation
 * step, its shape against the shape that step has in that pass and, in version 2, its byte
 * range against the file — so no size in a file can make the page build more than the file
 * holds.
 *
 * - Version 1 (JSON, base64 arrays): `readRecording(bytes or text)` decodes the whole file.
 * - Version 2 (binary: header, JSON index, aligned arrays): `openRecording(source)` reads
 *   only the header and the index; an event's values are read (`loadEvent`) and decoded
 *   (`event.values`) when it is shown. A source is the whole file's bytes
 *   (`bytesSource`), a File (`blobSource`: File.slice reads just the range) or a URL
 *   (`urlSource`: HTTP Range requests when the server honours them, else one fetch of the
 *   whole file, read as it arrives). `readRecording(bytes)` reads version 2 from bytes too.
 *
 * Pure module: no DOM, runs under `node --test`.
 */

export const FORMAT = "glassllm.recording";
export const VERSION = 2; // the newest version read
export const JSON_VERSION = 1;
export const MAGIC = [0x89, 0x47, 0x4c, 0x52, 0x45, 0x43, 0x0d, 0x0a]; // "\x89GLREC\r\n"
export const HEADER_BYTES = 16; // MAGIC, then version and index length as uint32 LE
export const ALIGN = 8; // the data and each array in it start at multiples of 8 bytes
export const DTYPE_BYTES = { float32: 4, float16: 2, int32: 4 };
export const FLOAT_DTYPES = ["float32", "float16"];
// the first request for a URL: the header and, for most recordings, the whole index
export const PROBE_BYTES = 256 * 1024;
// decoded values kept per recording (a float16 logits slice takes ms to decode)
const DECODED_KEPT = 16;
// byte ranges kept per recording when they are fetched one by one
const FETCHED_KEPT = 64;
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

/* The checks of glassllm.recording._checked_document and the events', in the same order,
   on JSON.parse's result; `floats` (from scanText) marks the integral numbers written as
   floats. `version`: the version this file must be (1 for JSON, 2 for a binary index);
   `finish(item, i, event, isCount)` checks and completes each event's data part. */
function check(doc, floats, version, finish) {
  const isCount = (v, path) => typeof v === "number" && Number.isInteger(v) && v >= 0 &&
    !(floats.size && floats.has(JSON.stringify(path)));
  const broken = (where) => new RecordingError("reasonBroken", { detail: where }, where);

  if (!isObject(doc) || own(doc, "format") !== FORMAT) throw new RecordingError("reasonFormat", {}, "format");
  const given = own(doc, "version");
  if (!isCount(given, ["version"]) || given < 1) throw broken("version");
  if (given > VERSION) throw new RecordingError("reasonVersion", { version: given }, "version");
  if (given !== version) throw broken("version");
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
  rec.events = events.map((item, i) => finish(item, i, checkEvent(item, i, rec, passes, perPass, isCount), isCount));
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
  return {
    index: i, step: step, layer: ints.layer, order: ints.order, gen: ints.gen, head: ints.head,
    shape: shape
  };
}

/* Version 1: the event's base64 array, decoded now. */
function finishJson(item, i, event) {
  const at = "events[" + i + "]";
  const dtype = event.step === "sample" ? "int32" : "float32";
  if (own(item, "dtype") !== dtype) throw new RecordingError("reasonBroken", { detail: at }, at);
  event.dtype = dtype;
  event.values = decodeValues(own(item, "data"), event.shape, dtype, at);
  return event;
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

/* A recording from a whole file's bytes (an ArrayBuffer or Uint8Array: version 2 if it
   starts with 0x89, else version 1 JSON read as UTF-8 with an initial BOM skipped) or from
   text; throws RecordingError for anything Python refuses. */
export function readRecording(input) {
  let text = input;
  if (typeof input !== "string") {
    const bytes = asBytes(input);
    if (bytes.length && bytes[0] === MAGIC[0]) return binaryRecording(bytes, bytesSource(bytes));
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch (e) {
      throw new RecordingError("reasonText", {}, "");
    }
  }
  const { doc, floats } = parseDocument(text, "");
  return check(doc, floats, JSON_VERSION, finishJson);
}

/* The JSON text of a recording (version 1's whole file, version 2's index) parsed, with the
   float tokens scanText checks first; `place` names it in the error. */
function parseDocument(text, place) {
  const floats = scanText(text);
  try {
    return { doc: JSON.parse(text), floats: floats };
  } catch (e) {
    throw new RecordingError("reasonJson", {}, place);
  }
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

// -- version 2: the binary container -------------------------------------------------------

function asBytes(input) {
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  throw new TypeError("glassllm replay: a recording is read from an ArrayBuffer, a typed array or text");
}

const padding = (size) => (ALIGN - (size % ALIGN)) % ALIGN;

/* A source of a file's bytes: `size`, `read(start, end)` (a Promise of a Uint8Array),
   optionally `at(start, end)` (those bytes now if they are here, else null) and, when the
   whole file is at hand, `bytes`. */
export function bytesSource(input) {
  const bytes = asBytes(input);
  return {
    size: bytes.length, bytes: bytes,
    at: (start, end) => bytes.subarray(start, end),
    read: (start, end) => Promise.resolve(bytes.subarray(start, end))
  };
}

/* A response body of `size` bytes, as it arrives: a range can be read as soon as its bytes
   are in, so the first event shows while the rest of a large file is still coming. */
export function streamSource(body, size) {
  const bytes = new Uint8Array(size);
  let received = 0;
  let failure = null;
  let finished = false;
  let waiting = [];
  const wake = () => { waiting = waiting.filter((check) => !check()); };
  const source = {
    size: size, bytes: null,
    at: (start, end) => (received >= end ? bytes.subarray(start, end) : null),
    read: (start, end) => new Promise((resolve, reject) => {
      const check = () => {
        if (received >= end) resolve(bytes.subarray(start, end));
        else if (failure) reject(failure);
        else return false;
        return true;
      };
      if (!check()) waiting.push(check);
    })
  };
  (async () => {
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (received + value.length > size) throw new Error("the server sent more than its Content-Length");
      bytes.set(value, received);
      received += value.length;
      wake();
    }
    if (received !== size) throw new Error("the download stopped after " + received + " of " + size + " bytes");
    finished = true;
    source.bytes = bytes; // complete: every range is at hand
  })().catch((err) => {
    failure = err instanceof Error ? err : new Error(String(err));
  }).then(() => {
    if (!finished && !failure) failure = new Error("the download stopped");
    wake();
  });
  return source;
}

/* A File or Blob, read range by range (File.slice reads only those bytes from disk). */
export function blobSource(blob) {
  return {
    size: blob.size, bytes: null,
    read: async (start, end) => new Uint8Array(await blob.slice(start, end).arrayBuffer())
  };
}

/* "bytes 0-99/1234" -> 1234; null when the total is unknown ("*") or the header is odd. */
export function rangeTotal(header) {
  const match = /^bytes\s+\d+-\d+\/(\d+)\s*$/.exec(String(header || ""));
  return match ? Number(match[1]) : null;
}

/* A recording on the web. The first request asks for the first PROBE_BYTES: a server that
   honours Range answers 206 and every event is then fetched as its own range; one that
   ignores it (python -m http.server does) sends the whole file with 200, which is then
   the source, read as it arrives. `fetchFn` is the page's fetch (a test passes its own). */
export async function urlSource(url, fetchFn) {
  const get = fetchFn || fetch;
  const options = (range) => ({ credentials: "same-origin", headers: range ? { Range: range } : {} });
  const failed = (r) => new Error(r.status + " " + r.statusText);
  const first = await get(url, options("bytes=0-" + (PROBE_BYTES - 1)));
  if (first.status === 206) {
    const total = rangeTotal(first.headers.get("Content-Range"));
    const probe = new Uint8Array(await first.arrayBuffer());
    if (total !== null && probe.length === Math.min(total, PROBE_BYTES)) {
      return {
        size: total, bytes: null,
        read: async (start, end) => {
          if (end <= probe.length) return probe.subarray(start, end);
          const r = await get(url, options("bytes=" + start + "-" + (end - 1)));
          if (r.status !== 206) throw failed(r);
          const got = new Uint8Array(await r.arrayBuffer());
          if (got.length !== end - start) throw new Error("the server sent " + got.length + " bytes for a range of " + (end - start));
          return got;
        }
      };
    }
    const whole = await get(url, options(null)); // a range answer the reader cannot use
    if (!whole.ok) throw failed(whole);
    return bytesSource(await whole.arrayBuffer());
  }
  if (!first.ok) throw failed(first);
  // the whole file: read as it arrives when its length is known (an encoded body's length
  // is not the file's)
  const length = Number(first.headers.get("Content-Length"));
  if (first.body && Number.isSafeInteger(length) && length > 0 && !first.headers.get("Content-Encoding")) {
    return streamSource(first.body, length);
  }
  return bytesSource(await first.arrayBuffer());
}

/* The 16-byte header of a version 2 file of `size` bytes: its version, the index length
   and where the data starts (RecordingError "header" if damaged or cut off). */
export function readHeader(bytes, size) {
  if (size < HEADER_BYTES || bytes.length < HEADER_BYTES || !MAGIC.every((b, i) => bytes[i] === b)) {
    throw new RecordingError("reasonHeader", {}, "header");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  const version = view.getUint32(8, true);
  const indexLength = view.getUint32(12, true);
  if (version > VERSION) throw new RecordingError("reasonVersion", { version: version }, "version");
  if (version !== VERSION) throw new RecordingError("reasonBroken", { detail: "header" }, "header");
  const dataStart = HEADER_BYTES + indexLength + padding(HEADER_BYTES + indexLength);
  if (dataStart > size) throw new RecordingError("reasonBroken", { detail: "header" }, "header");
  return { version: version, indexLength: indexLength, dataStart: dataStart };
}

let HALF_TABLE = null;

/* float16 bit pattern -> its value, for all 65536 patterns (exact in float32: ±inf, NaN,
   -0 and subnormals included). */
function halfTable() {
  if (HALF_TABLE) return HALF_TABLE;
  HALF_TABLE = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const fraction = h & 0x3ff;
    HALF_TABLE[h] = exponent === 0 ? sign * fraction * 2 ** -24
      : exponent === 31 ? (fraction ? NaN : sign * Infinity)
        : sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
  }
  return HALF_TABLE;
}

/* An event's raw little-endian bytes as a Float32Array or Int32Array: a view without a
   copy where the bytes allow it (float32 and int32 on a little-endian machine). */
export function decodeBinary(bytes, dtype) {
  const width = DTYPE_BYTES[dtype];
  let raw = bytes;
  if (!LITTLE_ENDIAN || raw.byteOffset % width) {
    raw = raw.slice();
    if (!LITTLE_ENDIAN) for (let i = 0; i < raw.length; i += width) raw.subarray(i, i + width).reverse();
  }
  const count = raw.length / width;
  if (dtype === "int32") return new Int32Array(raw.buffer, raw.byteOffset, count);
  if (dtype === "float32") return new Float32Array(raw.buffer, raw.byteOffset, count);
  const halves = new Uint16Array(raw.buffer, raw.byteOffset, count);
  const table = halfTable();
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = table[halves[i]];
  return out;
}

function keep(map, key, value, limit) {
  map.delete(key);
  map.set(key, value);
  if (map.size > limit) map.delete(map.keys().next().value);
}

/* The bytes and decoded values of a version 2 recording's events, read on demand. */
class EventStore {
  constructor(source) {
    this.source = source;
    this.fetched = new Map();
    this.decoded = new Map();
  }

  here(e) {
    return this.source.at ? this.source.at(e.start, e.start + e.length) : null;
  }

  ready(e) {
    return this.decoded.has(e.index) || this.fetched.has(e.index) || this.here(e) !== null;
  }

  async load(e) {
    if (this.ready(e)) return;
    const bytes = await this.source.read(e.start, e.start + e.length);
    if (bytes.length !== e.length) throw new RecordingError("reasonBytes", { where: "events[" + e.index + "]" }, "events[" + e.index + "]");
    keep(this.fetched, e.index, bytes, FETCHED_KEPT);
  }

  values(e) {
    const cached = this.decoded.get(e.index);
    if (cached) return cached;
    const here = this.here(e);
    const bytes = here || this.fetched.get(e.index);
    if (!bytes) throw new Error("glassllm replay: the values of event " + e.index + " are not loaded yet (loadEvent)");
    const values = decodeBinary(bytes, e.dtype);
    // float32 views of bytes at hand cost nothing to make again
    if (e.dtype === "float16" || !here) keep(this.decoded, e.index, values, DECODED_KEPT);
    return values;
  }
}

/* An event of a version 2 recording: its values are decoded when first read. */
class BinaryEvent {
  constructor(place, dtype, start, length, store) {
    Object.assign(this, place);
    this.dtype = dtype;
    this.start = start; // in the file
    this.length = length;
    Object.defineProperty(this, "store", { value: store });
  }

  get values() {
    return this.store.values(this);
  }
}

/* A version 2 recording from `head` (the file's first bytes, header and index at least)
   and the source of the rest: everything is checked before any value is read. */
function binaryRecording(head, source) {
  const header = readHeader(head, source.size);
  let text;
  try {
    // ignoreBOM: a BOM stays in the text and JSON.parse refuses it, as Python's json does
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
      .decode(head.subarray(HEADER_BYTES, HEADER_BYTES + header.indexLength));
  } catch (e) {
    throw new RecordingError("reasonText", {}, "index");
  }
  const { doc, floats } = parseDocument(text, "index");
  const store = new EventStore(source);
  const dataSize = source.size - header.dataStart;
  let end = 0; // events' bytes come in event order without overlapping
  const rec = check(doc, floats, VERSION, (item, i, place, isCount) => {
    const at = "events[" + i + "]";
    const dtype = own(item, "dtype");
    const allowed = place.step === "sample" ? ["int32"] : FLOAT_DTYPES;
    if (typeof dtype !== "string" || allowed.indexOf(dtype) < 0) throw new RecordingError("reasonBroken", { detail: at }, at);
    const offset = own(item, "offset");
    const length = own(item, "length");
    if (!isCount(offset, ["events", i, "offset"]) || !isCount(length, ["events", i, "length"])) {
      throw new RecordingError("reasonBroken", { detail: at }, at);
    }
    const count = place.shape.reduce((a, b) => a * b, 1);
    const bad = length !== count * DTYPE_BYTES[dtype] || offset % ALIGN !== 0 || offset < end ||
      offset + length > dataSize;
    if (bad) throw new RecordingError("reasonBytes", { where: at }, at);
    end = offset + length;
    return new BinaryEvent(place, dtype, header.dataStart + offset, length, store);
  });
  rec.store = store;
  return rec;
}

/* A recording of either version from a source (bytesSource, blobSource, urlSource): a
   version 2 file is checked from its header and index alone. */
export async function openRecording(source) {
  const first = await source.read(0, Math.min(source.size, PROBE_BYTES));
  if (!first.length || first[0] !== MAGIC[0]) {
    return readRecording(source.bytes || (first.length === source.size ? first : await source.read(0, source.size)));
  }
  const header = readHeader(first, source.size);
  const indexEnd = HEADER_BYTES + header.indexLength;
  return binaryRecording(indexEnd <= first.length ? first : await source.read(0, indexEnd), source);
}

/* Whether an event's values can be read now (always, for version 1 and whole files). */
export function eventReady(rec, e) {
  return !rec.store || rec.store.ready(e);
}

/* Fetch what an event's values need (nothing for version 1 and whole files). */
export function loadEvent(rec, e) {
  return rec.store ? rec.store.load(e) : Promise.resolve();
}
