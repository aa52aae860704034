// The map of the model beside the player: which box is current, what a click does.
import { test } from "node:test";
import assert from "node:assert/strict";

import { ModelMap } from "../../../docs_build/assets/replay/ui/map.js";
import { read } from "./fixtures.mjs";

const rec = read("generation.json");

/* A stand-in for an element: attributes, classes, children found by selector. */
function fakeNode(attrs, children) {
  const classes = new Set();
  return {
    attrs: attrs,
    textContent: "",
    getAttribute: (name) => (name in attrs ? attrs[name] : null),
    setAttribute: (name, value) => { attrs[name] = String(value); },
    classList: { toggle: (name, on) => (on ? classes.add(name) : classes.delete(name)), contains: (n) => classes.has(n) },
    querySelectorAll: () => children.filter((c) => "data-cache-part" in c.attrs),
    querySelector: (selector) => children.find((c) => selector === "title" ? c.title : "data-cache" in c.attrs) || null
  };
}

/* A stand-in for the figure the build draws: boxes with data-step, attributes, classes, and
   with `cache` the K/V cache box (model_map.py's, its bars 30 units wide from x = 100). */
function fakeFigure(ids, cache) {
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
  const bar = (part) => fakeNode({ "data-cache-part": part, x: "100", width: "0", "data-x": "100", "data-width": "30" }, []);
  const title = Object.assign(fakeNode({}, []), { title: true });
  const cacheBox = cache ? fakeNode({ "data-cache": "" }, [bar("read"), bar("added"), title]) : null;
  return {
    boxes,
    cacheBox,
    querySelectorAll: () => boxes,
    querySelector: () => cacheBox,
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

test("the K/V cache box fills as the run goes, and is dimmed where there is no cache", async () => {
  const { cacheOf } = await import("../../../docs_build/assets/replay/inspect/cache.js");
  const cached = read("generation.json"); // 2 prompt tokens, 2 generated: the cache reaches 3
  const figure = fakeFigure(["embed"], true);
  const map = new ModelMap(figure, () => true);
  const bars = () => ["read", "added"].map((part) => {
    const node = figure.cacheBox.querySelectorAll().find((b) => b.attrs["data-cache-part"] === part);
    return [Number(node.attrs.x), Number(node.attrs.width)];
  });
  map.showCache(cacheOf(cached, cached.events.find((e) => e.gen === 0)), "first");
  assert.deepEqual(bars(), [[100, 0], [100, 20]]); // the prompt's 2 of 3 positions, all new
  map.showCache(cacheOf(cached, cached.events.find((e) => e.gen === 1)), "second");
  assert.deepEqual(bars(), [[100, 20], [120, 10]]); // 2 read from the cache, 1 added
  assert.equal(figure.cacheBox.attrs["aria-label"], "second");
  assert.equal(figure.cacheBox.classList.contains("gl-map-cache--off"), false);
  map.showCache(null, "none");
  assert.deepEqual(bars(), [[100, 0], [100, 0]]);
  assert.equal(figure.cacheBox.classList.contains("gl-map-cache--off"), true);
  // a map without the box ignores it
  new ModelMap(fakeFigure(["embed"], false), () => true).showCache(null, "none");
});
