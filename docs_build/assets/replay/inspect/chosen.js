/* glassllm replay: the vocabulary entry a row of a snapshot leads to. Pure module (no DOM). */

/* The vocabulary column of the token a row leads to: the sampled token for the last
   position of a generation step, the target of each position in the loss run; else -1. */
export function chosenColumn(rec, e, row, rows, colAxis) {
  if (colAxis !== "vocab") return -1;
  if (rec.kind === "generation") return row === rows - 1 ? rec.generated[e.gen] : -1;
  return row < rec.targets.length ? rec.targets[row] : -1;
}
