// The shared recording files (tests/fixtures/recordings), which Python's reader is held to
// as well (tests/replay/test_fixtures.py), read with the real step table.
import { readFileSync, readdirSync } from "node:fs";

import { readRecording } from "../../../docs_build/assets/replay/format/index.js";
import { TABLE } from "./step-table.mjs";

export const FIXTURES = new URL("../../fixtures/recordings/", import.meta.url);

/* The .json and .glrec files of good/ or bad/, sorted. */
export const files = (folder) => readdirSync(new URL(folder + "/", FIXTURES)).filter((n) => /\.(json|glrec)$/.test(n)).sort();

export const bytes = (folder, name) => readFileSync(new URL(folder + "/" + name, FIXTURES));

/* A good file, read as the page reads it. */
export const read = (name) => readRecording(bytes("good", name), TABLE);

/* The page's UI strings of docs/replay.md (English) or docs/pt/replay.md. */
export function pageStrings(lang) {
  const page = readFileSync(new URL("../../../docs/" + (lang === "pt" ? "pt/" : "") + "replay.md", import.meta.url), "utf8");
  const block = /<script type="application\/json" class="glassllm-replay-strings">([\s\S]*?)<\/script>/.exec(page);
  return JSON.parse(block[1]);
}
