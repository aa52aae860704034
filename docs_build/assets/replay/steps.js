/* glassllm replay: the build's step table, indexed for the page.
 *
 * The build writes assets/replay/steps.json next to these modules:
 * `{"steps": glassllm.steps.step_table(), "token_labels": [the label of each token ID of the
 * model's vocabulary, as its tokenizer's `labels` writes it: "␣the"], "token_bytes": [each
 * token's bytes as hex: "20746865"]}`. The page loads it once at boot and hands the table to the reader
 * (format/), which gives each event its step's facts, so no module copies the engine's
 * tables. Pure module: no DOM, runs under `node --test`.
 */

function fail(where, what) {
  return new Error("steps.json: " + where + " " + what + "; rebuild the site (mkdocs build)");
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isNames = (v) => Array.isArray(v) && v.every((x) => typeof x === "string");
const isHex = (v) => typeof v === "string" && v.length % 2 === 0 && /^[0-9a-f]*$/.test(v);

/* One row of step_table() as the page reads it (camelCase, frozen). */
function stepFacts(row, i) {
  const at = "steps[" + i + "]";
  if (!isObject(row)) throw fail(at, "is not an object");
  for (const key of ["id", "where", "latex", "plain"]) {
    if (typeof row[key] !== "string") throw fail(at + "." + key, "is not a string");
  }
  for (const key of ["axes", "kinds"]) {
    if (!isNames(row[key])) throw fail(at + "." + key, "is not a list of names");
  }
  for (const key of ["head_axis", "causal", "vocabulary"]) {
    if (typeof row[key] !== "boolean") throw fail(at + "." + key, "is not true or false");
  }
  return Object.freeze({
    id: row.id, axes: Object.freeze(row.axes.slice()), where: row.where, headAxis: row.head_axis,
    kinds: Object.freeze(row.kinds.slice()), causal: row.causal, vocabulary: row.vocabulary,
    latex: row.latex, plain: row.plain
  });
}

/* The table from steps.json's parsed content:
   - `ids`: the step IDs in execution order;
   - `facts`: each step's facts by ID (a Map, so that a file's step "constructor" finds
     nothing): `axes`, `where` ("model", "block", "generation", "training"), `headAxis`,
     `kinds` (the runs that record it), `causal`, `vocabulary`, `latex`, `plain`;
   - `kinds`: the kinds of run, `kindSteps`: the IDs each records, `blockSteps`: the IDs run
     in every block, `headSteps`: those with a leading head axis;
   - `tokenLabels`: the label of each token ID (tokens.js), `tokenBytes`: its bytes as hex.
   Throws an Error naming the part of the file that is not as the build writes it. */
export function stepTable(json) {
  if (!isObject(json) || !Array.isArray(json.steps) || !json.steps.length) {
    throw fail("steps", "is not a list of steps");
  }
  const labels = json.token_labels;
  if (!isNames(labels) || !labels.length) {
    throw fail("token_labels", "is not a list of labels, one per token ID");
  }
  const bytes = json.token_bytes;
  if (!Array.isArray(bytes) || bytes.length !== labels.length || !bytes.every(isHex)) {
    throw fail("token_bytes", "is not a list of " + labels.length + " hex strings (a token's bytes)");
  }
  const facts = new Map();
  json.steps.forEach((row, i) => {
    const step = stepFacts(row, i);
    if (facts.has(step.id)) throw fail("steps[" + i + "].id", "repeats " + JSON.stringify(step.id));
    facts.set(step.id, step);
  });
  const all = Array.from(facts.values());
  const ids = all.map((step) => step.id);
  const kinds = Array.from(new Set(all.flatMap((step) => step.kinds)));
  const kindSteps = {};
  for (const kind of kinds) kindSteps[kind] = Object.freeze(all.filter((s) => s.kinds.includes(kind)).map((s) => s.id));
  return Object.freeze({
    ids: Object.freeze(ids), facts: facts, kinds: Object.freeze(kinds),
    kindSteps: Object.freeze(kindSteps),
    blockSteps: Object.freeze(all.filter((s) => s.where === "block").map((s) => s.id)),
    headSteps: Object.freeze(all.filter((s) => s.headAxis).map((s) => s.id)),
    tokenLabels: Object.freeze(labels.slice()),
    tokenBytes: Object.freeze(bytes.slice())
  });
}
