/* glassllm replay: the map of the model beside the player.
 *
 * The build draws the map into the page (docs_build/html/model_map.py, one <a data-step> per
 * step, linked to its page). Here the box of the shown event's step gets
 * aria-current="step" as the replay plays, and a plain click (or Enter) on a box shows that
 * step's next event instead of leaving the page (play/next-event.js); a modified click, or a
 * step the recording lacks, still opens the step page.
 *
 * A map drawn with the K/V cache box (`<!-- glassllm:model-map small cache -->`) shows the
 * cache filling: its two bars are sized to the positions the current step reads from the
 * cache and the ones it adds (inspect/cache.js), and its name says how full it is.
 */

import { cacheBars } from "../inspect/cache.js";

export class ModelMap {
  /* `onPick(stepId)` returns true when it showed an event of that step. */
  constructor(figure, onPick) {
    this.figure = figure;
    this.boxes = Array.from(figure.querySelectorAll("a[data-step]"));
    this.cache = figure.querySelector("[data-cache]");
    figure.addEventListener("click", (ev) => {
      const box = ev.target && ev.target.closest ? ev.target.closest("a[data-step]") : null;
      if (!box || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
      if (onPick(box.getAttribute("data-step"))) ev.preventDefault();
    });
  }

  /* The page's map, or null when the page has none. */
  static find(doc, onPick) {
    const figure = doc.querySelector("figure.gl-map");
    return figure ? new ModelMap(figure, onPick) : null;
  }

  /* Mark the box of `stepId` as the current one, and dim the boxes of steps that `present`
     (the recording's step IDs) lacks. */
  show(stepId, present) {
    for (const box of this.boxes) {
      const id = box.getAttribute("data-step");
      if (id === stepId) box.setAttribute("aria-current", "step");
      else box.removeAttribute("aria-current");
      box.classList.toggle("gl-map-step--absent", present.indexOf(id) < 0);
    }
  }

  /* The cache box at a step: `cache` (inspect/cache.js's cacheOf) sizes its bars, `text` names
     it; without a cache (a full recompute, a loss run) the bars are empty and the box dimmed. */
  showCache(cache, text) {
    const box = this.cache;
    if (!box) return;
    const bars = {};
    for (const bar of box.querySelectorAll("[data-cache-part]")) bars[bar.getAttribute("data-cache-part")] = bar;
    const width = Number(bars.read.getAttribute("data-width"));
    const x = Number(bars.read.getAttribute("data-x"));
    const sizes = cache ? cacheBars(cache, width) : { read: { offset: 0, width: 0 }, added: { offset: 0, width: 0 } };
    for (const part of ["read", "added"]) {
      bars[part].setAttribute("x", String(x + sizes[part].offset));
      bars[part].setAttribute("width", String(sizes[part].width));
    }
    box.classList.toggle("gl-map-cache--off", !cache);
    box.setAttribute("aria-label", text);
    const title = box.querySelector("title");
    if (title) title.textContent = text;
  }
}
