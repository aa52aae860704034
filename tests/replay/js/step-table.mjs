// The real step table, from the engine: what the build writes to assets/replay/steps.json
// (docs_build/pages/replay.py, steps_json), printed by this checkout's Python. The tests never
// copy it: GLASSLLM_PYTHON names the Python (pytest passes its own), else python3 on PATH,
// which must import this checkout's glassllm (pip install -e .).
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

import { stepTable } from "../../../docs_build/assets/replay/steps.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const PRINT = [
  "import json, sys",
  "from glassllm.steps import step_table",
  "import glassllm",
  "tokenizer = glassllm.load_tokenizer(glassllm.DEMO_CHECKPOINT)",
  "ids = range(tokenizer.vocab_size)",
  "sys.stdout.write(json.dumps({'steps': step_table(), 'token_labels': tokenizer.labels(ids),",
  "                             'token_bytes': [b.hex() for b in tokenizer.token_bytes(ids)]}))"
].join("\n");

function fromPython() {
  const python = process.env.GLASSLLM_PYTHON || "python3";
  try {
    return execFileSync(python, ["-c", PRINT], { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    throw new Error("the replay's node tests read the step table from Python: '" + python + "' failed (" +
      String(err.stderr || err.message).trim() + "); set GLASSLLM_PYTHON to a Python that imports this " +
      "checkout's glassllm (pip install -e .)");
  }
}

export const STEPS_JSON = JSON.parse(fromPython());
export const TABLE = stepTable(STEPS_JSON);
