// The player's modules as layers, one direction of imports: format/ reads files and imports
// nothing else; the root's small modules (steps, tokens, strings, site) build on it;
// play/ and inspect/ decide, knowing no page; ui/ draws; app.js wires; boot.js starts it;
// replay.js, on every page, loads boot.js where there is a player. Every module is shipped
// (its imports are files of the folder), and every module that knows no page has a test here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const PLAYER = fileURLToPath(new URL("../../../docs_build/assets/replay/", import.meta.url));
const TESTS = fileURLToPath(new URL("./", import.meta.url));

function walk(folder) {
  return readdirSync(folder, { withFileTypes: true }).flatMap((item) =>
    item.isDirectory() ? walk(join(folder, item.name)) : [join(folder, item.name)]);
}

const modules = walk(PLAYER).filter((p) => p.endsWith(".js")).map((p) => relative(PLAYER, p).split("\\").join("/")).sort();
const source = (name) => readFileSync(join(PLAYER, name), "utf8");
const code = (text) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
const specifiers = (text) => [...code(text).matchAll(/\bfrom\s+"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1] || m[2]);
const importsOf = (name) => specifiers(source(name)).map((spec) => relative(PLAYER, resolve(dirname(join(PLAYER, name)), spec)).split("\\").join("/"));

const ROOT_GROUPS = { "app.js": "app", "boot.js": "boot", "replay.js": "entry" };
const groupOf = (name) => (name.includes("/") ? name.split("/")[0] : ROOT_GROUPS[name] || "base");
const ALLOWED = {
  format: ["format"],
  base: ["format", "base"],
  play: ["play", "base"],
  inspect: ["inspect", "base"],
  ui: ["ui", "inspect", "format", "base"],
  app: ["ui", "play", "inspect", "format", "base"],
  boot: ["app", "format", "base"],
  entry: [] // replay.js imports the player by the list it names (below)
};
const PAGE_FREE = ["format", "base", "play", "inspect"];

test("the folder holds the layers and nothing else", () => {
  assert.deepEqual([...new Set(modules.map(groupOf))].sort(), Object.keys(ALLOWED).sort());
  assert.ok(modules.length >= 30);
});

for (const name of modules) {
  test(name + " imports only files of the player, in its own layer or below", () => {
    for (const target of importsOf(name)) {
      assert.ok(existsSync(join(PLAYER, target)), name + " imports " + target + ", which is not shipped");
      assert.ok(ALLOWED[groupOf(name)].includes(groupOf(target)), name + " (" + groupOf(name) + ") imports " + target);
    }
  });
}

test("replay.js, on every page, requests the whole player at once, boot.js first", () => {
  const list = /const PLAYER = \[([^\]]*)\]/.exec(source("replay.js"));
  assert.ok(list, "replay.js names the player's modules in PLAYER");
  const named = [...list[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]);
  assert.equal(named[0], "boot.js");
  assert.deepEqual([...named].sort(), modules.filter((n) => n !== "replay.js"));
  assert.match(source("replay.js"), /PLAYER\.map\(\(name\) => import\("\.\/" \+ name\)\)/);
});

test("the modules that decide know no page", () => {
  for (const name of modules.filter((n) => PAGE_FREE.includes(groupOf(n)))) {
    const uses = code(source(name)).match(/\b(document|window|location|requestAnimationFrame|CSS)\b/);
    assert.equal(uses, null, name + " uses " + (uses && uses[0]));
  }
});

test("every module that knows no page has a node test of its own", () => {
  const tested = new Set(walk(TESTS).filter((p) => p.endsWith(".test.mjs"))
    .flatMap((p) => specifiers(readFileSync(p, "utf8")).map((spec) => resolve(TESTS, spec)))
    .map((p) => relative(PLAYER, p).split("\\").join("/")));
  // format/index.js re-exports the reader: a test of it covers the modules it names
  const covered = new Set(tested);
  if (tested.has("format/index.js")) for (const target of importsOf("format/index.js")) covered.add(target);
  const missing = modules.filter((n) => PAGE_FREE.includes(groupOf(n)) && !covered.has(n));
  assert.deepEqual(missing, []);
});

test("no single-letter module aliases, in the player or its tests", () => {
  for (const path of [...walk(PLAYER), ...walk(TESTS)].filter((p) => /\.m?js$/.test(p))) {
    assert.equal(/import\s+\*\s+as\s+\w\b/.test(readFileSync(path, "utf8")), false, path);
  }
});
