/* glassllm replay: the equations and source lines a recording carries for its steps. */

import { isObject, own } from "./objects.js";

/* The equation and source line the file carries for a step, where they are well-formed
   (the readers do not check this table, so the page uses it only when it is). */
export function fileStepInfo(rec, stepId) {
  const entry = isObject(rec.steps) && isObject(own(rec.steps, stepId)) ? own(rec.steps, stepId) : {};
  const text = (v) => (typeof v === "string" ? v : "");
  const source = isObject(own(entry, "source")) ? own(entry, "source") : null;
  return {
    latex: text(own(entry, "latex")),
    plain: text(own(entry, "plain")),
    // a training recording's: the step's backward rule (glassllm.backward.GRADS)
    gradLatex: text(own(entry, "grad_latex")),
    gradPlain: text(own(entry, "grad_plain")),
    source: source && typeof own(source, "file") === "string" && Number.isInteger(own(source, "line"))
      ? { file: source.file, line: source.line } : null
  };
}
