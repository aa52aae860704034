// The player's state without a browser: stepping, filters, play to the end.
import { test } from "node:test";
import assert from "node:assert/strict";

import { Player } from "../../../docs_build/assets/replay/play/player.js";
import { read } from "./fixtures.mjs";
import { TABLE } from "./step-table.mjs";

const rec = read("generation.json");
const PER_PASS = 23; // one block: 18 + 5

test("next and previous move by one and stop at the ends", () => {
  const p = new Player(rec);
  assert.equal(p.step(-1), false);
  assert.equal(p.index, 0);
  assert.equal(p.step(1), true);
  assert.equal(p.event.step, "attn.norm");
  p.go(1e9);
  assert.equal(p.index, rec.events.length - 1);
  assert.equal(p.step(1), false);
  p.go(-5);
  assert.equal(p.index, 0);
});

test("a filter jumps to the nearest match and stepping visits only matches", () => {
  const p = new Player(rec);
  p.go(5);
  assert.equal(p.setFilter("step", "attn.mask"), true);
  assert.equal(p.event.step, "attn.mask");
  assert.equal(p.event.gen, 0);
  assert.equal(p.step(1), true);
  assert.deepEqual([p.event.step, p.event.gen], ["attn.mask", 1]);
  assert.equal(p.step(1), false); // no later mask
  assert.equal(p.matchCount(), 2);
  // the nearest match at or after the event, else the first
  assert.equal(p.setFilter("gen", "0"), true);
  assert.deepEqual([p.event.step, p.event.gen], ["attn.mask", 0]);
  // nothing matches: the event stays
  const index = p.index;
  assert.equal(p.setFilter("step", "loss"), false);
  assert.equal(p.index, index);
  p.clearFilters();
  assert.equal(p.filtered(), false);
});

test("the head filter keeps the steps with a head axis", () => {
  const p = new Player(rec);
  p.setFilter("head", "1");
  const visited = [p.event.step];
  while (p.step(1)) visited.push(p.event.step);
  assert.equal(visited.length, 2 * 9);
  assert.ok(visited.every((s) => s.startsWith("attn.") && !["attn.norm", "attn.out", "attn.residual"].includes(s)));
  assert.deepEqual([...new Set(visited)], [...TABLE.headSteps]); // the table's, in order
});

test("play runs to the end, pauses there and starts over from the first match", () => {
  const p = new Player(rec);
  p.setFilter("layer", "0");
  p.play();
  let beats = 0;
  while (p.tick()) beats++;
  assert.equal(p.playing, false);
  assert.equal(beats, 2 * 18 - 1);
  assert.deepEqual([p.event.step, p.event.gen], ["mlp.residual", 1]);
  p.play();
  assert.deepEqual([p.index, p.event.step], [1, "attn.norm"]);
  p.pause();
  assert.equal(p.tick(), false);
  assert.equal(p.index, 1);
});

test("a snapshot puts back the event and the filters", () => {
  const p = new Player(rec);
  p.setFilter("step", "logits");
  p.step(1);
  const state = p.snapshot();
  const q = new Player(rec);
  q.restore(state);
  assert.equal(q.index, PER_PASS + 20);
  assert.equal(q.filters.step, "logits");
  state.filters.step = "embed"; // a copy, not shared
  assert.equal(q.filters.step, "logits");
});

test("the delay between beats follows the speed", () => {
  const p = new Player(rec);
  p.speed = 4;
  assert.equal(p.delay(), 250);
});
