// The equations and source lines a recording carries, used only where well-formed.
import { test } from "node:test";
import assert from "node:assert/strict";

import { fileStepInfo } from "../../../docs_build/assets/replay/format/file-steps.js";
import { read } from "./fixtures.mjs";

test("the file's steps table is used only where it is well-formed", () => {
  const rec = read("extra-fields-and-odd-steps-table.json");
  assert.deepEqual(fileStepInfo(rec, "embed"), { latex: "", plain: "", gradLatex: "", gradPlain: "", source: null });
  const full = read("generation.json");
  const info = fileStepInfo(full, "attn.softmax");
  assert.ok(info.latex.length > 0 && info.source.file === "glassllm/nn.py");
  assert.deepEqual(fileStepInfo(full, "constructor"), { latex: "", plain: "", gradLatex: "", gradPlain: "", source: null });
});
