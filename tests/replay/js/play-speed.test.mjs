// The speed slider: positions to events per second, logarithmically, and their text.
import { test } from "node:test";
import assert from "node:assert/strict";

import { SPEED_MAX, SPEED_MIN, speedOf, speedText } from "../../../docs_build/assets/replay/play/speed.js";

test("speed: the slider maps 0..100 to the range logarithmically", () => {
  assert.equal(speedOf(0), SPEED_MIN);
  assert.ok(Math.abs(speedOf(100) - SPEED_MAX) < 1e-9);
  assert.ok(Math.abs(speedOf(50) - Math.sqrt(SPEED_MIN * SPEED_MAX)) < 1e-9);
  assert.deepEqual([speedText(0.25), speedText(1.5), speedText(2), speedText(12.4)], ["0.25", "1.5", "2", "12"]);
});
