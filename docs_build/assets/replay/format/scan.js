/* glassllm replay: JSON text read safely — nesting and number lengths bounded before
 * JSON.parse sees it, as glassllm.recording.check_text bounds them for Python's parser.
 */

import { MAX_DEPTH, MAX_NUMBER_CHARS } from "./constants.js";
import { RecordingError } from "./error.js";

// JSON's strings, punctuation and numbers: all the nesting scan needs to see
const JSON_TOKEN = /"[^"\\]*(?:\\.[^"\\]*)*"|[[\]{},:]|-?[0-9][0-9.eE+-]*/g;

function pathText(path) {
  const text = path.slice(0, 3).map((p) => (typeof p === "number" ? "[" + p + "]" : "." + p))
    .join("").replace(/^\./, "");
  return text + (path.length > 3 ? "…" : "");
}

function keyOf(token) {
  if (token.indexOf("\\") < 0) return token.slice(1, -1);
  try {
    return JSON.parse(token);
  } catch (e) {
    return token;
  }
}

/* Refuse nesting deeper than MAX_DEPTH and number literals longer than MAX_NUMBER_CHARS
   (glassllm.recording.check_text, the same scan). Returns the paths of numbers written as
   floats with an integral value ("1.0", "1e30"): JSON.parse cannot tell them from integers,
   Python's json can, and the format's integer fields refuse them. */
export function scanText(text) {
  const floats = new Set();
  const stack = []; // per open container: [isObject, key or index, expectingKey]
  JSON_TOKEN.lastIndex = 0;
  let match;
  while ((match = JSON_TOKEN.exec(text)) !== null) {
    const token = match[0];
    const first = token[0];
    const top = stack[stack.length - 1];
    if (first === "[" || first === "{") {
      if (stack.length === MAX_DEPTH) {
        throw new RecordingError("reasonDepth", { max: MAX_DEPTH, where: pathText(stack.map((s) => s[1])) },
          pathText(stack.map((s) => s[1])));
      }
      stack.push([first === "{", first === "{" ? null : 0, first === "{"]);
    } else if (first === "]" || first === "}") {
      stack.pop();
    } else if (first === ",") {
      if (top) {
        if (top[0]) top[2] = true;
        else top[1] += 1;
      }
    } else if (first === ":") {
      if (top) top[2] = false;
    } else if (first === '"') {
      if (top && top[0] && top[2]) top[1] = keyOf(token);
    } else {
      const path = stack.map((s) => s[1]);
      if (token.length > MAX_NUMBER_CHARS) {
        const where = pathText(path) || "the top level";
        throw new RecordingError("reasonNumber", { max: MAX_NUMBER_CHARS, where: where }, where);
      }
      const float = /[.eE]/.test(token);
      if (float && Number.isInteger(Number(token))) floats.add(JSON.stringify(path));
      else if (!float && floats.size) floats.delete(JSON.stringify(path));
    }
  }
  return floats;
}

/* The JSON text of a recording (version 1's whole file, version 2's index) parsed, with the
   float tokens scanText finds first; `place` names it in the error. */
export function parseDocument(text, place) {
  const floats = scanText(text);
  try {
    return { doc: JSON.parse(text), floats: floats };
  } catch (e) {
    throw new RecordingError("reasonJson", {}, place);
  }
}
