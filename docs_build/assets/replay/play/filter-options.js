/* glassllm replay: the choices of the filters for a recording. Pure module (no DOM). */

import { tokenLabel } from "../tokens.js";

/* [value, text] pairs per filter ("step", "layer", "head", "gen"), the "any" choice left
   out: the recording's steps in order (with `stepLabel(id)`, the page's label, if any), its
   blocks and query heads, and its generation steps with the token each produced. `ctx`:
   `t` (the page's strings), `labels` (token labels) and `rec`. */
export function filterOptions(ctx, stepLabel) {
  const rec = ctx.rec;
  const t = ctx.t;
  const range = (n) => Array.from({ length: n }, (_, i) => [String(i), String(i)]);
  return {
    step: rec.stepIds.map((id) => {
      const label = stepLabel(id);
      return [id, label ? id + " — " + label : id];
    }),
    layer: range(rec.config.n_layers),
    head: range(rec.config.n_heads),
    gen: rec.generated.map((tok, g) => [String(g), t("genOption", { k: g, token: tokenLabel(ctx.labels, tok) })])
  };
}
