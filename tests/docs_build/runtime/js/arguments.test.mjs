// node --test: the page API's argument checks (docs_build/assets/runtime/arguments.js), each
// refusal as Python's GlassLM refuses the same value (tests/docs_build/runtime/test_bridge.py
// holds the bridge to the same rules; test_browser.py sees one refusal in chromium).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  checkInteger, generateArguments, lessonAblateArguments, lessonAdvanceArguments, lessonStartArguments,
  recordArguments, trainArguments, workedArguments,
} from "../../../../docs_build/assets/runtime/arguments.js";
import { Runtime } from "../../../../docs_build/assets/runtime/client.js";

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

// glassllm.train and glassllm.lesson, as glassllm.lessons.Lesson and bridge.py's lesson_start
// refuse the same values (tests/glassllm/test_lessons.py, test_bridge_lesson.py)
// build.js's lesson: glassllm.lessons' STEPS, SNAPSHOT_EVERY and its model's sizes
// (test_site_files.py checks the build writes those)
const LESSON = { steps: 800, snapshot_every: 10, n_layers: 2, n_heads: 4 };

const NOT_INTEGERS = [[1.7, /got 1\.7/], [true, /got true/], ["3", /got "3"/], [NaN, /got NaN/],
  [Infinity, /got Infinity/]];

test("lesson.start: seed 0 by default, and only the options given", () => {
  assert.deepEqual(lessonStartArguments(undefined, LESSON), { seed: 0 });
  assert.deepEqual(lessonStartArguments({}, LESSON), { seed: 0 });
  assert.deepEqual(lessonStartArguments({ seed: 3, steps: 800, snapshot_every: 1 }, LESSON),
    { seed: 3, steps: 800, snapshot_every: 1 });
  assert.deepEqual(lessonStartArguments({ seed: null, steps: undefined }, LESSON), { seed: 0 });
});

test("lesson.start and train: a seed, steps or snapshot_every that is no integer is a TypeError", () => {
  for (const [call, args] of [["lesson.start", (o) => lessonStartArguments(o, LESSON)],
    ["train", (o) => trainArguments(o, LESSON)]]) {
    for (const name of ["seed", "steps", "snapshot_every"]) {
      for (const [value, got] of NOT_INTEGERS) {
        refused(() => args({ [name]: value }), TypeError,
          new RegExp(`^glassllm\\.${call.replace(".", "\\.")}: option ${name} .*must be .*${got.source}`));
      }
    }
  }
});

