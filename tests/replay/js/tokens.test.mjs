// One label per token, the pages' (the demo's tokenizer's labels, through steps.json).
import { test } from "node:test";
import assert from "node:assert/strict";

import { tokenLabel, tokensText } from "../../../docs_build/assets/replay/tokens.js";
import { STEPS_JSON, TABLE } from "./step-table.mjs";

const labels = TABLE.tokenLabels;
const bytes = TABLE.tokenBytes;
// the ID of the token whose bytes are `hex` (the table from Python: nothing typed in)
const idOf = (hex) => {
  const id = bytes.indexOf(hex);
  assert.ok(id >= 0, "no token has the bytes " + hex);
  return id;
};
const hexOf = (text) => Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("");

test("subword tokens read with their leading space as ␣, newline ⏎, a piece of a character as its escape", () => {
  assert.equal(tokenLabel(labels, idOf(hexOf(" the"))), "␣the");
  assert.equal(tokenLabel(labels, idOf(hexOf("\n"))), "⏎");
  assert.equal(tokenLabel(labels, idOf("c3")), "\\xc3");
  assert.equal(tokenLabel(labels, idOf("07")), "\\x07");
  // a larger vocabulary recorded without its tokenizer: IDs, never wrapped into bytes
  assert.equal(tokenLabel(labels, 41809), "#41809");
  assert.equal(tokenLabel(labels, labels.length), "#" + labels.length);
  assert.equal(STEPS_JSON.token_labels.length, labels.length);
});

test("tokens as text: their bytes decoded as UTF-8, labels where they are outside the table", () => {
  const the = idOf(hexOf(" the"));
  assert.equal(tokensText(labels, [idOf(hexOf("T")), the, idOf("c3"), idOf("a9")], bytes), "T theé");
  assert.equal(tokensText(labels, [idOf(hexOf("H")), idOf("ff")], bytes), "H\ufffd");
  assert.equal(tokensText(labels, [the, 41809], bytes), "␣the #41809");
  // a table of byte labels without bytes: token t is byte t
  assert.equal(tokensText(new Array(256).fill("?"), [0xc3, 0xa9]), "é");
});
