/* glassllm replay: a slice as a grid of cells — coloured on one scale, the exact value on
 * hover and focus, panned in windows when it is large, moved through with the arrow keys.
 */

import { cacheOf, keyKind } from "../inspect/cache.js";
import { chosenColumn } from "../inspect/chosen.js";
import { cellColour, colourScale, scaleSpan } from "../inspect/colour.js";
import { axisLabel, axisName } from "../inspect/labels.js";
import { causalMasked, maskedShown } from "../inspect/mask.js";
import { exactText, shortText, written } from "../inspect/numbers.js";
import { WINDOW_COLS, WINDOW_ROWS, panned, windowOf, windowSpan } from "../inspect/window.js";
import { el } from "./dom.js";
import { legend } from "./legend.js";
import { topList } from "./top-list.js";

/* The grid of `slice` (inspect/slice.js) of event `e`, appended to `box` with its window's
   text and pan buttons, the top entries of a distribution, the readout and the legend.
   `view` and `redraw` as in drawInspector: panning sets `view.offsets` and `view.panned`,
   moving the keyboard's cell sets `view.focusCell`. */
export function drawGrid(box, e, slice, ctx, view, redraw) {
  const rec = ctx.rec;
  const t = ctx.t;
  const { rows, cols, rowAxis, colAxis, values } = slice;
  const masked = (r, c) => causalMasked(e, slice, r, c);
  const scale = colourScale(values, (i) => masked(Math.floor(i / cols), i % cols));
  const focusCol = chosenColumn(rec, e, rec.kind === "generation" ? rows - 1 : 0, rows, colAxis);
  const win = windowOf(rows, cols, view.offsets, focusCol, view.panned);
  const { r0, r1, c0, c1 } = win;
  const label = (name, i) => axisLabel(ctx, e, name, i);
  // a cached step's keys: the ones read from the KV cache, and its own new one
  const cache = cacheOf(rec, e);
  const keyTitle = { cached: t("keyCached"), new: t("keyNew") };
  const decimal = t("decimal"); // the page's decimal mark, for every cell's text

  // panning controls when the slice is larger than the window
  const pan = (kind, delta, text, glyph) => el("button", {
    type: "button", className: "md-button gr-button gr-pan",
    "data-action": "pan-" + kind + (delta < 0 ? "-back" : "-forward"), "aria-label": text, title: text,
    onclick: () => {
      view.offsets[kind] = kind === "row" ? panned(r0, delta, WINDOW_ROWS) : panned(c0, delta, WINDOW_COLS);
      if (kind === "row") view.offsets.col = c0;
      view.panned = true;
      redraw();
    }
  }, [glyph]);
  const windowInfo = el("div", { className: "gr-window" });
  const rowText = t("windowRows", Object.assign({ count: rows }, windowSpan(r0, r1)));
  const colText = t("windowCols", Object.assign({ count: cols }, windowSpan(c0, c1)));
  if (rows > WINDOW_ROWS) {
    const rowPan = el("span", { className: "gr-pan-group" }, [pan("row", -1, t("panUp"), "▲"), pan("row", 1, t("panDown"), "▼")]);
    rowPan.firstChild.disabled = r0 === 0;
    rowPan.lastChild.disabled = r1 >= rows;
    windowInfo.appendChild(el("span", {}, [rowText, " ", rowPan]));
  } else if (rowAxis) {
    windowInfo.appendChild(el("span", { text: rowText }));
  }
  if (cols > WINDOW_COLS) {
    const colPan = el("span", { className: "gr-pan-group" }, [pan("col", -1, t("panLeft"), "◀"), pan("col", 1, t("panRight"), "▶")]);
    colPan.firstChild.disabled = c0 === 0;
    colPan.lastChild.disabled = c1 >= cols;
    windowInfo.appendChild(el("span", {}, [colText, " ", colPan]));
  } else {
    windowInfo.appendChild(el("span", { text: colText }));
  }
  box.appendChild(windowInfo);
  if (rows === 1 && colAxis === "vocab") box.appendChild(topList(ctx, e, values));

  const readout = el("p", { className: "gr-readout", "aria-live": "polite" });
  const table = el("table", { className: "gr-grid", role: "grid", "aria-label": t("slice") });
  const head = el("tr", {}, [el("th", {
    className: "gr-corner", scope: "col",
    text: (rowAxis ? axisName(ctx, rowAxis) + " \\ " : "") + axisName(ctx, colAxis)
  })]);
  for (let c = c0; c < c1; c++) {
    const kind = keyKind(cache, colAxis, c);
    head.appendChild(el("th", {
      scope: "col", text: label(colAxis, c), className: kind ? "gr-key gr-key--" + kind : null,
      title: kind ? keyTitle[kind] : null, "data-key": kind
    }));
  }
  table.appendChild(el("thead", {}, [head]));
  const body = el("tbody");
  const fc = view.focusCell;
  const focus = fc && fc[0] >= r0 && fc[0] < r1 && fc[1] >= c0 && fc[1] < c1 ? fc : [r0, c0];
  for (let r = r0; r < r1; r++) {
    // the rows of a cached generation step are the positions it computes: all new
    const newRow = cache && (rowAxis === "query" || rowAxis === "token");
    const tr = el("tr", {}, [el("th", {
      scope: "row", text: rowAxis ? label(rowAxis, r) : "", className: newRow ? "gr-row--new" : null,
      title: newRow ? t("rowNew") : null
    })]);
    const chosen = chosenColumn(rec, e, r, rows, colAxis);
    for (let c = c0; c < c1; c++) {
      const v = values[r * cols + c];
      const raw = exactText(v, e.dtype);
      const where = (rowAxis ? axisName(ctx, rowAxis) + " " + label(rowAxis, r) + ", " : "") +
        axisName(ctx, colAxis) + " " + label(colAxis, c) + ": " + written(raw, decimal);
      const cell = el("td", {
        className: "gr-cell", "data-value": raw, "data-row": r, "data-col": c,
        title: where, "aria-label": where,
        tabindex: r === focus[0] && c === focus[1] ? 0 : -1, role: "gridcell",
        text: written(shortText(v, e.dtype), decimal)
      });
      if (c === chosen) {
        cell.classList.add("gr-cell--chosen");
        cell.title += " · " + t(rec.kind === "generation" ? "chosenToken" : "targetToken");
      }
      const colour = cellColour(v, scale, masked(r, c));
      if (colour.kind !== "value") {
        cell.classList.add("gr-cell--" + colour.kind);
      } else {
        cell.style.setProperty("--gr-alpha", (colour.strength * 0.85).toFixed(3));
        cell.style.setProperty("--gr-rgb", "var(--gr-" + colour.hue + ")");
        if (rows === 1) cell.style.setProperty("--gr-bar", (colour.strength * 100).toFixed(1) + "%");
      }
      tr.appendChild(cell);
    }
    body.appendChild(tr);
  }
  table.appendChild(body);
  if (rows === 1) table.classList.add("gr-grid--bars");
  box.appendChild(el("div", { className: "gr-scroll", "data-scroll-hint": t("scrollHint") }, [table]));
  box.appendChild(readout);
  if (cache && colAxis === "key") {
    box.appendChild(el("p", { className: "gr-cache-keys", text: t(cache.cached ? "keysLater" : "keysFirst", {
      last: cache.cached - 1, position: cache.cached, keys: cache.keys
    }) }));
  }
  box.appendChild(legend(t, scale, e.dtype, maskedShown(e, slice, win), scaleSpan(slice)));
  moveWithArrows(table, readout, (cell) => { view.focusCell = cell; });
}

/* A roving tab stop over the grid's cells: the arrows move between cells (`onMove([r, c])`),
   the readout says the exact value of the focused or pointed cell. */
function moveWithArrows(table, readout, onMove) {
  const show = (cell) => { readout.textContent = cell.getAttribute("aria-label"); };
  table.addEventListener("focusin", (ev) => {
    if (ev.target.classList.contains("gr-cell")) show(ev.target);
  });
  table.addEventListener("mouseover", (ev) => {
    if (ev.target.classList && ev.target.classList.contains("gr-cell")) show(ev.target);
  });
  table.addEventListener("keydown", (ev) => {
    const cell = ev.target;
    if (!cell.classList.contains("gr-cell")) return;
    const dr = { ArrowUp: -1, ArrowDown: 1 }[ev.key] || 0;
    const dc = { ArrowLeft: -1, ArrowRight: 1 }[ev.key] || 0;
    if (!dr && !dc) return;
    ev.preventDefault();
    const r = Number(cell.getAttribute("data-row")) + dr;
    const c = Number(cell.getAttribute("data-col")) + dc;
    const next = table.querySelector('td[data-row="' + r + '"][data-col="' + c + '"]');
    if (!next) return;
    cell.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
    onMove([r, c]);
  });
}
