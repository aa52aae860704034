// The page API's arguments checked as Python checks GlassLM's (glassllm/model.py): an
// unknown option, a value of the wrong type (true is no number, 1.7 no integer) or out of
// range is refused before anything reaches the worker, with a message naming the call and
// the argument. Pure logic (node --test checks it); client.js calls it.
//
// Each function returns the arguments for the worker, or throws a TypeError (a value of the
// wrong type, an unknown option) or a RangeError (a value out of range, Python's ValueError),
// with kind "arguments".

function refusal(ErrorClass, message) {
  const error = new ErrorClass(message);
  error.kind = "arguments";
  return error;
}
const typeError = (message) => refusal(TypeError, message);
const rangeError = (message) => refusal(RangeError, message);

function shown(value) {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined) {
    return String(value);
  }
  try {
    return JSON.stringify(value);
  } catch {
    return typeof value;
  }
}

export function checkText(call, text) {
  if (typeof text !== "string") {
    throw typeError(`glassllm.${call}: text must be a string, got ${shown(text)}`);
  }
  return text;
}

// An integer in [low, high] (high null: no upper bound); `what` says what it counts.
export function checkInteger(call, name, value, low, high = null, what = "") {
  const range = high === null ? (low === 0 ? "a non-negative integer" : `an integer of at least ${low}`)
    : `an integer in [${low}, ${high}]`;
  const about = what ? ` (${what})` : "";
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw typeError(`glassllm.${call}: ${name}${about} must be ${range}, got ${shown(value)}`);
  }
  if (value < low || (high !== null && value > high)) {
    throw rangeError(`glassllm.${call}: ${name}${about} must be ${range}, got ${shown(value)}`);
  }
  return value;
}

function checkFlag(call, name, value) {
  if (typeof value !== "boolean") {
    throw typeError(`glassllm.${call}: option ${name} must be true or false, got ${shown(value)}`);
  }
  return value;
}

function checkTemperature(call, value) {
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) {
    throw (typeof value === "number" ? rangeError : typeError)(
      `glassllm.${call}: option temperature must be a positive finite number, got ${shown(value)}; `
      + "use greedy: true for the most likely token");
  }
  return value;
}

// options: a plain object whose keys are all in `known`; undefined or null values are left out
function checkOptions(call, options, known) {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object" || Array.isArray(options)) {
    throw typeError(`glassllm.${call}: options must be an object, got ${shown(options)}`);
  }
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length) {
    throw typeError(`glassllm.${call}: unknown option ${unknown.map(shown).join(", ")}; `
      + `the options are ${known.join(", ")}`);
  }
  const out = {};
  for (const key of known) {
    if (options[key] !== undefined && options[key] !== null) out[key] = options[key];
  }
  return out;
}

// GlassLM.generate's sampling options (top_k bounded by the vocabulary, once it is known)
function checkSampling(call, options, vocab) {
  if ("greedy" in options) checkFlag(call, "greedy", options.greedy);
  if ("temperature" in options) checkTemperature(call, options.temperature);
  if ("top_k" in options) checkInteger(call, "option top_k", options.top_k, 1, vocab ?? null);
  if ("seed" in options) checkInteger(call, "option seed", options.seed, 0);
  return options;
}

export const GENERATE_OPTIONS = ["greedy", "temperature", "top_k", "seed", "trace"];
export const RECORD_OPTIONS = ["greedy", "temperature", "top_k", "seed"];
export const WORKED_OPTIONS = ["lang", "layer", "head"];

// config: the model's sizes (load's config), for the checks that need them; null before load
export function generateArguments(text, n, options, config = null) {
  checkText("generate", text);
  checkInteger("generate", "n", n, 0, null, "tokens to generate");
  const checked = checkSampling("generate", checkOptions("generate", options, GENERATE_OPTIONS),
    config && config.vocab_size);
  if ("trace" in checked) checkFlag("generate", "trace", checked.trace);
  return { text, n, ...checked };
}

// A recording has at least one generated token: the replay plays nothing else
export function recordArguments(text, n, options, config = null) {
  checkText("record", text);
  checkInteger("record", "n", n, 1, null, "tokens to generate and record");
  const checked = checkSampling("record", checkOptions("record", options, RECORD_OPTIONS),
    config && config.vocab_size);
  return { text, n, ...checked };
}

