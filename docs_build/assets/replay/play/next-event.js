/* glassllm replay: where a box of the model's map leads. Pure module (no DOM). */

/* The index of the first event of `stepId` after `from`, wrapping around; -1 if none.
   Repeated picks of one box so visit its layers and tokens in turn. */
export function nextEventOf(events, stepId, from) {
  const n = events.length;
  for (let k = 1; k <= n; k += 1) {
    const i = (from + k) % n;
    if (events[i].step === stepId) return i;
  }
  return -1;
}
