// The page's keys, and when a key belongs to something else.
import { test } from "node:test";
import assert from "node:assert/strict";

import { keyAction } from "../../../docs_build/assets/replay/play/keys.js";

/* A keydown on `target` ({tagName, type, ...}; the page's body if none). */
const press = (key, target, extra) => keyAction(Object.assign({
  key: key, target: Object.assign({ tagName: "BODY", closest: () => null }, target)
}, extra));

test("space plays or pauses, the arrows move one event", () => {
  assert.deepEqual([press(" "), press("Spacebar"), press("ArrowRight"), press("ArrowLeft")],
    ["toggle", "toggle", "next", "prev"]);
  assert.equal(press("a"), null);
  assert.equal(press("ArrowUp"), null);
});

test("a key with a modifier, or already handled, is not the replay's", () => {
  for (const modifier of ["altKey", "ctrlKey", "metaKey", "defaultPrevented"]) {
    assert.equal(press("ArrowRight", {}, { [modifier]: true }), null, modifier);
  }
});

test("typing in a field never drives the replay", () => {
  for (const target of [{ tagName: "INPUT", type: "text" }, { tagName: "INPUT", type: "search" },
    { tagName: "INPUT" }, { tagName: "TEXTAREA" }, { tagName: "SELECT" }, { tagName: "DIV", isContentEditable: true },
    { tagName: "INPUT", type: "range" }]) {
    assert.equal(press(" ", target), null, JSON.stringify(target));
    assert.equal(press("ArrowRight", target), null, JSON.stringify(target));
  }
});

test("a focused control keeps the keys it reacts to itself", () => {
  for (const target of [{ tagName: "BUTTON" }, { tagName: "A" }, { tagName: "INPUT", type: "radio" },
    { tagName: "INPUT", type: "checkbox" }, { tagName: "INPUT", type: "file" }]) {
    assert.equal(press(" ", target), null, JSON.stringify(target));
  }
  assert.equal(press("ArrowRight", { tagName: "BUTTON" }), "next"); // a button ignores arrows
  assert.equal(press("ArrowRight", { tagName: "INPUT", type: "radio" }), null); // they move between recordings
  // inside the inspector's grid the arrows move between cells
  assert.equal(press("ArrowRight", { tagName: "TD", closest: (selector) => (selector === ".gr-grid" ? {} : null) }), null);
});
