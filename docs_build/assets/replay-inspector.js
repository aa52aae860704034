/* glassllm replay: what the inspector shows of a snapshot — the slice picked by the leading
 * axes, the window of it on screen, the text of each number and the colour scale.
 * Pure module (no DOM), on the recordings of replay-format.js.
 */

import { AXES } from "./replay-format.js";

export const WINDOW_ROWS = 32; // larger slices are panned, never silently cut
export const WINDOW_COLS = 32;
export const TOKEN_AXES = ["token", "query", "key"];
// Steps whose (query, key) slice lies under the causal mask: the cells above the diagonal
// are masked, −∞ before the softmax and exactly 0 after it (the step pages hatch both).
export const CAUSAL_STEPS = ["attn.mask", "attn.softmax"];

/* A byte token as one visible character: space and newline get symbols, other bytes that
   are not printable ASCII their hex escape. A token above 255 (a larger vocabulary recorded
   without its tokenizer) is no byte: it shows as its ID, "#41809". */
export function tokenText(b) {
  if (b > 255) return "#" + b;
  if (b === 32) return "␣";
  if (b === 10) return "⏎";
  if (b > 32 && b < 127) return String.fromCharCode(b);
  return "\\x" + (b < 16 ? "0" : "") + b.toString(16);
}

/* The tokens as UTF-8 text (bytes that are not valid UTF-8 become U+FFFD); tokens that are
   not bytes have no text of their own, so the line lists them as tokenText does. */
export function utf8(tokens) {
  if (tokens.some((b) => b > 255)) return tokens.map(tokenText).join(" ");
  return new TextDecoder("utf-8").decode(new Uint8Array(tokens));
}

/* The shortest decimal text that reads back as the same float32: what data-value holds. */
export function exactText(v, dtype) {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  if (dtype === "int32") return String(v);
  for (let p = 1; p <= 9; p++) {
    const s = v.toPrecision(p);
    if (Math.fround(Number(s)) === v) return String(Number(s));
  }
  return String(v);
}

/* Cell text: three significant digits; non-finite values spelled as the site does. */
export function shortText(v, dtype) {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+∞";
  if (v === -Infinity) return "−∞";
  if (dtype === "int32" || v === 0) return String(v);
  const a = Math.abs(v);
  if (a >= 1e4 || a < 1e-3) return v.toExponential(1);
  return String(Number(v.toPrecision(3)));
}

/* The axes of an event's array: a snapshot recorded for one head has lost its head axis. */
export function axesOf(e) {
  const axes = AXES[e.step];
  return e.head === null ? axes : axes.slice(1);
}

/* The tokens the model saw in an event's pass (the rows of its token axes). */
export function sequenceOf(rec, e) {
  if (rec.kind === "generation") return rec.prompt.concat(rec.generated.slice(0, e.gen));
  return rec.prompt;
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

/* The vocabulary column of the token a row leads to: the sampled token for the last
   position of a generation step, the target of each position in the loss run; else -1. */
export function chosenColumn(rec, e, row, rows, colAxis) {
  if (colAxis !== "vocab") return -1;
  if (rec.kind === "generation") return row === rows - 1 ? rec.generated[e.gen] : -1;
  return row < rec.targets.length ? rec.targets[row] : -1;
}

/* The window of rows r0..r1 and columns c0..c1 (end excluded) shown from the slice.
   Until the reader pans, a vocabulary axis opens on the window holding `focusCol`. */
export function windowOf(rows, cols, offsets, focusCol, panned) {
  const col = !panned && focusCol >= 0 ? Math.floor(focusCol / WINDOW_COLS) * WINDOW_COLS : offsets.col;
  const r0 = Math.min(offsets.row, Math.max(0, rows - WINDOW_ROWS));
  const c0 = Math.min(col, Math.max(0, cols - WINDOW_COLS));
  return { r0: r0, r1: Math.min(rows, r0 + WINDOW_ROWS), c0: c0, c1: Math.min(cols, c0 + WINDOW_COLS) };
}

/* The first and last index a window [start, end) shows, counted from 0 like the axis
   labels and the equations' positions. */
export function windowSpan(start, end) {
  return { from: start, to: end - 1 };
}

/* Whether cell (r, c) of an event's slice is in the causal mask's region: key after query. */
export function causalMasked(e, slice, r, c) {
  return CAUSAL_STEPS.indexOf(e.step) >= 0 && slice.rowAxis === "query" && slice.colAxis === "key" && c > r;
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

/* What the slice's colour scale spans, for the legend: one head's own scale ("head") when
   the snapshot is split by head, else the whole snapshot ("snapshot"). */
export function scaleSpan(slice) {
  return slice.lead.some((l) => l.axis === "head" || l.axis === "kv_head") ? "head" : "snapshot";
}

/* The offset after panning one window back (-1) or on (+1) from `start`. */
export function panned(start, delta, size) {
  return Math.max(0, start + delta * size);
}

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

/* Minimum, maximum and mean of the finite values, and how many there are. */
export function statsOf(values) {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let finite = 0;
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (Number.isFinite(x)) {
      finite++;
      sum += x;
      if (x < min) min = x;
      if (x > max) max = x;
    }
  }
  return { min: min, max: max, mean: finite ? sum / finite : NaN, finite: finite, count: values.length };
}

/* Indices of the `k` largest values, largest first (ties: the lower index first). */
export function topEntries(values, k) {
  const order = Array.from({ length: values.length }, (_, i) => i);
  order.sort((a, b) => values[b] - values[a] || a - b);
  return order.slice(0, k);
}
