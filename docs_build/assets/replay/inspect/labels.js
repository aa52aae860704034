/* glassllm replay: the names and labels of a snapshot's axes, in the page's language.
 * Pure module (no DOM). `ctx` is what the page draws with: `t` (its strings, translate
 * bound), `strings` (the strings themselves), `labels` (the step table's token labels) and
 * `rec` (the recording shown).
 */

import { tokenLabel } from "../tokens.js";
import { headGroup, positionOf, sequenceOf } from "./slice.js";

// axes whose index is a position in the sequence: labelled with the token there
export const TOKEN_AXES = ["token", "query", "key"];

/* An axis' name: the page's string "axis_<name>", else the name itself. */
export function axisName(ctx, name) {
  const key = "axis_" + name;
  return typeof ctx.strings[key] === "string" ? ctx.t(key) : name;
}

/* The label of index `i` on axis `name` of event `e`: a position with its token (a cached
   step's one row is the newest position, its key axis every position so far), a vocabulary
   entry with its token, a key/value head with the query heads it serves. */
export function axisLabel(ctx, e, name, i) {
  if (name === "kv_head") {
    const group = headGroup(ctx.rec.config);
    return ctx.t("kvHeadOption", { kv: i, from: i * group, to: (i + 1) * group - 1 });
  }
  if (TOKEN_AXES.indexOf(name) >= 0) {
    const position = positionOf(e, name, i);
    return position + " " + tokenLabel(ctx.labels, sequenceOf(ctx.rec, e)[position]);
  }
  if (name === "vocab") return i + " " + tokenLabel(ctx.labels, i);
  return String(i);
}
