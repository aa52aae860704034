// Where a box of the model's map leads.
import { test } from "node:test";
import assert from "node:assert/strict";

import { nextEventOf } from "../../../docs_build/assets/replay/play/next-event.js";
import { read } from "./fixtures.mjs";

const rec = read("generation.json");

test("a box leads to its step's next event, then the one after, wrapping around", () => {
  const all = rec.events.map((e, i) => [e, i]).filter(([e]) => e.step === "attn.q").map(([, i]) => i);
  assert.ok(all.length >= 2);
  let at = 0;
  const visited = [];
  for (let k = 0; k < all.length + 1; k += 1) {
    at = nextEventOf(rec.events, "attn.q", at);
    visited.push(at);
  }
  assert.deepEqual(visited, [...all, all[0]]);
  // from an event of the step itself: the next one, not the same
  assert.equal(nextEventOf(rec.events, "attn.q", all[0]), all[1]);
  assert.equal(nextEventOf(rec.events, "loss", 0), -1); // a generation has no loss event
});
