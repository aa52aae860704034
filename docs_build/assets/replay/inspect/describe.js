/* glassllm replay: a snapshot's shape and values in a line of text. Pure module (no DOM). */

import { shortText, written } from "./numbers.js";
import { statsOf } from "./stats.js";

/* "(3, 64)", a vector's "(256,)", a scalar's "()": the shape as Python writes a tuple. */
export function shapeText(shape) {
  return "(" + shape.join(", ") + (shape.length === 1 ? "," : "") + ")";
}

/* "min … · max … · mean …", and how many values are not finite (`t`: the page's strings). */
export function statsText(t, e) {
  const s = statsOf(e.values);
  const decimal = t("decimal");
  let text = s.finite ? t("statsValue", {
    min: written(shortText(s.min, e.dtype), decimal), max: written(shortText(s.max, e.dtype), decimal),
    mean: written(shortText(s.mean), decimal)
  }) : "";
  if (s.finite < s.count) text += (text ? " · " : "") + t("nonFinite", { count: s.count - s.finite });
  return text;
}
