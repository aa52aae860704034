// The worker's replies as the page's objects: the tracer's records with their values as
// Float32Array views of the one buffer the worker sent (bridge.py lays them end to end),
// and what the run panel reads off them. Pure logic (node --test checks it).

// One record entry of bridge.py (id, layer, head, shape, offset, size) over `values`.
function record(entry, values) {
  const size = entry.shape.reduce((product, axis) => product * axis, 1);
  if (size !== entry.size || entry.offset < 0 || entry.offset + entry.size > values.length) {
    throw new Error(`the worker's record ${entry.id} does not fit its values `
      + `(shape ${JSON.stringify(entry.shape)}, offset ${entry.offset}, size ${entry.size}, `
      + `buffer of ${values.length} numbers)`);
  }
  return {
    id: entry.id,
    layer: entry.layer ?? null,
    head: entry.head ?? null,
    shape: entry.shape.slice(),
    values: values.subarray(entry.offset, entry.offset + entry.size),
  };
}

export function unpackRecords(entries, values) {
  return entries.map((entry) => record(entry, values));
}

function floats(buffer) {
  return new Float32Array(buffer || new ArrayBuffer(0));
}

// bridge.run's result -> {tokens, records, timing}
export function unpackRun(result) {
  const values = floats(result.values);
  return {
    tokens: Array.from(result.tokens),
    records: unpackRecords(result.records, values),
    timing: { ...result.timing },
  };
}

// bridge.generate's result -> {tokens, steps: [{token, probs, records}], timing}
export function unpackGeneration(result) {
  const values = floats(result.values);
  return {
    tokens: Array.from(result.tokens),
    steps: result.steps.map((step) => ({
      token: step.token,
      probs: values.subarray(step.probs.offset, step.probs.offset + step.probs.size),
      records: step.records ? unpackRecords(step.records, values) : null,
    })),
    timing: { ...result.timing },
  };
}

// bridge.record's result -> {tokens, generated, bytes (a recording file), events, timing}
export function unpackRecording(result) {
  return {
    tokens: Array.from(result.tokens),
    generated: Array.from(result.generated),
    bytes: new Uint8Array(result.values || new ArrayBuffer(0)),
    events: result.events,
    timing: { ...result.timing },
  };
}

// The k most likely next tokens after the last position: softmax of the last row of the
// run's "logits" record (n, V), as [{token, p}] from the most likely down.
export function nextTokens(records, k) {
  const logits = records.find((r) => r.id === "logits");
  if (!logits || logits.shape.length !== 2) return [];
  const [n, vocab] = logits.shape;
  const row = logits.values.subarray((n - 1) * vocab, n * vocab);
  let max = -Infinity;
  for (const v of row) max = Math.max(max, v);
  let sum = 0;
  const exps = Array.from(row, (v) => {
    const e = Math.exp(v - max);
    sum += e;
    return e;
  });
  return exps
    .map((e, token) => ({ token, p: e / sum }))
    .sort((a, b) => b.p - a.p || a.token - b.token)
    .slice(0, k);
}

// "{name}" placeholders of a UI string filled (ui.yml's form; unknown names stay as written).
export function fill(template, values) {
  return String(template).replace(/\{([a-z_]+)\}/g, (whole, name) =>
    Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : whole);
}
