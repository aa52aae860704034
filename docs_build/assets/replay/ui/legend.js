/* glassllm replay: the colour bar under the inspector's grid. */

import { shortText, written } from "../inspect/numbers.js";
import { el } from "./dom.js";

/* The colour bar of `scale` (inspect/colour.js), saying what it spans (`span`: "head" or
   "snapshot"); the masked swatch only when the window shows a masked cell (`maskedValue`,
   what such a cell holds: −∞ or 0; null if none). */
export function legend(t, scale, dtype, maskedValue, span) {
  const box = el("div", { className: "gr-legend" });
  const { lo, hi, diverging } = scale;
  const text = (v) => written(shortText(v, dtype), t("decimal"));
  if (lo <= hi) {
    box.appendChild(el("span", { text: t(span === "head" ? "colourScaleHead" : "colourScale") }));
    box.appendChild(el("span", { className: "gr-legend-end", text: text(diverging ? -Math.max(-lo, hi) : 0) }));
    box.appendChild(el("span", {
      className: "gr-legend-bar" + (diverging ? " gr-legend-bar--diverging" : ""), "aria-hidden": "true"
    }));
    box.appendChild(el("span", { className: "gr-legend-end", text: text(diverging ? Math.max(-lo, hi) : hi) }));
  }
  if (maskedValue !== null) {
    box.appendChild(el("span", { className: "gr-cell gr-cell--masked gr-legend-swatch", text: text(maskedValue) }));
    box.appendChild(el("span", { text: t("maskedCell") }));
  }
  return box;
}
