// One label per token, the pages' (glassllm.tokenizer.token_label, through steps.json).
import { test } from "node:test";
import assert from "node:assert/strict";

import { tokenLabel, tokensText } from "../../../docs_build/assets/replay/tokens.js";
import { TABLE } from "./step-table.mjs";

const labels = TABLE.tokenLabels;

test("bytes read as on the step pages: symbols for space and newline, escapes for the rest", () => {
  assert.deepEqual([32, 10, 65, 7, 200].map((b) => tokenLabel(labels, b)), ["␣", "⏎", "A", "\\x07", "\\xc8"]);
  // a large vocabulary recorded without its tokenizer: IDs, never wrapped into bytes
  assert.equal(tokenLabel(labels, 41809), "#41809");
  assert.equal(tokenLabel(labels, 256), "#256");
});

test("tokens as text: UTF-8 where they are bytes, labels where they are not", () => {
  assert.equal(tokensText(labels, [0xc3, 0xa9]), "é");
  assert.equal(tokensText(labels, [72, 0xff]), "H\ufffd");
  assert.equal(tokensText(labels, [72, 41809, 256]), "H #41809 #256");
});
