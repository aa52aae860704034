/* glassllm replay: opening a recording of either version, checked exactly as
 * `glassllm.recording.loads` checks it (both readers are tested on
 * tests/fixtures/recordings), against the step table the build wrote (steps.js).
 */

import { HEADER_BYTES, MAGIC, PROBE_BYTES } from "./constants.js";
import { RecordingError } from "./error.js";
import { asBytes, bytesSource } from "./sources.js";
import { jsonRecording } from "./version1.js";
import { binaryRecording, readHeader } from "./version2.js";

/* A recording from a whole file's bytes (an ArrayBuffer or Uint8Array: version 2 if it
   starts with 0x89, else version 1 JSON read as UTF-8 with an initial BOM skipped) or from
   text; throws RecordingError for anything Python refuses. */
export function readRecording(input, table) {
  let text = input;
  if (typeof input !== "string") {
    const bytes = asBytes(input);
    if (bytes.length && bytes[0] === MAGIC[0]) return binaryRecording(bytes, bytesSource(bytes), table);
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch (e) {
      throw new RecordingError("reasonText", {}, "");
    }
  }
  return jsonRecording(text, table);
}

/* A recording of either version from a source (sources.js): a version 2 file is checked
   from its header and index alone. */
export async function openRecording(source, table) {
  const first = await source.read(0, Math.min(source.size, PROBE_BYTES));
  if (!first.length || first[0] !== MAGIC[0]) {
    return readRecording(source.bytes || (first.length === source.size ? first : await source.read(0, source.size)), table);
  }
  const header = readHeader(first, source.size);
  const indexEnd = HEADER_BYTES + header.indexLength;
  return binaryRecording(indexEnd <= first.length ? first : await source.read(0, indexEnd), source, table);
}

/* Whether an event's values can be read now (always, for version 1 and whole files). */
export function eventReady(rec, e) {
  return !rec.store || Boolean(e.param) || rec.store.ready(e);
}

/* Fetch what an event's values need (nothing for version 1 and whole files). */
export function loadEvent(rec, e) {
  // an update event's numbers are in the index, not in the data
  return rec.store && !e.param ? rec.store.load(e) : Promise.resolve();
}
