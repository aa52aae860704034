// The probabilities and sampled-token pages' control: the next token's distribution
// softmax(ℓ/T) over the top k logits, recomputed in the page from the page's own logits (the
// traced step's last row, its float32 bytes in data-logits: docs_build/html/sampling.py),
// exactly as glassllm.model.next_token_distribution computes it (a test holds it to Python's).

import { formatG4, inLanguage, tokenLabel } from "./heatmap.js";

/** The float32 values of base64 little-endian bytes, as numbers. */
export function float32From(base64) {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  return Array.from(new Float32Array(bytes.buffer, 0, bytes.length >> 2));
}

/** softmax(ℓ/T) keeping only the top_k largest logits (ties at the cutoff kept), as
 * next_token_distribution: the max subtracted first, in float64, the result rounded to
 * float32. ``topK`` null or ≥ the vocabulary keeps them all. */
export function nextTokenDistribution(logits, temperature, topK) {
  let kept = logits;
  if (topK !== null && topK < logits.length) {
    const cutoff = [...logits].sort((a, b) => a - b)[logits.length - topK];
    kept = logits.map((l) => (l < cutoff ? -Infinity : l));
  }
  const top = Math.max(...kept);
  const scaled = kept.map((l) => (l - top) / temperature); // all <= 0, the max exactly 0
  const exps = scaled.map((s) => Math.exp(s));
  const total = exps.reduce((sum, e) => sum + e, 0);
  return exps.map((e) => Math.fround(e / total));
}

/** The ``count`` most probable tokens, [token, p] by p descending, ties by token ID (a
 * stable sort, as the pages' tables rank them). */
export function topTokens(probs, count) {
  return probs.map((p, token) => [token, p]).sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, count);
}

/** A number as the pages write it (format_value: Python's "%.4g"). */
export function formatValue(x) {
  if (x === 0) return "0";
  const [mantissa, exponent] = Math.abs(x).toExponential(3).split("e");
  return formatG4(x < 0, Number(mantissa.replace(".", "")), Number(exponent) - 3);
}

function attach(box) {
  const logits = float32From(box.dataset.logits);
  const temperature = box.querySelector("input.gl-sampling-t");
  const topK = box.querySelector("input.gl-sampling-k");
  const shownT = box.querySelector("output.gl-sampling-t-value");
  const rows = [...box.querySelectorAll("table.gl-sampling-top tbody tr")];
  const update = () => {
    const T = Number(temperature.value);
    const k = Math.round(Number(topK.value));
    if (!(T > 0) || !(k >= 1)) return; // an empty or cleared field: keep the last table
    shownT.textContent = inLanguage(formatValue(T));
    const probs = nextTokenDistribution(logits, T, Math.min(k, logits.length));
    topTokens(probs, rows.length).forEach(([token, p], r) => {
      const [label, id, prob] = rows[r].cells;
      label.textContent = tokenLabel(token);
      id.textContent = String(token);
      prob.querySelector("meter").value = p;
      prob.querySelector("span").textContent = inLanguage(formatValue(p));
    });
  };
  temperature.addEventListener("input", update);
  topK.addEventListener("input", update);
  box.classList.add("gl-sampling-live");
}

if (typeof document !== "undefined") {
  document.querySelectorAll(".gl-sampling[data-logits]").forEach(attach);
}
