/* glassllm replay: version 2 of the format, binary — a 16-byte header, a JSON index, then
 * the arrays, each aligned. The page reads only the header and the index to open it; an
 * event's bytes are read (loadEvent) and decoded (event.values) when it is shown.
 */

import { checkDocument } from "./check.js";
import { ALIGN, DTYPE_BYTES, FLOAT_DTYPES, HEADER_BYTES, MAGIC, VERSION } from "./constants.js";
import { RecordingError } from "./error.js";
import { own } from "./objects.js";
import { parseDocument } from "./scan.js";
import { BinaryEvent, EventStore } from "./store.js";

const padding = (size) => (ALIGN - (size % ALIGN)) % ALIGN;

/* The 16-byte header of a version 2 file of `size` bytes: its version, the index length
   and where the data starts (RecordingError "header" if damaged or cut off). */
export function readHeader(bytes, size) {
  if (size < HEADER_BYTES || bytes.length < HEADER_BYTES || !MAGIC.every((b, i) => bytes[i] === b)) {
    throw new RecordingError("reasonHeader", {}, "header");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  const version = view.getUint32(8, true);
  const indexLength = view.getUint32(12, true);
  if (version > VERSION) throw new RecordingError("reasonVersion", { version: version }, "version");
  if (version !== VERSION) throw new RecordingError("reasonBroken", { detail: "header" }, "header");
  const dataStart = HEADER_BYTES + indexLength + padding(HEADER_BYTES + indexLength);
  if (dataStart > size) throw new RecordingError("reasonBroken", { detail: "header" }, "header");
  return { version: version, indexLength: indexLength, dataStart: dataStart };
}

/* A version 2 recording from `head` (the file's first bytes, header and index at least)
   and the source of the rest: everything is checked, against the step table `table`,
   before any value is read. */
export function binaryRecording(head, source, table) {
  const header = readHeader(head, source.size);
  let text;
  try {
    // ignoreBOM: a BOM stays in the text and JSON.parse refuses it, as Python's json does
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
      .decode(head.subarray(HEADER_BYTES, HEADER_BYTES + header.indexLength));
  } catch (e) {
    throw new RecordingError("reasonText", {}, "index");
  }
  const { doc, floats } = parseDocument(text, "index");
  const store = new EventStore(source);
  const dataSize = source.size - header.dataStart;
  let end = 0; // events' bytes come in event order without overlapping
  const rec = checkDocument(doc, floats, VERSION, table, (item, i, place, isCount) => {
    const at = "events[" + i + "]";
    const dtype = own(item, "dtype");
    const allowed = place.step === "sample" ? ["int32"] : FLOAT_DTYPES;
    if (typeof dtype !== "string" || allowed.indexOf(dtype) < 0) throw new RecordingError("reasonBroken", { detail: at }, at);
    const offset = own(item, "offset");
    const length = own(item, "length");
    if (!isCount(offset, ["events", i, "offset"]) || !isCount(length, ["events", i, "length"])) {
      throw new RecordingError("reasonBroken", { detail: at }, at);
    }
    const count = place.shape.reduce((a, b) => a * b, 1);
    const bad = length !== count * DTYPE_BYTES[dtype] || offset % ALIGN !== 0 || offset < end ||
      offset + length > dataSize;
    if (bad) throw new RecordingError("reasonBytes", { where: at }, at);
    end = offset + length;
    return new BinaryEvent(place, dtype, header.dataStart + offset, length, store);
  });
  rec.store = store;
  return rec;
}
