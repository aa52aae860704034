// Prints {file name: true if the page's reader accepts it} for the .json files of a folder
// (tests/replay/test_fixtures.py compares this with Python's verdicts on random edits).
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { RecordingError, readRecording } from "../../../docs_build/assets/replay-format.js";

const folder = process.argv[2];
const verdicts = {};
for (const name of readdirSync(folder).filter((n) => n.endsWith(".json")).sort()) {
  try {
    readRecording(readFileSync(join(folder, name)));
    verdicts[name] = true;
  } catch (err) {
    if (!(err instanceof RecordingError)) throw err; // a crash, not a verdict
    verdicts[name] = false;
  }
}
console.log(JSON.stringify(verdicts));
