// The replay page's reader on the shared recording files: it must accept exactly what
// glassllm.recording.loads accepts (tests/replay/test_fixtures.py holds Python to the same
// files and runs these tests).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";

import * as format from "../../../docs_build/assets/replay-format.js";

const FIXTURES = new URL("../../fixtures/recordings/", import.meta.url);
const files = (folder) => readdirSync(new URL(folder + "/", FIXTURES)).filter((n) => /\.(json|glrec)$/.test(n)).sort();
const bytes = (folder, name) => readFileSync(new URL(folder + "/" + name, FIXTURES));
const expected = JSON.parse(readFileSync(new URL("expected.json", FIXTURES), "utf8"));
const tables = JSON.parse(readFileSync(new URL("format.json", FIXTURES), "utf8"));

test("the fixture set is the one Python is tested on", () => {
  assert.deepEqual(files("bad"), Object.keys(expected).sort());
  assert.ok(files("good").length >= 5 && files("bad").length >= 40);
  assert.ok(files("good").filter((n) => n.endsWith(".glrec")).length >= 5);
});

for (const name of files("good")) {
  test("accepts good/" + name, () => {
    const rec = format.readRecording(bytes("good", name));
    const passes = rec.kind === "generation" ? rec.generated.length : 1;
    assert.equal(rec.events.length, format.eventsPerPass(rec.config) * passes);
    for (const e of rec.events) {
      assert.equal(e.values.length, e.shape.reduce((a, b) => a * b, 1));
    }
  });
}

const refusal = (name) => (err) => {
  assert.ok(err instanceof format.RecordingError, "not a RecordingError: " + err);
  if (expected[name] !== null) {
    assert.ok(err.where.includes(expected[name]), `where "${err.where}" lacks "${expected[name]}"`);
  }
  return true;
};

for (const name of files("bad")) {
  test("refuses bad/" + name + " naming the place", async () => {
    assert.throws(() => format.readRecording(bytes("bad", name)), refusal(name));
    // as the page opens a file: from its header and index (a File is read range by range)
    await assert.rejects(format.openRecording(format.blobSource(new Blob([bytes("bad", name)]))), refusal(name));
  });
}

for (const name of files("good").filter((n) => n.endsWith(".glrec"))) {
  test("opens good/" + name + " from a File, reading only the ranges it shows", async () => {
    const whole = format.readRecording(bytes("good", name));
    const blob = new Blob([bytes("good", name)]);
    const reads = [];
    const source = format.blobSource(blob);
    const read = source.read;
    source.read = (start, end) => { reads.push([start, end]); return read(start, end); };
    const rec = await format.openRecording(source);
    assert.equal(reads.length, 1); // the header and the index
    const e = rec.events[5];
    assert.equal(format.eventReady(rec, e), false);
    assert.throws(() => e.values, /not loaded/);
    await format.loadEvent(rec, e);
    assert.deepEqual(reads[1], [e.start, e.start + e.length]);
    assert.deepEqual(Array.from(e.values), Array.from(whole.events[5].values));
    for (const x of rec.events) await format.loadEvent(rec, x);
    rec.events.forEach((x, i) => assert.deepEqual(Array.from(x.values), Array.from(whole.events[i].values)));
  });
}

test("the page's format tables equal Python's", () => {
  assert.equal(format.FORMAT, tables.format);
  assert.equal(format.VERSION, tables.version);
  assert.equal(format.JSON_VERSION, tables.json_version);
  assert.deepEqual(format.MAGIC, tables.magic);
  assert.equal(format.HEADER_BYTES, tables.header_bytes);
  assert.equal(format.ALIGN, tables.align);
  assert.deepEqual(format.DTYPE_BYTES, tables.dtype_bytes);
  assert.deepEqual(format.FLOAT_DTYPES, tables.float_dtypes);
  assert.deepEqual(format.AXES, tables.axes);
  assert.deepEqual(Object.keys(format.AXES), Object.keys(tables.axes)); // STEPS order
  assert.deepEqual(format.LAYER_STEPS, tables.layer_steps);
  assert.deepEqual(format.HEAD_STEPS, tables.head_steps);
  for (const kind of Object.keys(tables.kind_steps)) {
    assert.deepEqual([...format.KIND_STEPS[kind]].sort(), tables.kind_steps[kind]);
  }
  assert.deepEqual(Object.keys(format.KIND_STEPS).sort(), Object.keys(tables.kind_steps).sort());
  assert.deepEqual(format.CONFIG_FIELDS, tables.config_fields);
  assert.equal(format.MAX_SIZE, tables.max_size);
  assert.equal(format.MAX_AXES, tables.max_axes);
  assert.equal(format.MAX_DEPTH, tables.max_depth);
  assert.equal(format.MAX_NUMBER_CHARS, tables.max_number_chars);
});

