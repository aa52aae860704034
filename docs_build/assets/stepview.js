// A step page's snapshot of the reader's own run: after the run panel (panel.js, data-mode
// "step") has run the documented model on the reader's text in this browser, the page's
// example snapshot is hidden and this view shows the same step's records of the reader's
// run instead — a heatmap on the site's colour scales and the numbers of the first rows and
// columns, layer by layer and head by head — until the reader switches back.
//
// The pure part (slices, colours, the table's cut) is checked by node --test; the drawing
// needs the page. It sits beside the step pages' own scripts (assets/glassllm/), whose
// number format it shares, and loads only after a reader's run.

import { inLanguage } from "./heatmap.js";
import { formatValue } from "./sampling.js";
import { attach as attachWorked } from "./worked.js";

// the site's colour stops (docs_build/html/colours.py): sequential for values that are never
// negative, diverging around zero otherwise
export const SEQUENTIAL = [[0.0, [247, 251, 255]], [0.5, [107, 174, 214]], [1.0, [8, 48, 107]]];
export const DIVERGING = [[0.0, [33, 102, 172]], [0.25, [103, 169, 207]], [0.5, [247, 247, 247]],
  [0.75, [239, 138, 98]], [1.0, [178, 24, 43]]];
export const MASKED = [217, 217, 217];
export const TABLE_ROWS = 12;
export const TABLE_COLS = 12;

/** One head's (or the whole record's) values as a grid: {rows, cols, values} row-major, a
 * vector as one row, a scalar as a 1 × 1 grid. ``head`` picks the first axis of a record
 * with a head axis (three axes). */
export function sliceOf(record, head) {
  const shape = record.shape;
  if (shape.length === 0) return { rows: 1, cols: 1, values: record.values };
  if (shape.length === 1) return { rows: 1, cols: shape[0], values: record.values };
  if (shape.length === 2) return { rows: shape[0], cols: shape[1], values: record.values };
  const [heads, rows, cols] = shape.slice(-3);
  const h = Math.min(Math.max(head || 0, 0), heads - 1);
  return { rows, cols, values: record.values.subarray(h * rows * cols, (h + 1) * rows * cols) };
}

/** The colour scale of a slice as the step pages choose it: sequential from 0 when no
 * finite value is negative, else diverging around 0 with the larger magnitude as its end. */
export function scaleOf(values) {
  let low = Infinity;
  let high = -Infinity;
  for (const v of values) {
    if (Number.isFinite(v)) {
      if (v < low) low = v;
      if (v > high) high = v;
    }
  }
  if (low === Infinity) return { diverging: false, low: 0, high: 1 };
  if (low >= 0) return { diverging: false, low: 0, high: high || 1 };
  return { diverging: true, low, high };
}

function interpolate(stops, t) {
  const clamped = Math.min(1, Math.max(0, t));
  for (let i = 1; i < stops.length; i++) {
    const [t0, c0] = stops[i - 1];
    const [t1, c1] = stops[i];
    if (clamped <= t1) {
      const f = t1 === t0 ? 0 : (clamped - t0) / (t1 - t0);
      return c0.map((a, k) => Math.round(a + (c1[k] - a) * f));
    }
  }
  return stops[stops.length - 1][1].slice();
}

/** The [r, g, b] of a value on ``scale``, as ColourScale.colour computes it; the masked
 * −∞ of attn.mask light grey, other non-finite values black. */
export function colourOf(value, scale) {
  if (value === -Infinity) return MASKED.slice();
  if (!Number.isFinite(value)) return [0, 0, 0];
  if (scale.diverging) {
    const bound = Math.max(Math.abs(scale.low), Math.abs(scale.high)) || 1;
    return interpolate(DIVERGING, 0.5 + value / (2 * bound));
  }
  const span = scale.high - scale.low || 1;
  return interpolate(SEQUENTIAL, (value - scale.low) / span);
}

/** The indices a table shows of ``count``: all up to ``limit``, else the first limit − 2 and
 * the last two, with null where the cut is (the step pages' ellipsis). */
export function shownIndices(count, limit) {
  if (count <= limit) return Array.from({ length: count }, (_, i) => i);
  const head = Array.from({ length: limit - 2 }, (_, i) => i);
  return [...head, null, count - 2, count - 1];
}

/** A number as the step pages' tables write it (4 significant digits); −∞ as "−∞". */
export function cellText(value) {
  if (value === -Infinity) return "−∞";
  if (value === Infinity) return "+∞";
  if (Number.isNaN(value)) return "NaN";
  return inLanguage(formatValue(value));
}

