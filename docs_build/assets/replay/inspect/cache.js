/* glassllm replay: the KV cache as a step of a cached generation uses it — the positions it
 * reads from the cache, the ones it computes and appends, and what the cache holds after it.
 * Pure module (no DOM).
 */

/* The cache at event `e`: `cached` positions read from it (0 to cached − 1), `added`
   positions this step computes and appends (its own rows), `keys` = cached + added, the
   size after this step, and `final`, its size after the run's last step; null for a
   recording that recomputes the whole sequence at every step (or a loss run). */
export function cacheOf(rec, e) {
  if (rec.kind !== "generation" || !rec.cache) return null;
  return {
    cached: e.pass.first, added: e.pass.tokens, keys: e.pass.keys,
    final: rec.prompt.length + rec.generated.length - 1
  };
}

/* Whether key `c` of a cached step came from the cache ("cached") or is one this step
   computed ("new"); null where there is no cache or the axis is not the key axis. */
export function keyKind(cache, axis, c) {
  if (!cache || axis !== "key") return null;
  return c < cache.cached ? "cached" : "new";
}

/* The page's sentence about the cache at this step (`t`: its strings), or "" without one. */
export function cacheText(t, cache) {
  if (!cache) return "";
  if (!cache.cached) return t("cacheFirst", { added: cache.added, keys: cache.keys, final: cache.final });
  return t("cacheLater", {
    cached: cache.cached, last: cache.cached - 1, position: cache.cached, keys: cache.keys, final: cache.final
  });
}

/* The map's two bars in a box `width` wide: the positions read from the cache, then the
   ones this step adds, each as a share of the cache's size after the run's last step. */
export function cacheBars(cache, width) {
  const unit = width / Math.max(1, cache.final);
  return { read: { offset: 0, width: cache.cached * unit }, added: { offset: cache.cached * unit, width: cache.added * unit } };
}

/* The map box's accessible name at generation step `k` of `n` (counted from 0, as the
   event and the step pages count them). */
export function cacheBoxText(t, cache, k, n) {
  return t("mapCache", { keys: cache.keys, final: cache.final, step: k, count: n });
}
