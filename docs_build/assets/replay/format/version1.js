/* glassllm replay: version 1 of the format, one JSON document whose events hold their
 * arrays as base64 text, decoded as the file is read.
 */

import { checkDocument } from "./check.js";
import { JSON_VERSION } from "./constants.js";
import { decodeValues } from "./decode.js";
import { RecordingError } from "./error.js";
import { own } from "./objects.js";
import { parseDocument } from "./scan.js";

/* The event's base64 array, decoded now. */
function finishJson(item, i, event) {
  const at = "events[" + i + "]";
  const dtype = event.step === "sample" ? "int32" : "float32";
  if (own(item, "dtype") !== dtype) throw new RecordingError("reasonBroken", { detail: at }, at);
  event.dtype = dtype;
  event.values = decodeValues(own(item, "data"), event.shape, dtype, at);
  return event;
}

/* A version 1 recording from its text, checked against the step table `table`. */
export function jsonRecording(text, table) {
  const { doc, floats } = parseDocument(text, "");
  return checkDocument(doc, floats, JSON_VERSION, table, finishJson);
}
