/* glassllm replay: the causal mask's region of a slice — in the steps the step table marks
 * `causal` (attn.mask, attn.softmax) the cells whose key comes after the query are masked,
 * −∞ before the softmax and exactly 0 after it (the step pages hatch both). Pure module (no
 * DOM).
 */

/* Whether cell (r, c) of an event's slice is in the causal mask's region: key after query.
   Row r is the query at position `e.pass.first + r` (a cached generation step's one row is
   the newest position, which may see every key: nothing in it is masked). */
export function causalMasked(e, slice, r, c) {
  return e.facts.causal && slice.rowAxis === "query" && slice.colAxis === "key" && c > e.pass.first + r;
}

/* The value of the first masked cell (−∞, or in the mask's region) a window of the slice
   shows, or null: the legend explains masked cells only where there are some. */
export function maskedShown(e, slice, win) {
  for (let r = win.r0; r < win.r1; r++) {
    for (let c = win.c0; c < win.c1; c++) {
      const v = slice.values[r * slice.cols + c];
      if (v === -Infinity || causalMasked(e, slice, r, c)) return v;
    }
  }
  return null;
}
