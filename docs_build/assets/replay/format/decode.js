/* glassllm replay: an event's numbers from the bytes a file stores them in — base64 text
 * (version 1) or raw little-endian bytes (version 2, float16 included).
 */

import { DTYPE_BYTES } from "./constants.js";
import { RecordingError } from "./error.js";

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/* The event's numbers as a Float32Array or Int32Array (`data`: base64 little-endian);
   RecordingError at `at` when the text is not base64 or does not fill `shape`. */
export function decodeValues(data, shape, dtype, at) {
  const fail = () => new RecordingError("reasonData", { where: at }, at);
  if (typeof data !== "string" || !BASE64.test(data)) throw fail();
  const count = shape.reduce((a, b) => a * b, 1);
  const size = (data.length / 4) * 3 - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
  if (size !== count * 4) throw fail();
  const binary = atob(data);
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = binary.charCodeAt(i);
  if (!LITTLE_ENDIAN) {
    for (let i = 0; i < size; i += 4) bytes.subarray(i, i + 4).reverse();
  }
  return dtype === "int32" ? new Int32Array(bytes.buffer) : new Float32Array(bytes.buffer);
}

let HALF_TABLE = null;

/* float16 bit pattern -> its value, for all 65536 patterns (exact in float32: ±inf, NaN,
   -0 and subnormals included). */
function halfTable() {
  if (HALF_TABLE) return HALF_TABLE;
  HALF_TABLE = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const fraction = h & 0x3ff;
    HALF_TABLE[h] = exponent === 0 ? sign * fraction * 2 ** -24
      : exponent === 31 ? (fraction ? NaN : sign * Infinity)
        : sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
  }
  return HALF_TABLE;
}

/* An event's raw little-endian bytes as a Float32Array or Int32Array: a view without a
   copy where the bytes allow it (float32 and int32 on a little-endian machine). */
export function decodeBinary(bytes, dtype) {
  const width = DTYPE_BYTES[dtype];
  let raw = bytes;
  if (!LITTLE_ENDIAN || raw.byteOffset % width) {
    raw = raw.slice();
    if (!LITTLE_ENDIAN) for (let i = 0; i < raw.length; i += width) raw.subarray(i, i + width).reverse();
  }
  const count = raw.length / width;
  if (dtype === "int32") return new Int32Array(raw.buffer, raw.byteOffset, count);
  if (dtype === "float32") return new Float32Array(raw.buffer, raw.byteOffset, count);
  const halves = new Uint16Array(raw.buffer, raw.byteOffset, count);
  const table = halfTable();
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = table[halves[i]];
  return out;
}