// -- the page ------------------------------------------------------------------------------

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function fill(template, fields) {
  return template.replace(/\{(\w+)\}/g, (whole, name) => (name in fields ? String(fields[name]) : whole));
}

/** The elements of the page's example snapshot: from its heading (class gl-snapshot-title)
 * to the next h2. */
function exampleSnapshot(page) {
  const title = page.querySelector(".gl-snapshot-title");
  if (!title) return [];
  const out = [title];
  for (let node = title.nextElementSibling; node && node.tagName !== "H2"; node = node.nextElementSibling) {
    out.push(node);
  }
  return out;
}

/** KaTeX's options for a formula, as the build typesets it (docs_build/site/katex_batch.mjs
 * with site/katex.py's outputs): MathML alone; a character KaTeX's fonts lack inside \text{}
 * (the byte labels ␣ and ⏎) is drawn from another font. */
export function katexOptions(display) {
  return { displayMode: display, output: "mathml", throwOnError: false,
    strict: (code) => (code === "unknownSymbol" ? "ignore" : "warn") };
}

/** The formula of an arithmatex marker's text, ``\(…\)`` or ``\[…\]``: {tex, display}. */
export function markerFormula(text) {
  const trimmed = text.trim();
  return { tex: trimmed.slice(2, -2).trim(), display: trimmed.startsWith("\\[") };
}

/** Typeset every arithmatex marker under ``root`` with ``katex`` (window.katex). */
export function typesetMarkers(root, katex) {
  for (const node of root.querySelectorAll(".arithmatex")) {
    const { tex, display } = markerFormula(node.textContent);
    node.innerHTML = katex.renderToString(tex, katexOptions(display));
  }
}

export class StepView {
  constructor(panel, stepId, strings) {
    this.stepId = stepId;
    this.t = strings;
    this.example = exampleSnapshot(document);
    // the page's worked numbers (docs_build/html/worked.py) and the reader's, before them
    this.exampleWorked = document.querySelector(".gl-worked");
    this.worked = element("div", "glr-worked");
    this.worked.hidden = true;
    this.workedDone = false;
    if (this.exampleWorked) this.exampleWorked.before(this.worked);
    this.root = element("section", "glr-step");
    this.root.hidden = true;
    this.toggle = element("button", "md-button glr-switch");
    this.toggle.type = "button";
    this.toggle.hidden = true;
    this.toggle.addEventListener("click", () => this.show(!this.showingYours));
    panel.append(this.toggle);
    const anchor = this.example[0];
    if (anchor) anchor.before(this.root);
    else panel.after(this.root);
    this.showingYours = false;
  }

  /** Show the reader's run (``yours``) or the page's example again. */
  show(yours) {
    this.showingYours = yours;
    this.root.hidden = !yours;
    for (const node of this.example) node.hidden = yours;
    this.worked.hidden = !yours || !this.worked.childElementCount;
    if (this.exampleWorked) this.exampleWorked.hidden = yours && this.workedDone;
    this.toggle.textContent = yours ? this.t.show_example : this.t.show_yours;
  }

  /** Draw the reader's run: ``run`` is glassllm.run's answer, ``labels`` the byte labels. */
  draw(run, labels) {
    const records = run.records.filter((r) => r.id === this.stepId);
    this.records = records;
    this.labels = labels;
    this.tokens = run.tokens;
    this.root.replaceChildren();
    const title = element("h2", "glr-step-title", fill(this.t.yours_title, { text: labels.length ? run.tokens.map((t) => labels[t]).join("") : "" }));
    this.root.append(title);
    if (!records.length) {
      this.root.append(element("p", "glr-step-none", fill(this.t.yours_none, { step: this.stepId })));
    } else {
      this.controls = element("div", "glr-step-controls");
      this.layer = this.select(this.t.layer_label, records.map((r, i) => [i, r.layer === null ? "—" : String(r.layer)]));
      const heads = records[0].shape.length === 3 ? records[0].shape[0] : 0;
      this.head = heads ? this.select(this.t.head_label, Array.from({ length: heads }, (_, h) => [h, String(h)])) : null;
      this.body = element("div", "glr-step-body");
      this.root.append(this.controls, this.body);
      this.render();
    }
    this.toggle.hidden = false;
    this.show(true);
  }

