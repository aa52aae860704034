// An event's numbers from base64 (version 1) and from raw bytes (version 2, float16 too).
import { test } from "node:test";
import assert from "node:assert/strict";

import { decodeBinary, decodeValues } from "../../../docs_build/assets/replay/format/decode.js";

test("float16 decoding: every special pattern", () => {
  const halves = new Uint16Array([0x0000, 0x8000, 0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x7c00, 0xfc00, 0x7e00]);
  const got = Array.from(decodeBinary(new Uint8Array(halves.buffer), "float16"));
  assert.deepEqual(got, [0, -0, 1, -2, 65504, 2 ** -24, 1023 * 2 ** -24, Infinity, -Infinity, NaN]);
  assert.ok(Object.is(got[1], -0));
  // bytes that sit at an odd offset are copied, not misread
  const odd = new Uint8Array(9);
  odd.set(new Uint8Array(new Float32Array([1.5, -3]).buffer), 1);
  assert.deepEqual(Array.from(decodeBinary(odd.subarray(1), "float32")), [1.5, -3]);
});

test("base64 little-endian float32 and int32, or a refusal naming the event", () => {
  // [1, 2] as float32: what Python's encode_array writes ("AACAPwAAAEA=")
  assert.deepEqual(Array.from(decodeValues("AACAPwAAAEA=", [1, 2], "float32", "events[0]")), [1, 2]);
  assert.deepEqual(Array.from(decodeValues("BwAAAA==", [], "int32", "events[1]")), [7]);
  for (const bad of ["AACAPwAAAE", "AACAPwAAAEA=AAAA", "AACA", 5]) {
    assert.throws(() => decodeValues(bad, [1, 2], "float32", "events[3]"), (err) => err.reason === "reasonData" && err.where === "events[3]");
  }
});
