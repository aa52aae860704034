// node --test: the page API's argument checks (docs_build/assets/runtime/arguments.js), each
// refusal as Python's GlassLM refuses the same value (tests/docs_build/runtime/test_bridge.py
// holds the bridge to the same rules; test_browser.py sees one refusal in chromium).
import assert from "node:assert/strict";
import { test } from "node:test";

import { checkInteger, generateArguments, recordArguments, workedArguments } from "../../../../docs_build/assets/runtime/arguments.js";

const CONFIG = { vocab_size: 256, d_model: 64, n_layers: 2, n_heads: 4, n_kv_heads: 2, max_len: 64 };
const LANGUAGES = ["en", "pt"];

function refused(call, ErrorClass, pattern) {
  assert.throws(call, (error) => {
    assert.ok(error instanceof ErrorClass, `${error.name}: ${error.message}`);
    assert.equal(error.kind, "arguments");
    assert.match(error.message, pattern);
    return true;
  });
}

test("integers: 1.7 and true are no integers, and the range is kept", () => {
  assert.equal(checkInteger("x", "n", 3, 0), 3);
  refused(() => checkInteger("x", "n", 1.7, 0), TypeError, /glassllm\.x: n must be a non-negative integer, got 1\.7/);
  refused(() => checkInteger("x", "n", true, 0), TypeError, /got true/);
  refused(() => checkInteger("x", "n", "3", 0), TypeError, /got "3"/);
  refused(() => checkInteger("x", "n", NaN, 0), TypeError, /got NaN/);
  refused(() => checkInteger("x", "head", 4, 0, 3), RangeError, /head must be an integer in \[0, 3\], got 4/);
  refused(() => checkInteger("x", "n", -1, 1), RangeError, /an integer of at least 1, got -1/);
});

test("worked: an unknown option, a lone head, a head or layer out of range, another language", () => {
  assert.deepEqual(workedArguments("hi", "attn.softmax", {}, LANGUAGES, CONFIG),
    { text: "hi", step: "attn.softmax", lang: "en" });
  assert.deepEqual(workedArguments("hi", "attn.softmax", { lang: "pt", layer: 1, head: 3 }, LANGUAGES, CONFIG),
    { text: "hi", step: "attn.softmax", lang: "pt", layer: 1, head: 3 });
  // null and undefined options are left out, as the run panel passes them
  assert.deepEqual(workedArguments("hi", "embed", { layer: undefined, head: null }, LANGUAGES, CONFIG),
    { text: "hi", step: "embed", lang: "en" });
  refused(() => workedArguments("hi", "attn.softmax", { head: 99 }, LANGUAGES, CONFIG), RangeError,
    /option head was given without layer; give both/);
  refused(() => workedArguments("hi", "attn.softmax", { layer: 1 }, LANGUAGES, CONFIG), RangeError,
    /option layer was given without head/);
  refused(() => workedArguments("hi", "attn.softmax", { layer: 1, head: 99 }, LANGUAGES, CONFIG), RangeError,
    /option head must be an integer in \[0, 3\], got 99/);
  refused(() => workedArguments("hi", "attn.softmax", { layer: 1, head: -1 }, LANGUAGES, CONFIG), RangeError,
    /head must be an integer in \[0, 3\], got -1/);
  refused(() => workedArguments("hi", "attn.softmax", { layer: 2, head: 0 }, LANGUAGES, CONFIG), RangeError,
    /layer must be an integer in \[0, 1\], got 2/);
  refused(() => workedArguments("hi", "attn.softmax", { layer: 1.7, head: 0 }, LANGUAGES, CONFIG), TypeError,
    /layer must be an integer in \[0, 1\], got 1\.7/);
  refused(() => workedArguments("hi", "attn.softmax", { lang: "xx" }, LANGUAGES, CONFIG), RangeError,
    /option lang must be one of "en", "pt", got "xx"/);
  refused(() => workedArguments("hi", "attn.softmax", { bogus: 1 }, LANGUAGES, CONFIG), TypeError,
    /unknown option "bogus"; the options are lang, layer, head/);
  refused(() => workedArguments("hi", 123, {}, LANGUAGES, CONFIG), TypeError, /step must be a step ID/);
  refused(() => workedArguments(5, "embed", {}, LANGUAGES, CONFIG), TypeError, /text must be a string, got 5/);
  // before the model loads, the head's bounds are not known yet: only its type is checked
  assert.deepEqual(workedArguments("hi", "embed", { layer: 7, head: 9 }, LANGUAGES, null).head, 9);
  refused(() => workedArguments("hi", "embed", { layer: 0, head: -1 }, LANGUAGES, null), RangeError, /got -1/);
});

test("generate: options as GlassLM.generate takes them, and no other", () => {
  assert.deepEqual(generateArguments("hi", 2, { greedy: true, top_k: 5, seed: 0, trace: false, temperature: 0.5 }, CONFIG),
    { text: "hi", n: 2, greedy: true, top_k: 5, seed: 0, trace: false, temperature: 0.5 });
  assert.deepEqual(generateArguments("hi", 0, undefined, CONFIG), { text: "hi", n: 0 });
  refused(() => generateArguments("hi", 2, { bogus: 1 }, CONFIG), TypeError, /glassllm\.generate: unknown option "bogus"/);
  refused(() => generateArguments("hi", 2, { temperature: 0 }, CONFIG), RangeError, /positive finite number, got 0/);
  refused(() => generateArguments("hi", 2, { temperature: Infinity }, CONFIG), RangeError, /got Infinity/);
  refused(() => generateArguments("hi", 2, { temperature: true }, CONFIG), TypeError, /got true/);
  refused(() => generateArguments("hi", 2, { top_k: 257 }, CONFIG), RangeError, /top_k must be an integer in \[1, 256\], got 257/);
  refused(() => generateArguments("hi", 2, { seed: -3 }, CONFIG), RangeError, /seed must be a non-negative integer, got -3/);
  refused(() => generateArguments("hi", 2, { greedy: 1 }, CONFIG), TypeError, /greedy must be true or false, got 1/);
  refused(() => generateArguments("hi", 2, { trace: "yes" }, CONFIG), TypeError, /trace must be true or false/);
  refused(() => generateArguments("hi", 2.5, {}, CONFIG), TypeError, /n \(tokens to generate\) must be a non-negative integer, got 2\.5/);
  refused(() => generateArguments("hi", -1, {}, CONFIG), RangeError, /got -1/);
  refused(() => generateArguments("hi", 2, [1], CONFIG), TypeError, /options must be an object/);
});

test("record: at least one token, which the replay can play", () => {
  assert.deepEqual(recordArguments("hi", 1, { greedy: true }, CONFIG), { text: "hi", n: 1, greedy: true });
  refused(() => recordArguments("hi", 0, {}, CONFIG), RangeError,
    /glassllm\.record: n \(tokens to generate and record\) must be an integer of at least 1, got 0/);
  refused(() => recordArguments("hi", 3, { trace: true }, CONFIG), TypeError, /unknown option "trace"/);
});
