/* glassllm replay: the colour of a cell — one scale over the whole slice, as on the step
 * pages. Pure module (no DOM).
 */

/* One colour scale over the whole slice, so panning keeps colours comparable: diverging
   around 0 when there are negative values, sequential from 0 otherwise. Masked cells
   (`masked(i)`, the causal mask's region) stay out of it, as on the step pages. */
export function colourScale(values, masked) {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (Number.isFinite(x) && !(masked && masked(i))) {
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
  }
  const diverging = lo < 0;
  let scale = diverging ? Math.max(Math.abs(lo), Math.abs(hi)) : hi;
  if (!(scale > 0)) scale = 1;
  return { lo: lo, hi: hi, diverging: diverging, scale: scale };
}

/* How a cell is drawn: "masked" (−∞, or `masked`: in the causal mask's region), "posinf",
   "nan", or a colour of `strength` 0..1 in the sequential, negative or positive hue. */
export function cellColour(v, scale, masked) {
  if (v === -Infinity || masked) return { kind: "masked" };
  if (v === Infinity) return { kind: "posinf" };
  if (Number.isNaN(v)) return { kind: "nan" };
  return {
    kind: "value",
    strength: Math.min(1, Math.abs(v) / scale.scale),
    hue: !scale.diverging ? "seq" : v < 0 ? "neg" : "pos"
  };
}

/* What the slice's colour scale spans, for the legend: one head's own scale ("head") when
   the snapshot is split by head, else the whole snapshot ("snapshot"). */
export function scaleSpan(slice) {
  return slice.lead.some((l) => l.axis === "head" || l.axis === "kv_head") ? "head" : "snapshot";
}
