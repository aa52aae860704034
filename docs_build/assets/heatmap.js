// The step pages' heatmaps: hovering a cell shows its row, column and value under it.
// The cells are one image (docs_build/html/heatmap.py, heatmap_html), so there is no element per
// cell to carry a tooltip: the figure carries the values (data-values, row-major) or points
// at the table beside it that shows every cell (data-values-in="table").

/** A byte token as the pages write it (glassllm.tokenizer.token_label, which a test holds
 * this to): printable ASCII itself, space ␣, newline ⏎, other bytes escaped. */
export function tokenLabel(token) {
  if (token === 32) return "␣";
  if (token === 10) return "⏎";
  if (token >= 33 && token <= 126) return String.fromCharCode(token);
  return `\\x${token.toString(16).padStart(2, "0")}`;
}

/** The cell [row, column] under the point (x, y) of the image box {x, y, width, height}
 * that draws a rows x cols grid, or null outside it. */
export function cellAt(x, y, box, rows, cols) {
  const j = Math.floor(((x - box.x) / box.width) * cols);
  const i = Math.floor(((y - box.y) / box.height) * rows);
  return i >= 0 && i < rows && j >= 0 && j < cols ? [i, j] : null;
}

/** An axis' labels from its SVG texts [{at, positions, text}]: a text with several
 * positions holds one label per character (html/heatmap.py: axis_labels_svg). */
export function labelsFrom(texts) {
  const labels = [];
  for (const { at, positions, text } of texts) {
    const parts = positions > 1 ? Array.from(text) : [text];
    parts.forEach((label, k) => { labels[at + k] = label; });
  }
  return labels;
}

/** The readout's values, row-major, from a table that shows every cell: its shown rows'
 * and columns' indices (data-rows, data-cols) and its cells' texts, row by row. */
export function valuesFromTable(rowIndices, colIndices, cellTexts, rows, cols) {
  const values = new Array(rows * cols).fill("-");
  rowIndices.forEach((i, r) => {
    colIndices.forEach((j, c) => { values[i * cols + j] = cellTexts[r][c]; });
  });
  return values;
}

/** What the readout says about cell (i, j), or null for a cell it says nothing about
 * ("-": the padding of a byte grid). */
export function cellText(kind, rowLabels, colLabels, i, j, cols, value) {
  if (value === undefined || value === "-") return null;
  if (kind === "byte-grid") {
    const token = i * cols + j;
    return `${token} (${tokenLabel(token)}): ${value}`;
  }
  return `${rowLabels[i] ?? i} · ${colLabels[j] ?? j}: ${value}`;
}

// -- the page ------------------------------------------------------------------------------

function axisLabels(svg, axis) {
  return labelsFrom([...svg.querySelectorAll(`.gl-heatmap-${axis} text`)].map((t) => ({
    at: Number(t.dataset.at),
    positions: (t.getAttribute(axis === "rows" ? "y" : "x") || "").trim().split(/\s+/).length,
    text: t.textContent,
  })));
}

function tableOf(figure) {
  const same = ["step", "layer", "head"].map((k) => (figure.dataset[k] === undefined ? ""
    : `[data-${k}="${CSS.escape(figure.dataset[k])}"]`)).join("");
  return document.querySelector(`table.gl-values${same}`);
}

function valuesOf(figure, rows, cols) {
  if (figure.dataset.values !== undefined) return figure.dataset.values.split(" ");
  const table = tableOf(figure);
  if (!table) return [];
  const indices = (name) => table.dataset[name].split(" ").map(Number);
  const cells = [...table.tBodies[0].rows].filter((tr) => !tr.classList.contains("gl-ellipsis-row"))
    .map((tr) => [...tr.cells].filter((td) => td.tagName === "TD").map((td) => td.textContent));
  return valuesFromTable(indices("rows"), indices("cols"), cells, rows, cols);
}

function attach(figure) {
  const svg = figure.querySelector("svg.gl-heatmap-svg");
  const image = svg?.querySelector("image.gl-heatmap-cells");
  const readout = figure.querySelector(".gl-heatmap-readout");
  if (!image || !readout) return;
  const [rows, cols] = figure.dataset.shape.split(" ").map(Number);
  const kind = figure.dataset.kind;
  let values = null; // read on first hover: most heatmaps are never pointed at
  let rowLabels, colLabels;
  const box = ["x", "y", "width", "height"].reduce((b, k) => ({ ...b, [k]: Number(image.getAttribute(k)) }), {});
  svg.classList.add("gl-hoverable");
  svg.addEventListener("pointermove", (event) => {
    if (values === null) {
      values = valuesOf(figure, rows, cols);
      rowLabels = axisLabels(svg, "rows");
      colLabels = axisLabels(svg, "cols");
    }
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(svg.getScreenCTM().inverse());
    const cell = cellAt(point.x, point.y, box, rows, cols);
    const text = cell && cellText(kind, rowLabels, colLabels, cell[0], cell[1], cols, values[cell[0] * cols + cell[1]]);
    readout.hidden = !text;
    readout.textContent = text || "";
  });
  svg.addEventListener("pointerleave", () => { readout.hidden = true; });
}

if (typeof document !== "undefined") {
  document.querySelectorAll("figure.gl-heatmap[data-shape]").forEach(attach);
}
