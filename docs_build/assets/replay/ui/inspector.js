/* glassllm replay: the inspector — a snapshot's value, or its slice as a grid with a
 * selector for each leading axis.
 */

import { axisLabel, axisName } from "../inspect/labels.js";
import { exactText, written } from "../inspect/numbers.js";
import { setPick, sliceOf } from "../inspect/slice.js";
import { tokenLabel } from "../tokens.js";
import { clear, el } from "./dom.js";
import { drawGrid } from "./grid.js";

/* Event `e` in the inspector `box`: a scalar as its value; else selectors for the leading
   axes (the head axis follows the head filter / last pick) and the slice of the last two
   (or one). `view` is the reader's view, kept across events: `picks` (per axis name),
   `offsets` and `panned` (the window), `focusCell`; a change of it calls `redraw()`.
   `ctx`: `t`, `strings`, `labels`, `rec`. */
export function drawInspector(box, e, ctx, view, redraw) {
  const t = ctx.t;
  clear(box);
  box.appendChild(el("h3", { text: t("inspector") }));

  if (e.shape.length === 0) {
    const raw = exactText(e.values[0], e.dtype);
    const shown = written(raw, t("decimal"));
    const text = e.step === "sample" ? shown + " (" + tokenLabel(ctx.labels, e.values[0]) + ")" : shown;
    box.appendChild(el("p", { className: "gr-scalar" }, [
      el("span", { className: "gr-scalar-name", text: t("scalar") + " " }),
      el("output", { className: "gr-cell gr-scalar-value", "data-value": raw, title: shown, text: text })
    ]));
    return;
  }

  const slice = sliceOf(e, view.picks, ctx.rec.config);
  if (slice.lead.length) {
    const selectors = el("div", { className: "gr-axes" });
    slice.lead.forEach((lead, a) => {
      const id = "gr-axis-" + a;
      const select = el("select", { id: id, "data-axis": lead.axis, className: "gr-axis-select" });
      for (let i = 0; i < lead.size; i++) {
        select.appendChild(el("option", { value: String(i), text: axisLabel(ctx, e, lead.axis, i) }));
      }
      select.value = String(lead.pick);
      select.addEventListener("change", () => {
        setPick(view.picks, lead.axis, Number(select.value), ctx.rec.config);
        redraw();
        const again = box.querySelector('select[data-axis="' + CSS.escape(lead.axis) + '"]');
        if (again) again.focus();
      });
      selectors.appendChild(el("span", { className: "gr-axis" }, [
        el("label", { "for": id, text: axisName(ctx, lead.axis) }), select
      ]));
    });
    box.appendChild(selectors);
  }
  drawGrid(box, e, slice, ctx, view, redraw);
}
