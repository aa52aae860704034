// The page's UI strings: placeholders filled, a missing key shown as itself, refusals in words.
import { test } from "node:test";
import assert from "node:assert/strict";

import { RecordingError } from "../../../docs_build/assets/replay/format/error.js";
import { reasonText, translate } from "../../../docs_build/assets/replay/strings.js";
import { pageStrings } from "./fixtures.mjs";

const strings = pageStrings("en");
const t = (key, vars) => translate(strings, key, vars);

test("a string with its placeholders filled; unknown placeholders stay", () => {
  assert.equal(t("eventOf", { i: 3, n: 41 }), "Event 3 of 41");
  assert.equal(translate({ x: "{a} and {b}" }, "x", { a: 1 }), "1 and {b}");
});

test("a key the page lacks is logged and shown as itself", (context) => {
  const logged = [];
  context.mock.method(console, "error", (text) => logged.push(text));
  assert.equal(t("noSuchKey"), "noSuchKey");
  assert.equal(logged.length, 1);
  assert.match(logged[0], /noSuchKey/);
});

test("why a file was refused, in the page's language", () => {
  assert.equal(reasonText(t, new RecordingError("reasonCount", { count: 3, expected: 41 }, "events")),
    "it has 3 events, but a recording of this model and run has 41");
  const pt = pageStrings("pt");
  assert.notEqual(reasonText((key, vars) => translate(pt, key, vars), new RecordingError("reasonJson", {}, "")), t("reasonJson"));
  // anything else is a damaged file, with what went wrong
  assert.equal(reasonText(t, new Error("boom")), "it is damaged or incomplete (boom)");
});
