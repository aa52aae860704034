// The map of the model beside the player: which box is current, what a click does.
import { test } from "node:test";
import assert from "node:assert/strict";

import { ModelMap } from "../../../docs_build/assets/replay/ui/map.js";
import { read } from "./fixtures.mjs";

const rec = read("generation.json");

/* A stand-in for the figure the build draws: boxes with data-step, attributes, classes. */
function fakeFigure(ids) {
  const boxes = ids.map((id) => {
    const attrs = { "data-step": id };
    const classes = new Set();
    return {
      getAttribute: (name) => (name in attrs ? attrs[name] : null),
      setAttribute: (name, value) => { attrs[name] = String(value); },
      removeAttribute: (name) => { delete attrs[name]; },
      classList: { toggle: (name, on) => (on ? classes.add(name) : classes.delete(name)), contains: (n) => classes.has(n) },
      closest: function () { return this; }
    };
  });
  const listeners = {};
  return {
    boxes,
    querySelectorAll: () => boxes,
    addEventListener: (type, fn) => { listeners[type] = fn; },
    click: (box, extra) => {
      let prevented = false;
      listeners.click(Object.assign({ target: box, button: 0, preventDefault: () => { prevented = true; } }, extra));
      return prevented;
    }
  };
}

test("show marks exactly the current step's box and dims the steps the recording lacks", () => {
  const figure = fakeFigure(["embed", "attn.q", "loss"]);
  const map = new ModelMap(figure, () => true);
  map.show("attn.q", rec.stepIds);
  assert.deepEqual(figure.boxes.map((b) => b.getAttribute("aria-current")), [null, "step", null]);
  map.show("embed", rec.stepIds);
  assert.deepEqual(figure.boxes.map((b) => b.getAttribute("aria-current")), ["step", null, null]);
  assert.deepEqual(figure.boxes.map((b) => b.classList.contains("gl-map-step--absent")), [false, false, true]);
});

test("a plain click picks the step and stays on the page; a modified or refused one follows the link", () => {
  const figure = fakeFigure(["embed", "loss"]);
  const picked = [];
  new ModelMap(figure, (id) => { picked.push(id); return id !== "loss"; });
  assert.equal(figure.click(figure.boxes[0]), true);
  assert.equal(figure.click(figure.boxes[0], { ctrlKey: true }), false);
  assert.equal(figure.click(figure.boxes[0], { button: 1 }), false);
  assert.equal(figure.click(figure.boxes[1]), false); // the recording has no such event
  assert.deepEqual(picked, ["embed", "loss"]);
});

test("a page without a map has none", () => {
  assert.equal(ModelMap.find({ querySelector: () => null }, () => true), null);
});
