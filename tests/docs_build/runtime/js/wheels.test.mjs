// node --test of wheels.js, which reads a wheel in JavaScript for the runtime's first visit:
// on NumPy's wheel (the one the site ships), every file it gives is the one the wheel's RECORD
// (written by the wheel's builder) lists, with RECORD's sha256 and size; what a wheel never
// is gets a clear refusal.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { inflateRawSync } from "node:zlib";

import { UNREAD_SUFFIXES, inflateStream, wheelFiles, zipMembers }
  from "../../../../docs_build/assets/runtime/wheels.js";

const WHEEL = new URL("../../../../third_party/pyodide/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl",
  import.meta.url);
const wheel = () => new Uint8Array(readFileSync(WHEEL));

// RECORD's rows, {path: [sha256 as urlsafe base64 without padding, or "", size]}
function record(files) {
  const text = new TextDecoder().decode(files.get("numpy-2.0.2.dist-info/RECORD"));
  const rows = new Map();
  for (const line of text.split("\n").filter(Boolean)) {
    const [path, hash, size] = line.split(",");
    rows.set(path, [hash.replace(/^sha256=/, ""), size]);
  }
  return rows;
}

test("the files of NumPy's wheel are the ones its RECORD lists, bit for bit, but the unread", async () => {
  const files = new Map(await wheelFiles(wheel()));
  const rows = record(files);
  const installed = [...rows.keys()].filter((path) => !UNREAD_SUFFIXES.some((suffix) => path.endsWith(suffix)));
  assert.equal(rows.size, 338);
  assert.equal(installed.length, 338 - 129); // headers, sources, Cython declarations, stubs
  assert.deepEqual([...files.keys()].sort(), installed.sort());
  for (const path of installed) {
    const [hash, size] = rows.get(path);
    if (!hash) continue; // RECORD itself
    const content = files.get(path);
    assert.equal(String(content.length), size, path);
    assert.equal(createHash("sha256").update(content).digest("base64url"), hash, path);
  }
});

test("an inflate given (the worker gives Python's zlib) reads the same files", async () => {
  const given = [];
  const files = await wheelFiles(wheel(), (data) => {
    given.push(data.length);
    return new Uint8Array(inflateRawSync(data));
  });
  const streamed = await wheelFiles(wheel(), inflateStream);
  assert.equal(given.length, files.length); // every file of NumPy's wheel is deflated
  assert.deepEqual(files.map(([path]) => path), streamed.map(([path]) => path));
  for (const [index, [path, content]] of files.entries()) {
    assert.deepEqual(content, streamed[index][1], path);
  }
});

// a copy of the wheel with the first member's central directory entry changed by `edit`
function edited(edit) {
  const bytes = wheel();
  const view = new DataView(bytes.buffer);
  let end = bytes.length - 22;
  while (view.getUint32(end, true) !== 0x06054b50) end--;
  edit(bytes, view, view.getUint32(end + 16, true), end);
  return bytes;
}

test("what a wheel never is gets a refusal that names it", () => {
  const cases = [
    [(bytes, view, entry) => view.setUint16(entry + 8, 1, true), /encrypted/],
    [(bytes, view, entry) => view.setUint16(entry + 10, 12, true), /method 12, not stored or deflated/],
    [(bytes, view, entry) => view.setUint32(entry + 20, 0xffffffff, true), /zip64 member/],
    [(bytes, view, entry) => bytes.set(new TextEncoder().encode("../"), entry + 46), /outside the folder/],
    [(bytes, view, entry) => view.setUint32(entry + 42, bytes.length - 10, true), /no local header/],
    [(bytes, view, entry, end) => view.setUint32(end + 16, end - 10, true), /no central directory entry/],
  ];
  for (const [edit, refusal] of cases) assert.throws(() => zipMembers(edited(edit)), refusal);
  assert.throws(() => zipMembers(wheel().subarray(0, 1000)), /not a zip file/);
});

test("a member that does not inflate to its listed size is refused", async () => {
  const members = zipMembers(wheel());
  const first = members.find(({ method, size }) => method === 8 && size > 0);
  // the listed size, one more than the member holds
  const bytes = edited((bytes, view, entry) => {
    let at = entry;
    const name = (at) => new TextDecoder().decode(bytes.subarray(at + 46, at + 46 + view.getUint16(at + 28, true)));
    while (name(at) !== first.name) {
      at += 46 + view.getUint16(at + 28, true) + view.getUint16(at + 30, true)
        + view.getUint16(at + 32, true);
    }
    view.setUint32(at + 24, first.size + 1, true);
  });
  await assert.rejects(wheelFiles(bytes),
    new RegExp(`${first.size} bytes once inflated, where the zip lists ${first.size + 1}`));
});
