/* glassllm replay: the timeline, a slider over every event of the recording. */

import { el } from "./dom.js";

/* The timeline row: `onInput(index)` when the reader moves it. */
export function timeline(t, onInput) {
  const input = el("input", {
    type: "range", min: 0, max: 0, step: 1, value: 0, id: "gr-timeline", className: "gr-timeline",
    oninput: () => onInput(Number(input.value))
  });
  const output = el("output", { "for": "gr-timeline", className: "gr-timeline-out" });
  const row = el("div", { className: "gr-timeline-row" }, [
    el("label", { "for": "gr-timeline", text: t("timeline") }), input, output
  ]);
  return { row: row, input: input, output: output };
}
