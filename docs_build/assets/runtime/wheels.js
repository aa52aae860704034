// A wheel's files read in JavaScript: the members its zip's central directory lists (PKWARE's
// APPNOTE, 4.3.12 and 4.3.7), each inflated by a function given (a first visit's worker,
// worker.js, gives Python's zlib, in the WebAssembly Pyodide has just booted: two to three
// times faster there than the browser's DecompressionStream, the default, over a wheel's
// hundreds of members). The worker installs the wheels so once Python has booted, where
// Pyodide's installer would unzip them with Python's zipfile. Pure logic, which node --test
// checks against the RECORD the wheel's builder wrote (tests/docs_build/runtime/js/
// wheels.test.mjs).

// What nothing in a page's Python reads: C headers and sources, Cython declarations, type
// stubs, static libraries, pkg-config files (NumPy's 129 of them); left out of what is
// installed, and of the packages a first visit keeps (worker.js's PACKAGES_CODE)
export const UNREAD_SUFFIXES = [".pyi", ".h", ".c", ".pxd", ".pyx", ".a", ".pc"];

const END_OF_DIRECTORY = 0x06054b50;
const DIRECTORY_ENTRY = 0x02014b50;
const LOCAL_HEADER = 0x04034b50;
const STORED = 0;
const DEFLATED = 8;
const NO_SIZE = 0xffffffff; // the sizes and offsets of a zip64 member, which a wheel never is

// [{name, method, size, data}] of each member of the zip `bytes` (a Uint8Array), in the
// directory's order, `data` its bytes as stored (a view of `bytes`). Throws on what a wheel
// is never: no end record, zip64, an encrypted member, another compression, a path that
// would leave the folder it is unpacked in.
export function zipMembers(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // the end record: 22 bytes, then a comment of up to 65,535
  const lowest = Math.max(0, bytes.length - 22 - 65535);
  let end = bytes.length - 22;
  while (end >= lowest && view.getUint32(end, true) !== END_OF_DIRECTORY) end--;
  if (end < lowest) throw new Error("not a zip file: it has no end of central directory");
  const count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  if (count === 0xffff || at === NO_SIZE) throw new Error("a zip64 file, which a wheel is not");
  const text = new TextDecoder(); // UTF-8, of which the ASCII of most names is a part
  const members = [];
  for (let index = 0; index < count; index++) {
    if (at + 46 > bytes.length || view.getUint32(at, true) !== DIRECTORY_ENTRY) {
      throw new Error(`member ${index + 1} of ${count}: no central directory entry where the zip `
        + "says");
    }
    const flags = view.getUint16(at + 8, true);
    const method = view.getUint16(at + 10, true);
    const stored = view.getUint32(at + 20, true);
    const size = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const local = view.getUint32(at + 42, true);
    const name = text.decode(bytes.subarray(at + 46, at + 46 + nameLength));
    at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    if (flags & 1) throw new Error(`${name}: encrypted`);
    if (method !== STORED && method !== DEFLATED) {
      throw new Error(`${name}: compressed by method ${method}, not stored or deflated`);
    }
    if (stored === NO_SIZE || size === NO_SIZE || local === NO_SIZE) {
      throw new Error(`${name}: a zip64 member, which a wheel is not`);
    }
    if (name.startsWith("/") || name.includes("\\") || name.split("/").includes("..")) {
      throw new Error(`${name}: a path outside the folder it would be unpacked in`);
    }
    if (local + 30 > bytes.length || view.getUint32(local, true) !== LOCAL_HEADER) {
      throw new Error(`${name}: no local header where the directory says`);
    }
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    if (start + stored > bytes.length) throw new Error(`${name}: its data runs past the zip's end`);
    members.push({ name, method, size, data: bytes.subarray(start, start + stored) });
  }
  return members;
}

// The files a wheel installs, [[path, Uint8Array]] in its zip's order: every member but the
// folders and UNREAD_SUFFIXES, a deflated one given to `inflate` (raw deflate data in, its
// bytes out, or a promise of them); throws if one does not inflate to its listed size
export async function wheelFiles(bytes, inflate = inflateStream) {
  const files = zipMembers(bytes).filter(({ name }) => !name.endsWith("/")
    && !UNREAD_SUFFIXES.some((suffix) => name.endsWith(suffix)));
  return Promise.all(files.map(async ({ name, method, size, data }) => {
    const content = method === STORED ? data.slice() : await inflate(data);
    if (content.length !== size) {
      throw new Error(`${name}: ${content.length} bytes once inflated, where the zip lists `
        + `${size}`);
    }
    return [name, content];
  }));
}

// raw deflate data inflated by the browser's (or Node's) own DecompressionStream
export async function inflateStream(data) {
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
