// Prints {file name: true if the page's reader accepts it} for the .json and .glrec files of
// a folder (tests/replay/test_fixtures.py compares this with Python's verdicts on random
// edits). A version 2 file is read as the page reads it, from its header and index
// (openRecording), and then every event's values are decoded.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { RecordingError, bytesSource, openRecording } from "../../../docs_build/assets/replay/format/index.js";
import { TABLE } from "./step-table.mjs";

const folder = process.argv[2];
const verdicts = {};
for (const name of readdirSync(folder).filter((n) => /\.(json|glrec)$/.test(n)).sort()) {
  try {
    const rec = await openRecording(bytesSource(readFileSync(join(folder, name))), TABLE);
    for (const e of rec.events) if (e.values.length !== e.shape.reduce((a, b) => a * b, 1)) throw new Error("short values");
    verdicts[name] = true;
  } catch (err) {
    if (!(err instanceof RecordingError)) throw err; // a crash, not a verdict
    verdicts[name] = false;
  }
}
console.log(JSON.stringify(verdicts));
