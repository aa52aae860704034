/* glassllm replay: the events of a version 2 recording, whose values are read from the
 * source and decoded only when the page shows them.
 */

import { decodeBinary } from "./decode.js";
import { RecordingError } from "./error.js";

// decoded values kept per recording (a float16 logits slice takes ms to decode)
const DECODED_KEPT = 16;
// byte ranges kept per recording when they are fetched one by one
const FETCHED_KEPT = 64;

function keep(map, key, value, limit) {
  map.delete(key);
  map.set(key, value);
  if (map.size > limit) map.delete(map.keys().next().value);
}

/* The bytes and decoded values of a recording's events, read on demand from `source`. */
export class EventStore {
  constructor(source) {
    this.source = source;
    this.fetched = new Map();
    this.decoded = new Map();
  }

  here(e) {
    return this.source.at ? this.source.at(e.start, e.start + e.length) : null;
  }

  ready(e) {
    return this.decoded.has(e.index) || this.fetched.has(e.index) || this.here(e) !== null;
  }

  async load(e) {
    if (this.ready(e)) return;
    const bytes = await this.source.read(e.start, e.start + e.length);
    if (bytes.length !== e.length) throw new RecordingError("reasonBytes", { where: "events[" + e.index + "]" }, "events[" + e.index + "]");
    keep(this.fetched, e.index, bytes, FETCHED_KEPT);
  }

  values(e) {
    const cached = this.decoded.get(e.index);
    if (cached) return cached;
    const here = this.here(e);
    const bytes = here || this.fetched.get(e.index);
    if (!bytes) throw new Error("glassllm replay: the values of event " + e.index + " are not loaded yet (loadEvent)");
    const values = decodeBinary(bytes, e.dtype);
    // float32 views of bytes at hand cost nothing to make again
    if (e.dtype === "float16" || !here) keep(this.decoded, e.index, values, DECODED_KEPT);
    return values;
  }
}

/* An event of a version 2 recording: its values are decoded when first read. */
export class BinaryEvent {
  constructor(place, dtype, start, length, store) {
    Object.assign(this, place);
    this.dtype = dtype;
    this.start = start; // in the file
    this.length = length;
    Object.defineProperty(this, "store", { value: store });
  }

  get values() {
    return this.store.values(this);
  }
}
