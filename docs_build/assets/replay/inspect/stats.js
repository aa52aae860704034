/* glassllm replay: a snapshot's statistics, non-finite values counted apart. Pure module. */

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