// languages: the codes the site has strings in; config: load's, for the head's bounds.
// layer and head come together (the head a page works in), or neither.
export function workedArguments(text, step, options, languages, config = null) {
  checkText("worked", text);
  if (typeof step !== "string" || !step) {
    throw typeError(`glassllm.worked: step must be a step ID (a string such as "attn.softmax"), got ${shown(step)}`);
  }
  const checked = checkOptions("worked", options, WORKED_OPTIONS);
  const lang = checked.lang ?? (languages.includes("en") ? "en" : languages[0]);
  if (!languages.includes(lang)) {
    throw rangeError(`glassllm.worked: option lang must be one of ${languages.map(shown).join(", ")}, got ${shown(lang)}`);
  }
  const args = { text, step, lang };
  if (("layer" in checked) !== ("head" in checked)) {
    const given = "layer" in checked ? "layer" : "head";
    throw rangeError(`glassllm.worked: option ${given} was given without `
      + `${given === "layer" ? "head" : "layer"}; give both (the head the entry is worked in) or neither`);
  }
  if ("layer" in checked) {
    const layers = config ? config.n_layers - 1 : null;
    const heads = config ? config.n_heads - 1 : null;
    args.layer = checkInteger("worked", "option layer", checked.layer, 0, layers);
    args.head = checkInteger("worked", "option head", checked.head, 0, heads);
  }
  return args;
}

// glassllm.train and glassllm.lesson: the lesson's bounds (build.js's lesson: steps, the full
// lesson's length and the most the page trains, n_layers and n_heads of its model); null
// leaves the upper bounds unchecked
export const LESSON_OPTIONS = ["seed", "steps", "snapshot_every"];
export const TRAIN_OPTIONS = [...LESSON_OPTIONS, "onSnapshot"];

function lessonSettings(call, checked, lesson) {
  const args = { seed: checkInteger(call, "option seed", checked.seed ?? 0, 0) };
  if ("steps" in checked) {
    args.steps = checkInteger(call, "option steps", checked.steps, 1, lesson ? lesson.steps : null,
      "training steps, the full lesson's at most");
  }
  if ("snapshot_every" in checked) {
    args.snapshot_every = checkInteger(call, "option snapshot_every", checked.snapshot_every, 1, null,
      "steps between two snapshots");
  }
  return args;
}

// {seed, steps?, snapshot_every?}: what lesson_start takes
export function lessonStartArguments(options, lesson = null) {
  return lessonSettings("lesson.start", checkOptions("lesson.start", options, LESSON_OPTIONS), lesson);
}

// {settings: lesson_start's, onSnapshot: a function or null}
export function trainArguments(options, lesson = null) {
  const checked = checkOptions("train", options, TRAIN_OPTIONS);
  if ("onSnapshot" in checked && typeof checked.onSnapshot !== "function") {
    throw typeError(`glassllm.train: option onSnapshot must be a function (called with each snapshot), `
      + `got ${shown(checked.onSnapshot)}`);
  }
  return { settings: lessonSettings("train", checked, lesson), onSnapshot: checked.onSnapshot ?? null };
}

export function lessonAdvanceArguments(maxSteps) {
  return { max_steps: checkInteger("lesson.advance", "maxSteps", maxSteps, 1, null, "steps to train") };
}

// heads: [[layer, head], ...] of the lesson's model
export function lessonAblateArguments(heads, lesson = null) {
  const call = "lesson.ablate";
  if (!Array.isArray(heads)) {
    throw typeError(`glassllm.${call}: heads must be a list of [layer, head] pairs such as [[0, 1]], got ${shown(heads)}`);
  }
  for (const pair of heads) {
    if (!Array.isArray(pair) || pair.length !== 2) {
      throw typeError(`glassllm.${call}: heads must be a list of [layer, head] pairs such as [[0, 1]], `
        + `got the item ${shown(pair)}`);
    }
    checkInteger(call, "layer", pair[0], 0, lesson ? lesson.n_layers - 1 : null, `of the head ${shown(pair)}`);
    checkInteger(call, "head", pair[1], 0, lesson ? lesson.n_heads - 1 : null, `of the head ${shown(pair)}`);
  }
  return { heads: heads.map((pair) => [pair[0], pair[1]]) };
}
