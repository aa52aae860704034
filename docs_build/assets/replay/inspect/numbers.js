/* glassllm replay: the text of a number — exact in data-value and the readout, three
 * significant digits in a cell, non-finite values spelled as the step pages spell them.
 * Pure module (no DOM).
 */

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

/* A number's text as the page's language writes it: `decimal` (the page's "decimal" string,
   "," in Portuguese) for the point. data-value keeps the point: it is read back as a number. */
export function written(text, decimal) {
  return decimal && decimal !== "." ? text.replace(".", decimal) : text;
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