test("values arrive exactly: -inf above the diagonal of the mask, the sampled token", () => {
  const rec = format.readRecording(bytes("good", "generation.json"));
  const mask = rec.events.find((e) => e.step === "attn.mask" && e.gen === 1);
  const [heads, n] = mask.shape;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const v = mask.values[(h * n + i) * n + j];
        assert.equal(j > i ? v === -Infinity : Number.isFinite(v), true);
      }
    }
  }
  const samples = rec.events.filter((e) => e.step === "sample").map((e) => e.values[0]);
  assert.deepEqual(samples, rec.generated);
  assert.ok(rec.events.find((e) => e.step === "embed").values instanceof Float32Array);
});

test("a head recorded on its own keeps its head index and loses the axis", () => {
  const rec = format.readRecording(bytes("good", "event-with-head.json"));
  const e = rec.events.find((x) => x.head !== null);
  assert.equal(e.head, 1);
  assert.deepEqual(e.shape, [2, 2]);
});

test("numbers written as floats are not integers, the last duplicate key counts", () => {
  assert.deepEqual([...format.scanText('{"a": [1, 2.0], "b": {"c": 1e3, "d": 1.5}}')],
    [JSON.stringify(["a", 1]), JSON.stringify(["b", "c"])]);
  assert.deepEqual([...format.scanText('{"a": 1.0, "a": 1}')], []);
  assert.deepEqual([...format.scanText('{"k\\"ey": 2.0}')], [JSON.stringify(['k"ey'])]);
});

test("deep nesting is refused quickly, naming the place", () => {
  const text = '{"events": [{}, {"shape": ' + "[".repeat(1_000_000) + "]".repeat(1_000_000) + "}]}";
  const start = Date.now();
  assert.throws(() => format.scanText(text), (err) => err.reason === "reasonDepth" && err.where === "events[1].shape…");
  assert.ok(Date.now() - start < 5000);
});

test("the file's steps table is used only where it is well-formed", () => {
  const rec = format.readRecording(bytes("good", "extra-fields-and-odd-steps-table.json"));
  assert.deepEqual(format.fileStepInfo(rec, "embed"), { latex: "", plain: "", source: null });
  const full = format.readRecording(bytes("good", "generation.json"));
  const info = format.fileStepInfo(full, "attn.softmax");
  assert.ok(info.latex.length > 0 && info.source.file === "glassllm/nn.py");
  assert.deepEqual(format.fileStepInfo(full, "constructor"), { latex: "", plain: "", source: null });
});

test("text input: a BOM in a string is not skipped, as Python's json does not skip it", () => {
  const text = readFileSync(new URL("good/generation.json", FIXTURES), "utf8");
  assert.equal(format.readRecording(text).kind, "generation");
  assert.throws(() => format.readRecording("\ufeff" + text), (err) => err.reason === "reasonJson");
});

test("a binary recording holds exactly the JSON one's values; float16 within its precision", () => {
  const json = format.readRecording(bytes("good", "generation.json"));
  const f32 = format.readRecording(bytes("good", "bin-generation.glrec"));
  const f16 = format.readRecording(bytes("good", "bin-generation-float16.glrec"));
  assert.equal(f32.events.length, json.events.length);
  json.events.forEach((e, i) => {
    assert.deepEqual(Array.from(f32.events[i].values), Array.from(e.values));
    assert.equal(f32.events[i].dtype, e.dtype);
    const half = f16.events[i].values;
    assert.ok(half instanceof (e.dtype === "int32" ? Int32Array : Float32Array));
    e.values.forEach((v, k) => {
      if (!Number.isFinite(v)) assert.ok(Object.is(half[k], v), `${i}/${k}: ${half[k]} for ${v}`);
      else assert.ok(Math.abs(half[k] - v) <= Math.abs(v) * 2 ** -11 + 2 ** -25, `${i}/${k}: ${half[k]} for ${v}`);
    });
  });
  const mask = f16.events.find((e) => e.step === "attn.mask" && e.gen === 1);
  assert.equal(mask.dtype, "float16");
  assert.ok(Array.from(mask.values).some((v) => v === -Infinity));
});

