// The KV cache as a cached generation step uses it: what it reads, adds and holds.
import { test } from "node:test";
import assert from "node:assert/strict";

import { cacheBars, cacheBoxText, cacheOf, cacheText, keyKind } from "../../../docs_build/assets/replay/inspect/cache.js";
import { translate } from "../../../docs_build/assets/replay/strings.js";
import { pageStrings, read } from "./fixtures.mjs";

const rec = read("generation.json"); // a 2-token prompt, 2 generated tokens, with the cache
const t = (key, vars) => translate(pageStrings("en"), key, vars);
const at = (r, step, gen) => r.events.find((x) => x.step === step && x.gen === gen);

test("the first step stores the prompt; each later one reads the cache and adds its position", () => {
  assert.deepEqual(cacheOf(rec, at(rec, "attn.k_rope", 0)), { cached: 0, added: 2, keys: 2, final: 3 });
  assert.deepEqual(cacheOf(rec, at(rec, "attn.scores", 1)), { cached: 2, added: 1, keys: 3, final: 3 });
  // every event of a step sees the same cache, whatever its own shape
  assert.deepEqual(cacheOf(rec, at(rec, "probs", 1)), cacheOf(rec, at(rec, "embed", 1)));
});

test("no cache in a full recompute or a loss run", () => {
  const full = read("generation-full-recompute.json");
  assert.equal(cacheOf(full, at(full, "attn.scores", 1)), null);
  const loss = read("loss.json");
  assert.equal(cacheOf(loss, loss.events[0]), null);
  assert.equal(cacheText(t, null), "");
});

test("each key of a cached step: from the cache, or the step's own", () => {
  const cache = cacheOf(rec, at(rec, "attn.scores", 1));
  assert.deepEqual([0, 1, 2].map((c) => keyKind(cache, "key", c)), ["cached", "cached", "new"]);
  assert.equal(keyKind(cache, "dim", 0), null);
  assert.equal(keyKind(null, "key", 0), null);
  const first = cacheOf(rec, at(rec, "attn.scores", 0));
  assert.deepEqual([0, 1].map((c) => keyKind(first, "key", c)), ["new", "new"]);
});

test("the sentences and the map's bars say how full the cache is", () => {
  const first = cacheOf(rec, at(rec, "embed", 0));
  const later = cacheOf(rec, at(rec, "embed", 1));
  assert.match(cacheText(t, first), /prompt's 2 positions.*2 of the 3 positions/);
  assert.match(cacheText(t, later), /positions 0–1 from the cache and computes only position 2.*3 of the 3/);
  assert.equal(cacheBoxText(t, later, 1, 2), "K/V cache: 3 of 3 positions (generation step 1 of 2, counted from 0)");
  assert.deepEqual(cacheBars(first, 30), { read: { offset: 0, width: 0 }, added: { offset: 0, width: 20 } });
  assert.deepEqual(cacheBars(later, 30), { read: { offset: 0, width: 20 }, added: { offset: 20, width: 10 } });
});

test("both languages have every string of the cache", () => {
  const en = pageStrings("en");
  const pt = pageStrings("pt");
  for (const key of ["kvCache", "cacheFirst", "cacheLater", "noCache", "keyCached", "keyNew", "rowNew",
    "keysFirst", "keysLater", "mapCache", "mapNoCache", "mapCacheLoss"]) {
    assert.equal(typeof en[key], "string", key);
    assert.equal(typeof pt[key], "string", key);
    assert.notEqual(en[key], pt[key], key);
  }
});