  /** The worked numbers of the reader's run: ``result`` is glassllm.worked's answer (html
   * null: the example's stay, with a note saying why), ``katex`` typesets its formulas. */
  drawWorked(result, katex, text) {
    this.workedDone = Boolean(result.html);
    if (!result.html) {
      this.worked.replaceChildren(element("p", "glr-worked-none", fill(this.t.worked_none, { step: this.stepId })));
    } else {
      this.worked.innerHTML = result.html; // the docs build's own escaped HTML
      typesetMarkers(this.worked, katex);
      this.worked.querySelectorAll(".gl-worked[data-step]").forEach(attachWorked);
      this.worked.prepend(element("p", "glr-step-caption", fill(this.t.worked_yours, { text })));
    }
    this.show(this.showingYours);
  }

  select(label, options) {
    if (options.length < 2) return null;
    const box = element("label", "glr-step-select", label + " ");
    const select = document.createElement("select");
    for (const [value, text] of options) {
      const option = element("option", "", text);
      option.value = String(value);
      select.append(option);
    }
    select.addEventListener("change", () => this.render());
    box.append(select);
    this.controls.append(box);
    return select;
  }

  render() {
    const record = this.records[this.layer ? Number(this.layer.value) : 0];
    const head = this.head ? Number(this.head.value) : 0;
    const slice = sliceOf(record, head);
    const scale = scaleOf(slice.values);
    const shape = "(" + record.shape.join(", ") + (record.shape.length === 1 ? "," : "") + ")";
    const caption = element("p", "glr-step-caption", fill(this.t.yours_caption, {
      step: this.stepId, layer: record.layer === null ? "—" : record.layer,
      shape, low: cellText(scale.diverging ? -Math.max(-scale.low, scale.high) : scale.low),
      high: cellText(scale.diverging ? Math.max(-scale.low, scale.high) : scale.high),
    }));
    this.body.replaceChildren(caption, this.heatmap(slice, scale), this.table(slice, record));
  }

  rowLabel(i, slice, record) {
    // token axes label their rows with the reader's tokens, as the page's tables do
    const n = this.tokens.length;
    return slice.rows === n && record.shape.length >= 2 ? `${i} ${this.labels[this.tokens[i]] ?? ""}` : String(i);
  }

  heatmap(slice, scale) {
    const cell = Math.max(1, Math.min(16, Math.floor(640 / Math.max(slice.cols, 1))));
    const canvas = document.createElement("canvas");
    canvas.className = "glr-step-heatmap";
    canvas.width = slice.cols;
    canvas.height = slice.rows;
    canvas.style.width = `${slice.cols * cell}px`;
    canvas.style.height = `${slice.rows * cell}px`;
    const context = canvas.getContext("2d");
    const image = context.createImageData(slice.cols, slice.rows);
    for (let k = 0; k < slice.rows * slice.cols; k++) {
      const [r, g, b] = colourOf(slice.values[k], scale);
      image.data.set([r, g, b, 255], 4 * k);
    }
    context.putImageData(image, 0, 0);
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", fill(this.t.heatmap_label, { rows: slice.rows, cols: slice.cols }));
    const box = element("div", "glr-step-figure");
    box.append(canvas);
    return box;
  }

  table(slice, record) {
    const rows = shownIndices(slice.rows, TABLE_ROWS);
    const cols = shownIndices(slice.cols, TABLE_COLS);
    const table = element("table", "glr-step-values");
    // what the page's tables say of their slice, so that a worked entry finds its cell here
    // too (worked.js): the step, layer and head shown, and the rows and columns not cut
    table.dataset.step = this.stepId;
    if (record.layer !== null) table.dataset.layer = String(record.layer);
    if (record.shape.length === 3) table.dataset.head = String(this.head ? Number(this.head.value) : 0);
    table.dataset.rows = rows.filter((i) => i !== null).join(" ");
    table.dataset.cols = cols.filter((j) => j !== null).join(" ");
    const head = table.createTHead().insertRow();
    head.append(element("th", "", ""));
    for (const j of cols) head.append(element("th", j === null ? "gl-ellipsis" : "", j === null ? "…" : String(j)));
    const body = table.createTBody();
    for (const i of rows) {
      const tr = body.insertRow();
      if (i === null) tr.className = "gl-ellipsis-row";
      tr.append(element("th", "", i === null ? "⋮" : this.rowLabel(i, slice, record)));
      for (const j of cols) {
        const cut = i === null || j === null;
        tr.append(element("td", j === null ? "gl-ellipsis" : "", cut ? "…" : cellText(slice.values[i * slice.cols + j])));
      }
    }
    // the page's own tables' box: shaded where it can scroll, "scroll →" beside it on a phone
    const wrap = element("div", "glr-step-table gl-table-wrap");
    wrap.dataset.scrollHint = this.t.scroll_hint;
    wrap.append(table);
    return wrap;
  }
}
