/* glassllm replay: the most likely entries of a distribution. Pure module (no DOM). */

/* Indices of the `k` largest values, largest first (ties: the lower index first). */
export function topEntries(values, k) {
  const order = Array.from({ length: values.length }, (_, i) => i);
  order.sort((a, b) => values[b] - values[a] || a - b);
  return order.slice(0, k);
}