test("lesson.start and train: out of range is a RangeError naming the call and the bound", () => {
  refused(() => lessonStartArguments({ seed: -1 }, LESSON), RangeError,
    /^glassllm\.lesson\.start: option seed must be a non-negative integer, got -1$/);
  refused(() => trainArguments({ steps: 0 }, LESSON), RangeError,
    /^glassllm\.train: option steps \(training steps, the full lesson's at most\) must be an integer in \[1, 800\], got 0$/);
  refused(() => trainArguments({ steps: 801 }, LESSON), RangeError, /in \[1, 800\], got 801/);
  refused(() => lessonStartArguments({ steps: 801 }, LESSON), RangeError, /glassllm\.lesson\.start: option steps/);
  refused(() => lessonStartArguments({ snapshot_every: 0 }, LESSON), RangeError,
    /option snapshot_every \(steps between two snapshots\) must be an integer of at least 1, got 0/);
  refused(() => trainArguments({ seed: -5 }, LESSON), RangeError, /glassllm\.train: option seed/);
  // without the page's lesson bounds, steps has no upper bound (the bridge still has one)
  assert.equal(lessonStartArguments({ steps: 5000 }, null).steps, 5000);
});

test("lesson.start and train: an unknown option or options that are no object", () => {
  refused(() => lessonStartArguments({ step: 5 }, LESSON), TypeError,
    /^glassllm\.lesson\.start: unknown option "step"; the options are seed, steps, snapshot_every$/);
  refused(() => lessonStartArguments({ onSnapshot: () => {} }, LESSON), TypeError, /unknown option "onSnapshot"/);
  refused(() => trainArguments({ seeds: 1 }, LESSON), TypeError,
    /^glassllm\.train: unknown option "seeds"; the options are seed, steps, snapshot_every, onSnapshot$/);
  refused(() => trainArguments(5, LESSON), TypeError, /glassllm\.train: options must be an object, got 5/);
  refused(() => trainArguments([1], LESSON), TypeError, /options must be an object/);
});

test("train: onSnapshot is a function, and the settings are lesson.start's", () => {
  const onSnapshot = () => {};
  assert.deepEqual(trainArguments({ seed: 2, steps: 20, onSnapshot }, LESSON),
    { settings: { seed: 2, steps: 20 }, onSnapshot });
  assert.deepEqual(trainArguments(undefined, LESSON), { settings: { seed: 0 }, onSnapshot: null });
  for (const value of ["f", 1, {}, true]) {
    refused(() => trainArguments({ onSnapshot: value }, LESSON), TypeError,
      /^glassllm\.train: option onSnapshot must be a function \(called with each snapshot\)/);
  }
});

test("lesson.advance: maxSteps is an integer of at least 1", () => {
  assert.deepEqual(lessonAdvanceArguments(5), { max_steps: 5 });
  for (const [value, got] of [...NOT_INTEGERS, [undefined, /got undefined/]]) {
    refused(() => lessonAdvanceArguments(value), TypeError,
      new RegExp(`^glassllm\\.lesson\\.advance: maxSteps \\(steps to train\\) must be an integer of at least 1, ${got.source}`));
  }
  refused(() => lessonAdvanceArguments(0), RangeError, /maxSteps \(steps to train\) must be an integer of at least 1, got 0/);
  refused(() => lessonAdvanceArguments(-2), RangeError, /got -2/);
});

test("lesson.ablate: [layer, head] pairs of the lesson's model", () => {
  assert.deepEqual(lessonAblateArguments([[0, 1], [1, 3]], LESSON), { heads: [[0, 1], [1, 3]] });
  assert.deepEqual(lessonAblateArguments([], LESSON), { heads: [] });
  refused(() => lessonAblateArguments("0,1", LESSON), TypeError,
    /^glassllm\.lesson\.ablate: heads must be a list of \[layer, head\] pairs such as \[\[0, 1\]\], got "0,1"$/);
  refused(() => lessonAblateArguments([0, 1], LESSON), TypeError, /got the item 0/);
  refused(() => lessonAblateArguments([[0, 1, 2]], LESSON), TypeError, /got the item \[0,1,2\]/);
  refused(() => lessonAblateArguments([[0, 4]], LESSON), RangeError,
    /^glassllm\.lesson\.ablate: head \(of the head \[0,4\]\) must be an integer in \[0, 3\], got 4$/);
  refused(() => lessonAblateArguments([[2, 0]], LESSON), RangeError, /layer \(of the head \[2,0\]\) must be an integer in \[0, 1\], got 2/);
  refused(() => lessonAblateArguments([[0, -1]], LESSON), RangeError, /head .* got -1/);
  refused(() => lessonAblateArguments([[0, 1.7]], LESSON), TypeError, /head .* got 1\.7/);
  refused(() => lessonAblateArguments([[true, 0]], LESSON), TypeError, /layer .* got true/);
  refused(() => lessonAblateArguments([["0", 1]], LESSON), TypeError, /layer .* got "0"/);
});

// A worker that must never be made: every refusal comes before the runtime starts one
class NoWorker {
  static made = 0;
  constructor() {
    NoWorker.made += 1;
  }
  postMessage() {}
  terminate() {}
}

test("the Runtime refuses a bad train or lesson call before it starts a worker", async () => {
  const made = new Runtime({ base: "http://site/assets/runtime/", events: new EventTarget(),
    data: { revision: "abc", lesson: LESSON, ui: { en: {} } }, strings: {}, WorkerClass: NoWorker });
  const arguments_ = (ErrorClass, pattern) => (error) => error instanceof ErrorClass
    && error.kind === "arguments" && pattern.test(error.message);
  await assert.rejects(made.train({ seed: 1.7 }), arguments_(TypeError, /^glassllm\.train: option seed/));
  await assert.rejects(made.train({ steps: 801 }), arguments_(RangeError, /^glassllm\.train: option steps/));
  await assert.rejects(made.train({ onSnapshot: 1 }), arguments_(TypeError, /onSnapshot must be a function/));
  await assert.rejects(made.train({ bogus: 1 }), arguments_(TypeError, /unknown option "bogus"/));
  await assert.rejects(made.lessonStart({ seed: -1 }), arguments_(RangeError, /^glassllm\.lesson\.start: option seed/));
  await assert.rejects(made.lessonStart({ snapshot_every: 0 }), arguments_(RangeError, /snapshot_every/));
  await assert.rejects(made.lessonAdvance("3"), arguments_(TypeError, /^glassllm\.lesson\.advance: maxSteps/));
  await assert.rejects(made.lessonAblate([[0, 9]]), arguments_(RangeError, /^glassllm\.lesson\.ablate: head/));
  await assert.rejects(made.lessonAblate(null), arguments_(TypeError, /heads must be a list/));
  assert.equal(NoWorker.made, 0);
});
