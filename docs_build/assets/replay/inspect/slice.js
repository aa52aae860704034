/* glassllm replay: the slice of a snapshot the inspector shows — each leading axis picks one
 * index (the reader's last pick, kept across events), the last two (or one) are the rows and
 * columns. Pure module (no DOM), on the events of format/ (each carries its step's facts).
 */

/* The axes of an event's array: a snapshot recorded for one head has lost its head axis. */
export function axesOf(e) {
  const axes = e.facts.axes;
  return e.head === null ? axes : axes.slice(1);
}

/* The tokens of the sequence in an event's pass: the prompt and the tokens generated before
   it (its key axis runs over all of them; its token axes over the last `e.pass.tokens`). */
export function sequenceOf(rec, e) {
  if (rec.kind === "generation") return rec.prompt.concat(rec.generated.slice(0, e.gen));
  return rec.prompt;
}

/* The sequence position of index `i` on a token axis ("token", "query" or "key") of event
   `e`: a key is the position itself; a token or query row of a cached step is the newest
   position (its pass computed only that one). */
export function positionOf(e, axis, i) {
  return axis === "key" ? i : e.pass.first + i;
}

/* Query heads per key/value head (grouped-query attention). */
export function headGroup(cfg) {
  return cfg.n_heads / cfg.n_kv_heads;
}

/* The index shown on a leading axis: the reader's last pick, kept across events; a KV
   head follows the picked query head, the one that serves it. */
export function pickFor(picks, name, size, cfg) {
  let pick = picks[name];
  if (name === "kv_head" && picks.head !== undefined) pick = Math.floor(picks.head / headGroup(cfg));
  return pick === undefined || pick >= size ? 0 : pick;
}

export function setPick(picks, name, value, cfg) {
  if (name === "kv_head") picks.head = value * headGroup(cfg);
  else picks[name] = value;
}

/* The 2-D (or 1-D) slice of an event to show: leading axes pick one index each, the last
   two (or one) are rows and columns. Scalars have no slice (`rows` 0). */
export function sliceOf(e, picks, cfg) {
  const axes = axesOf(e);
  const shape = e.shape;
  const lead = [];
  if (!shape.length) return { lead: lead, rows: 0, cols: 0, rowAxis: null, colAxis: null, values: e.values };
  const nLead = Math.max(0, shape.length - 2);
  let offset = 0;
  let stride = 1;
  for (let a = shape.length - 1; a >= nLead; a--) stride *= shape[a];
  for (let a = 0; a < nLead; a++) {
    const pick = pickFor(picks, axes[a], shape[a], cfg);
    lead.push({ axis: axes[a], size: shape[a], pick: pick });
    let inner = 1;
    for (let b = a + 1; b < shape.length; b++) inner *= shape[b];
    offset += pick * inner;
  }
  return {
    lead: lead,
    rows: shape.length >= 2 ? shape[shape.length - 2] : 1,
    cols: shape[shape.length - 1],
    rowAxis: shape.length >= 2 ? axes[shape.length - 2] : null,
    colAxis: axes[shape.length - 1],
    values: e.values.subarray(offset, offset + stride)
  };
}