test("float16 decoding: every special pattern", () => {
  const halves = new Uint16Array([0x0000, 0x8000, 0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x7c00, 0xfc00, 0x7e00]);
  const got = Array.from(format.decodeBinary(new Uint8Array(halves.buffer), "float16"));
  assert.deepEqual(got, [0, -0, 1, -2, 65504, 2 ** -24, 1023 * 2 ** -24, Infinity, -Infinity, NaN]);
  assert.ok(Object.is(got[1], -0));
  // bytes that sit at an odd offset are copied, not misread
  const odd = new Uint8Array(9);
  odd.set(new Uint8Array(new Float32Array([1.5, -3]).buffer), 1);
  assert.deepEqual(Array.from(format.decodeBinary(odd.subarray(1), "float32")), [1.5, -3]);
});

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
  const whole = format.readRecording(file);
  const { fetchFn, log } = server(file, true);
  const rec = await format.openRecording(await format.urlSource("run.glrec", fetchFn));
  assert.deepEqual(log, [format.PROBE_BYTES]);
  const e = rec.events[rec.events.length - 1];
  await format.loadEvent(rec, e);
  assert.deepEqual(log, [format.PROBE_BYTES, e.length]);
  assert.deepEqual(Array.from(e.values), Array.from(whole.events[rec.events.length - 1].values));
  await format.loadEvent(rec, e); // kept: no second request
  assert.equal(log.length, 2);
});

test("a URL on a server without Range: one fetch of the whole file, decoded lazily", async () => {
  const file = spacedFile();
  const { fetchFn, log } = server(file, false);
  const rec = await format.openRecording(await format.urlSource("run.glrec", fetchFn));
  assert.deepEqual(log, [file.length]);
  assert.ok(rec.events.every((e) => format.eventReady(rec, e)));
  assert.equal(rec.events[3].values.length, rec.events[3].shape.reduce((a, b) => a * b, 1));
  // a version 1 file from the same kind of server
  const json = bytes("good", "generation.json");
  const old = await format.openRecording(await format.urlSource("run.json", server(json, false).fetchFn));
  assert.equal(old.events.length, whole(json).events.length);
  const ranged = await format.openRecording(await format.urlSource("run.json", server(json, true).fetchFn));
  assert.equal(ranged.events.length, old.events.length);
});

const whole = (b) => format.readRecording(b);

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
  const whole = format.readRecording(file);
  const body = dripping(file, 128 * 1024);
  const fetchFn = async () => new Response(body.stream, { status: 200, headers: { "Content-Length": String(file.length) } });
  const opening = format.urlSource("run.glrec", fetchFn).then((source) => format.openRecording(source));
  await body.next(); // 128 KB: the header and the index
  await body.next();
  const rec = await opening;
  const first = rec.events[0];
  const last = rec.events[rec.events.length - 1];
  assert.ok(format.eventReady(rec, first) && !format.eventReady(rec, last));
  assert.deepEqual(Array.from(first.values), Array.from(whole.events[0].values));
  const later = format.loadEvent(rec, last);
  while (!format.eventReady(rec, last)) await body.next();
  await later;
  assert.deepEqual(Array.from(last.values), Array.from(whole.events[rec.events.length - 1].values));
});

test("a download that stops early fails the events it did not bring", async () => {
  const file = spacedFile();
  const body = dripping(file, 256 * 1024, 512 * 1024);
  const fetchFn = async () => new Response(body.stream, { status: 200, headers: { "Content-Length": String(file.length) } });
  const opening = format.urlSource("run.glrec", fetchFn).then((source) => format.openRecording(source));
  await body.next();
  const rec = await opening;
  const last = rec.events[rec.events.length - 1];
  const refused = assert.rejects(format.loadEvent(rec, last), /stopped after 524288 of/);
  await body.next();
  await refused;
});
