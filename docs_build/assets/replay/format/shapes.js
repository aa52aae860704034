/* glassllm replay: what a recording of a model must hold — each step's shape in a pass and
 * the number of events a pass records — from the step table (steps.js).
 */

/* The shape of a snapshot with these `axes` (a step's facts) in a pass over `n` tokens of
   model `cfg`. */
export function expectedShape(axes, cfg, n) {
  const sizes = {
    token: n, query: n, key: n, feature: cfg.d_model, dim: cfg.d_model / cfg.n_heads,
    hidden: cfg.d_ff, vocab: cfg.vocab_size, head: cfg.n_heads, kv_head: cfg.n_kv_heads
  };
  return axes.map((axis) => sizes[axis]);
}

/* The events of one pass of a `kind` run (one generation step, or the whole loss run):
   each step of that kind once, a block's steps once per block — 18 * L + 5. */
export function eventsPerPass(table, kind, cfg) {
  return table.kindSteps[kind].reduce(
    (count, id) => count + (table.facts.get(id).where === "block" ? cfg.n_layers : 1), 0);
}
