// One label per token, the pages' (the demo's tokenizer's labels, through steps.json).
import { test } from "node:test";
import assert from "node:assert/strict";

import { byteLabel, chipText, recordingLabels, tokenLabel, tokensText } from "../../../docs_build/assets/replay/tokens.js";
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

test("a recording reads with the site's table, as bytes, or with the strings it holds", () => {
  const config = (vocab) => ({ vocab_size: vocab });
  // the site's model (its vocabulary; strings, if any, agreeing with the table): the table
  const the = idOf(hexOf(" the"));
  const site = recordingLabels(TABLE, { config: config(labels.length), strings: new Map([[the, " the"]]) });
  assert.equal(site.labels, labels);
  assert.equal(recordingLabels(TABLE, { config: config(labels.length), strings: null }).labels, labels);
  // a byte model's recording: each token its byte, as glassllm.tokenizer.token_label
  const bytesRec = recordingLabels(TABLE, { config: config(256), strings: null });
  assert.deepEqual([32, 10, 65, 9, 200].map((t) => bytesRec.labels[t]), ["␣", "⏎", "A", "\\x09", "\\xc8"]);
  assert.equal(tokensText(bytesRec.labels, [0xc3, 0xa9], bytesRec.bytes), "é");
  // another tokenizer of the same size: its own strings, IDs for the rest, never the table's
  const other = recordingLabels(TABLE, { config: config(labels.length), strings: new Map([[the, "cat\n"]]) });
  assert.equal(other.labels[the], "cat⏎");
  assert.equal(other.labels[the + 1], "#" + (the + 1));
  assert.equal(tokensText(other.labels, [the], other.bytes), "cat\n");
});

test("chips show a space as ␣, a newline as ⏎ and other invisible characters escaped", () => {
  assert.equal(chipText(" the\n"), "␣the⏎");
  assert.equal(chipText("a\tb\u200b"), "a\\x09b\\u200b");
  assert.equal(chipText("é😀"), "é😀");
  assert.deepEqual([32, 65, 126, 9, 10, 13, 0, 255].map(byteLabel),
                   ["␣", "A", "~", "\\x09", "⏎", "\\x0d", "\\x00", "\\xff"]);
});
