/* glassllm replay: what a recording of a model must hold — each step's shape in a pass and
 * the number of events a pass records — from the step table (steps.js).
 */

/* The shape of a snapshot with these `axes` (a step's facts) in a pass of model `cfg` that
   computes `n` positions attending to `keys` positions (default `n`: a full pass over `n`
   tokens; a cached generation step has n = 1). */
export function expectedShape(axes, cfg, n, keys) {
  const k = keys === undefined ? n : keys;
  const sizes = {
    token: n, query: n, key: k, feature: cfg.d_model, dim: cfg.d_model / cfg.n_heads,
    hidden: cfg.d_ff, vocab: cfg.vocab_size, head: cfg.n_heads, kv_head: cfg.n_kv_heads
  };
  return axes.map((axis) => sizes[axis]);
}

/* The kind of run a recording's pass is: a training step's forward is a loss run. */
export function passKind(kind) {
  return kind === "training" ? "loss" : kind;
}

/* The events of one pass of a `kind` run (one generation step, or the whole loss run, or
   a training step's forward): each step of that kind once, a block's steps once per
   block — 18 * L + 5. */
export function eventsPerPass(table, kind, cfg) {
  return table.kindSteps[passKind(kind)].reduce(
    (count, id) => count + (table.facts.get(id).where === "block" ? cfg.n_layers : 1), 0);
}

/* What each generation step computes (glassllm.recording.events.generation_passes): step
   `gen` reads nPrompt + gen tokens; without the cache it computes all of them, with it the
   first step computes the prompt and each later step only the newest position against
   every cached key. `first`: the sequence position of the pass's first row. */
export function generationPasses(nPrompt, nGenerated, cache) {
  const passes = [];
  for (let gen = 0; gen < nGenerated; gen++) {
    const keys = nPrompt + gen;
    const tokens = cache && gen > 0 ? 1 : keys;
    passes.push({ tokens: tokens, keys: keys, first: keys - tokens });
  }
  return passes;
}
