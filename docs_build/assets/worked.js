// A worked example's entries (the rows of its check table: docs_build/html/worked.py) point
// at the snapshot they redo: hovering or focusing one highlights its cell in the values
// table above (with the cell's row and column headers) and in the heatmap, where the table
// leaves that column out. The entry's index (data-index) is into the step's snapshot of the
// example's layer: (head, row, column), (row, column), or (token) for a vector over the
// vocabulary, drawn as a grid of token IDs, row-major (its width is the figure's data-shape).

/** Where an entry sits: its head (null without a head axis) and its cell (row, column) in
 * the slice the tables and heatmaps show, or {token} for a vector; null for a scalar. */
export function targetOf(index) {
  if (index.length === 3) return { head: index[0], cell: [index[1], index[2]] };
  if (index.length === 2) return { head: null, cell: index };
  if (index.length === 1) return { head: null, token: index[0], cell: null };
  return null;
}

/** The cell's place in a table that shows the slice's rows ``rows`` and columns ``cols``
 * (their data-rows and data-cols), as [row, column] among the shown ones; null if cut. */
export function placeIn(cell, rows, cols) {
  const r = rows.indexOf(cell[0]);
  const c = cols.indexOf(cell[1]);
  return r < 0 || c < 0 ? null : [r, c];
}

const LIT = "gl-lit";

function sameSlice(element, step, layer, head) {
  const d = element.dataset;
  return d.step === step && (d.layer ?? null) === layer && (d.head ?? null) === head;
}

function tableCells(table, target) {
  const body = [...table.tBodies[0].rows].filter((tr) => !tr.classList.contains("gl-ellipsis-row"));
  if (target.token !== undefined) { // a vector's table: a row per token, its ID in the first cell
    const row = body.find((tr) => tr.cells[1]?.textContent === String(target.token));
    return row ? [row.cells[0], ...row.querySelectorAll("td")] : [];
  }
  const numbers = (name) => (table.dataset[name] ?? "").split(" ").filter(Boolean).map(Number);
  const place = placeIn(target.cell, numbers("rows"), numbers("cols"));
  if (!place) return [];
  const row = body[place[0]];
  const data = [...row.cells].filter((td) => td.tagName === "TD" && !td.classList.contains("gl-ellipsis"));
  const heads = [...table.tHead.rows[0].cells].filter((th) => !th.classList.contains("gl-ellipsis"));
  return [data[place[1]], row.cells[0], heads[place[1] + 1]].filter(Boolean);
}

/** A token's cell in a vocabulary grid of ``cols`` columns, row-major. */
export function gridCell(token, cols) {
  return [Math.floor(token / cols), token % cols];
}

function heatmapMark(figure, target) {
  const svg = figure.querySelector("svg.gl-heatmap-svg");
  const image = svg?.querySelector("image.gl-heatmap-cells");
  if (!image || !figure.dataset.shape) return null;
  const [rows, cols] = figure.dataset.shape.split(" ").map(Number);
  const cell = target.token !== undefined ? gridCell(target.token, cols) : target.cell;
  if (cell[0] >= rows || cell[1] >= cols) return null;
  const [x, y, w, h] = ["x", "y", "width", "height"].map((k) => Number(image.getAttribute(k)));
  const mark = document.createElementNS("http://www.w3.org/2000/svg", "rect");
  mark.setAttribute("class", "gl-lit-cell");
  mark.setAttribute("x", x + (cell[1] * w) / cols);
  mark.setAttribute("y", y + (cell[0] * h) / rows);
  mark.setAttribute("width", w / cols);
  mark.setAttribute("height", h / rows);
  svg.append(mark);
  return mark;
}

/** Make the entries of a worked example (``.gl-worked[data-step]``) light their cells: the
 * page's on load, the reader's (runtime/stepview.js) when it arrives. */
export function attach(worked) {
  const step = worked.dataset.step;
  const layer = worked.dataset.layer ?? null;
  worked.querySelectorAll("table.gl-worked-checks tr[data-index]").forEach((entry) => {
    const index = entry.dataset.index.split(",").filter(Boolean).map(Number);
    const target = targetOf(index);
    if (!target) return;
    const head = target.head === null ? null : String(target.head);
    let lit = [];
    let marks = [];
    const on = () => {
      off();
      const root = worked.ownerDocument;
      // the page's tables and the reader's (stepview.js), whichever is shown
      lit = [...root.querySelectorAll("table.gl-values, table.glr-step-values")]
        .filter((t) => sameSlice(t, step, layer, head))
        .flatMap((table) => tableCells(table, target));
      lit.forEach((el) => el.classList.add(LIT));
      marks = [...root.querySelectorAll("figure.gl-heatmap[data-shape]")]
        .filter((f) => !f.closest(".gl-probe") && sameSlice(f, step, layer, head)).map((f) => heatmapMark(f, target)).filter(Boolean);
      entry.classList.add(LIT);
    };
    const off = () => {
      lit.forEach((el) => el.classList.remove(LIT));
      marks.forEach((mark) => mark.remove());
      lit = [];
      marks = [];
      entry.classList.remove(LIT);
    };
    entry.addEventListener("pointerenter", on);
    entry.addEventListener("pointerleave", off);
    entry.addEventListener("focus", on);
    entry.addEventListener("blur", off);
  });
}

if (typeof document !== "undefined") {
  document.querySelectorAll(".gl-worked[data-step]").forEach(attach);
}
