// Where a recording's bytes come from: a URL with or without Range, read as it arrives.
import { test } from "node:test";
import assert from "node:assert/strict";

import * as format from "../../../docs_build/assets/replay/format/index.js";
import { bytes } from "./fixtures.mjs";
import { TABLE } from "./step-table.mjs";

const whole = (b) => format.readRecording(b, TABLE);

/* A server in a function: answers Range requests with 206 (or ignores them, as
   python -m http.server does), and counts what it sent. */
function server(file, honoursRange) {
  const log = [];
  const fetchFn = async (url, options) => {
    const range = options && options.headers && options.headers.Range;
    const match = range && /^bytes=(\d+)-(\d+)$/.exec(range);
    if (honoursRange && match) {
      const start = Number(match[1]);
      const end = Math.min(Number(match[2]) + 1, file.length);
      log.push(end - start);
      return new Response(file.slice(start, end), {
        status: 206, headers: { "Content-Range": "bytes " + start + "-" + (end - 1) + "/" + file.length }
      });
    }
    log.push(file.length);
    return new Response(file.slice(), { status: 200 });
  };
  return { fetchFn: fetchFn, log: log };
}

/* A recording larger than PROBE_BYTES, so that ranges matter: the fixture's events with
   room between them (gaps are allowed). */
function spacedFile() {
  const source = bytes("good", "bin-generation.glrec");
  const view = new DataView(source.buffer, source.byteOffset);
  const length = view.getUint32(12, true);
  const index = JSON.parse(new TextDecoder().decode(source.subarray(16, 16 + length)));
  const start = 16 + length + ((8 - ((16 + length) % 8)) % 8);
  const gap = 64 * 1024;
  const chunks = index.events.map((e, i) => {
    const raw = source.subarray(start + e.offset, start + e.offset + e.length);
    e.offset += gap * i;
    return [e.offset, raw];
  });
  const text = new TextEncoder().encode(JSON.stringify(index));
  const dataStart = 16 + text.length + ((8 - ((16 + text.length) % 8)) % 8);
  const last = chunks[chunks.length - 1];
  const file = new Uint8Array(dataStart + last[0] + last[1].length);
  file.set(source.subarray(0, 12));
  new DataView(file.buffer).setUint32(12, text.length, true);
  file.set(text, 16);
  for (const [offset, raw] of chunks) file.set(raw, dataStart + offset);
  return file;
}

test("a URL: with Range, the index first and each event's bytes when it is shown", async () => {
  const file = spacedFile();
  assert.ok(file.length > 2 * format.PROBE_BYTES);
  const all = whole(file);
  const { fetchFn, log } = server(file, true);
  const rec = await format.openRecording(await format.urlSource("run.glrec", fetchFn), TABLE);
  assert.deepEqual(log, [format.PROBE_BYTES]);
  const e = rec.events[rec.events.length - 1];
  await format.loadEvent(rec, e);
  assert.deepEqual(log, [format.PROBE_BYTES, e.length]);
  assert.deepEqual(Array.from(e.values), Array.from(all.events[rec.events.length - 1].values));
  await format.loadEvent(rec, e); // kept: no second request
  assert.equal(log.length, 2);
});

test("a URL on a server without Range: one fetch of the whole file, decoded lazily", async () => {
  const file = spacedFile();
  const { fetchFn, log } = server(file, false);
  const rec = await format.openRecording(await format.urlSource("run.glrec", fetchFn), TABLE);
  assert.deepEqual(log, [file.length]);
  assert.ok(rec.events.every((e) => format.eventReady(rec, e)));
  assert.equal(rec.events[3].values.length, rec.events[3].shape.reduce((a, b) => a * b, 1));
  // a version 1 file from the same kind of server
  const json = bytes("good", "generation.json");
  const old = await format.openRecording(await format.urlSource("run.json", server(json, false).fetchFn), TABLE);
  assert.equal(old.events.length, whole(json).events.length);
  const ranged = await format.openRecording(await format.urlSource("run.json", server(json, true).fetchFn), TABLE);
  assert.equal(ranged.events.length, old.events.length);
});

test("the Content-Range total, or null", () => {
  assert.equal(format.rangeTotal("bytes 0-99/1234"), 1234);
  assert.equal(format.rangeTotal("bytes 0-99/*"), null);
  assert.equal(format.rangeTotal(null), null);
});

/* A body that hands out `file` in chunks, each only when `next()` is called. */
function dripping(file, chunk, cut) {
  let sent = 0;
  let pull = null;
  const stream = new ReadableStream({
    pull(controller) {
      return new Promise((resolve) => {
        pull = () => {
          const end = Math.min(sent + chunk, cut === undefined ? file.length : cut);
          if (end > sent) controller.enqueue(file.slice(sent, end));
          sent = end;
          if (sent >= (cut === undefined ? file.length : cut)) controller.close();
          resolve();
        };
      });
    }
  });
  const next = async () => { while (!pull) await new Promise((r) => setTimeout(r, 1)); const p = pull; pull = null; p(); await new Promise((r) => setTimeout(r, 1)); };
  return { stream: stream, next: next };
}

test("a whole-file download is read as it arrives: the first event before the last bytes", async () => {
  const file = spacedFile();
  const all = whole(file);
  const body = dripping(file, 128 * 1024);
  const fetchFn = async () => new Response(body.stream, { status: 200, headers: { "Content-Length": String(file.length) } });
  const opening = format.urlSource("run.glrec", fetchFn).then((source) => format.openRecording(source, TABLE));
  await body.next(); // 128 KB: the header and the index
  await body.next();
  const rec = await opening;
  const first = rec.events[0];
  const last = rec.events[rec.events.length - 1];
  assert.ok(format.eventReady(rec, first) && !format.eventReady(rec, last));
  assert.deepEqual(Array.from(first.values), Array.from(all.events[0].values));
  const later = format.loadEvent(rec, last);
  while (!format.eventReady(rec, last)) await body.next();
  await later;
  assert.deepEqual(Array.from(last.values), Array.from(all.events[rec.events.length - 1].values));
});

test("a download that stops early fails the events it did not bring", async () => {
  const file = spacedFile();
  const body = dripping(file, 256 * 1024, 512 * 1024);
  const fetchFn = async () => new Response(body.stream, { status: 200, headers: { "Content-Length": String(file.length) } });
  const opening = format.urlSource("run.glrec", fetchFn).then((source) => format.openRecording(source, TABLE));
  await body.next();
  const rec = await opening;
  const last = rec.events[rec.events.length - 1];
  const refused = assert.rejects(format.loadEvent(rec, last), /stopped after 524288 of/);
  await body.next();
  await refused;
});
