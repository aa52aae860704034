/* glassllm replay: the checks of a recording's document, in the order
 * glassllm.recording._checked_document makes them, against the model's Config and the step
 * table — each event's step, layer, head and generation step, and its shape in that pass —
 * so that no size in a file can make the page build more than the file holds.
 */

import { checkConfig } from "./config.js";
import { FORMAT, VERSION } from "./constants.js";
import { RecordingError } from "./error.js";
import { isObject, own } from "./objects.js";
import { eventsPerPass, expectedShape, generationPasses, passKind } from "./shapes.js";
import { checkUpdate, updateEvents } from "./update.js";

/* The recording in `doc` (JSON.parse's result; `floats`, from scanText, marks the integral
   numbers written as floats). `version`: the version this file must be (1 for JSON, 2 for a
   binary index); `table`: the step table (steps.js); `finish(item, i, event, isCount)`
   checks and completes each event's data part. Each event carries its step's `facts` and
   its pass (shapes.js: the positions it computed, `tokens` from position `first`, against
   `keys` positions). */
export function checkDocument(doc, floats, version, table, finish) {
  const isCount = (v, path) => typeof v === "number" && Number.isInteger(v) && v >= 0 &&
    !(floats.size && floats.has(JSON.stringify(path)));
  const broken = (where) => new RecordingError("reasonBroken", { detail: where }, where);

  if (!isObject(doc) || own(doc, "format") !== FORMAT) throw new RecordingError("reasonFormat", {}, "format");
  const given = own(doc, "version");
  if (!isCount(given, ["version"]) || given < 1) throw broken("version");
  if (given > VERSION) throw new RecordingError("reasonVersion", { version: given }, "version");
  if (given !== version) throw broken("version");
  const kind = own(doc, "kind");
  if (kind !== "generation" && kind !== "loss" && kind !== "training") throw broken("kind");
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
  const rec = {
    kind: kind, config: cfg, prompt: prompt, generated: [], targets: [], loss: null, cache: false, events: []
  };
  let passes;
  if (kind === "generation") {
    rec.generated = tokens("generated");
    if (!rec.generated.length) throw broken("generated.tokens");
    rec.sampling = own(doc, "sampling");
    // absent in the files written before cached recordings: each step recomputed all
    const cache = own(doc, "cache");
    if (cache !== undefined && typeof cache !== "boolean") throw broken("cache");
    rec.cache = cache === true;
    passes = generationPasses(prompt.length, rec.generated.length, rec.cache);
  } else {
    rec.targets = tokens("targets");
    if (rec.targets.length !== prompt.length) throw broken("targets.tokens");
    const loss = own(doc, "loss");
    if (typeof loss !== "number" || !Number.isFinite(loss)) throw broken("loss");
    rec.loss = loss;
    passes = [{ tokens: prompt.length, keys: prompt.length, first: 0 }];
  }
  if (passes[passes.length - 1].keys > cfg.max_len) throw broken("config.max_len");
  const events = own(doc, "events");
  if (!Array.isArray(events)) throw broken("events");
  const perPass = eventsPerPass(table, kind, cfg);
  // a training step: its forward, then the gradient of each of its values
  const expected = kind === "training" ? 2 * perPass : perPass * passes.length;
  if (events.length !== expected) {
    throw new RecordingError("reasonCount", { count: events.length, expected: expected }, "events");
  }
  checkGradients(events, perPass, kind);
  let update = null;
  if (kind === "training") update = checkUpdate(own(doc, "update"), cfg, isCount);
  else if (own(doc, "update") !== undefined) throw broken("update");
  rec.events = events.map((item, i) => finish(item, i, checkEvent(item, i, rec, passes, perPass, isCount, table), isCount));
  rec.steps = isObject(own(doc, "steps")) ? own(doc, "steps") : {};
  rec.strings = tokenStrings(doc, ["prompt", "generated", "targets"]);
  rec.stepIds = Array.from(new Set(rec.events.map((e) => e.step)));
  if (update) {
    rec.update = update;
    rec.events = rec.events.concat(updateEvents(update, rec.events.length));
  }
  return rec;
}

/* How the recording's tokenizer writes each of its tokens (glassllm.recording: a checkpoint
   with its own tokenizer adds "strings" beside "tokens"): a Map token -> string, or null for
   a file without them (byte tokens, or a recording of IDs alone). Strings that do not match
   their tokens one for one are ignored, as the reader never needs them. */
function tokenStrings(doc, keys) {
  const known = new Map();
  let any = false;
  for (const key of keys) {
    const part = own(doc, key);
    const list = isObject(part) ? own(part, "tokens") : undefined;
    const strings = isObject(part) ? own(part, "strings") : undefined;
    if (!Array.isArray(list) || !Array.isArray(strings) || strings.length !== list.length ||
        !strings.every((s) => typeof s === "string")) continue;
    any = true;
    list.forEach((token, i) => known.set(token, strings[i]));
  }
  return any ? known : null;
}

/* glassllm.recording.document._check_gradient_events: a training recording holds its
   forward's events, then their gradients ("grad": true) in the reverse order, gradient
   perPass + i of forward event perPass - 1 - i (same step, layer and head); no other
   recording has a gradient. */
function checkGradients(events, perPass, kind) {
  events.forEach((item, i) => {
    const at = "events[" + i + "]";
    const given = isObject(item) ? own(item, "grad") : undefined;
    const grad = given === undefined ? false : given;
    const wanted = kind === "training" && i >= perPass;
    if (grad !== wanted) throw new RecordingError("reasonBroken", { detail: at }, at);
    if (wanted) {
      const mirror = events[2 * perPass - 1 - i];
      const same = (key) => {
        const a = own(item, key);
        const b = own(mirror, key);
        return (a === undefined ? null : a) === (b === undefined ? null : b);
      };
      if (!isObject(mirror) || !["step", "layer", "head"].every(same)) {
        throw new RecordingError("reasonBroken", { detail: at }, at);
      }
    }
  });
}

function checkEvent(item, i, rec, passes, perPass, isCount, table) {
  const at = "events[" + i + "]";
  const broken = () => new RecordingError("reasonBroken", { detail: at }, at);
  const step = isObject(item) ? own(item, "step") : undefined;
  if (typeof step !== "string" || !table.facts.has(step)) throw broken();
  const facts = table.facts.get(step);
  if (facts.kinds.indexOf(passKind(rec.kind)) < 0) throw broken();
  const ints = {};
  for (const key of ["layer", "order", "gen", "head"]) {
    const value = own(item, key);
    if (value !== null && value !== undefined && !isCount(value, ["events", i, key])) throw broken();
    ints[key] = value === undefined ? null : value;
  }
  const cfg = rec.config;
  if (ints.order === null || ints.order >= perPass) throw broken();
  const inBlock = facts.where === "block";
  if (inBlock && (ints.layer === null || ints.layer >= cfg.n_layers)) throw broken();
  if (!inBlock && ints.layer !== null) throw broken();
  if (rec.kind === "generation" && (ints.gen === null || ints.gen >= passes.length)) throw broken();
  if (rec.kind !== "generation" && ints.gen !== null) throw broken();
  const pass = passes[ints.gen || 0];
  let shape = expectedShape(facts.axes, cfg, pass.tokens, pass.keys);
  if (ints.head !== null) {
    if (!facts.headAxis || ints.head >= shape[0]) throw broken();
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
    shape: shape, facts: facts, pass: pass, grad: own(item, "grad") === true
  };
}
