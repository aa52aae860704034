/* glassllm replay: where a recording's bytes come from. A source has `size`,
 * `read(start, end)` (a Promise of a Uint8Array), optionally `at(start, end)` (those bytes
 * now if they are here, else null) and, when the whole file is at hand, `bytes`:
 * - `bytesSource`: the whole file's bytes;
 * - `blobSource`: a File (File.slice reads just the range from disk);
 * - `urlSource`: a URL, by HTTP Range requests when the server honours them, else one fetch
 *   of the whole file, read as it arrives (`streamSource`).
 */

import { PROBE_BYTES } from "./constants.js";

/* A Uint8Array of an ArrayBuffer or typed array, without a copy. */
export function asBytes(input) {
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  throw new TypeError("glassllm replay: a recording is read from an ArrayBuffer, a typed array or text");
}

export function bytesSource(input) {
  const bytes = asBytes(input);
  return {
    size: bytes.length, bytes: bytes,
    at: (start, end) => bytes.subarray(start, end),
    read: (start, end) => Promise.resolve(bytes.subarray(start, end))
  };
}

/* A response body of `size` bytes, as it arrives: a range can be read as soon as its bytes
   are in, so the first event shows while the rest of a large file is still coming. */
export function streamSource(body, size) {
  const bytes = new Uint8Array(size);
  let received = 0;
  let failure = null;
  let finished = false;
  let waiting = [];
  const wake = () => { waiting = waiting.filter((check) => !check()); };
  const source = {
    size: size, bytes: null,
    at: (start, end) => (received >= end ? bytes.subarray(start, end) : null),
    read: (start, end) => new Promise((resolve, reject) => {
      const check = () => {
        if (received >= end) resolve(bytes.subarray(start, end));
        else if (failure) reject(failure);
        else return false;
        return true;
      };
      if (!check()) waiting.push(check);
    })
  };
  (async () => {
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (received + value.length > size) throw new Error("the server sent more than its Content-Length");
      bytes.set(value, received);
      received += value.length;
      wake();
    }
    if (received !== size) throw new Error("the download stopped after " + received + " of " + size + " bytes");
    finished = true;
    source.bytes = bytes; // complete: every range is at hand
  })().catch((err) => {
    failure = err instanceof Error ? err : new Error(String(err));
  }).then(() => {
    if (!finished && !failure) failure = new Error("the download stopped");
    wake();
  });
  return source;
}

export function blobSource(blob) {
  return {
    size: blob.size, bytes: null,
    read: async (start, end) => new Uint8Array(await blob.slice(start, end).arrayBuffer())
  };
}

/* "bytes 0-99/1234" -> 1234; null when the total is unknown ("*") or the header is odd. */
export function rangeTotal(header) {
  const match = /^bytes\s+\d+-\d+\/(\d+)\s*$/.exec(String(header || ""));
  return match ? Number(match[1]) : null;
}

/* A recording on the web. The first request asks for the first PROBE_BYTES: a server that
   honours Range answers 206 and every event is then fetched as its own range; one that
   ignores it (python -m http.server does) sends the whole file with 200, which is then
   the source, read as it arrives. `fetchFn` is the page's fetch (a test passes its own). */
export async function urlSource(url, fetchFn) {
  const get = fetchFn || fetch;
  const options = (range) => ({ credentials: "same-origin", headers: range ? { Range: range } : {} });
  const failed = (r) => new Error(r.status + " " + r.statusText);
  const first = await get(url, options("bytes=0-" + (PROBE_BYTES - 1)));
  if (first.status === 206) {
    const total = rangeTotal(first.headers.get("Content-Range"));
    const probe = new Uint8Array(await first.arrayBuffer());
    if (total !== null && probe.length === Math.min(total, PROBE_BYTES)) {
      return {
        size: total, bytes: null,
        read: async (start, end) => {
          if (end <= probe.length) return probe.subarray(start, end);
          const r = await get(url, options("bytes=" + start + "-" + (end - 1)));
          if (r.status !== 206) throw failed(r);
          const got = new Uint8Array(await r.arrayBuffer());
          if (got.length !== end - start) throw new Error("the server sent " + got.length + " bytes for a range of " + (end - start));
          return got;
        }
      };
    }
    const whole = await get(url, options(null)); // a range answer the reader cannot use
    if (!whole.ok) throw failed(whole);
    return bytesSource(await whole.arrayBuffer());
  }
  if (!first.ok) throw failed(first);
  // the whole file: read as it arrives when its length is known (an encoded body's length
  // is not the file's)
  const length = Number(first.headers.get("Content-Length"));
  if (first.body && Number.isSafeInteger(length) && length > 0 && !first.headers.get("Content-Encoding")) {
    return streamSource(first.body, length);
  }
  return bytesSource(await first.arrayBuffer());
}
