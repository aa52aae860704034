// The step pages' heatmaps: hovering a cell shows its row, column and value under it.
// The cells are one image (docs_build/html/heatmap.py, heatmap_html), so there is no element per
// cell to carry a tooltip: the figure carries the values, row-major, three or four characters each
// (data-codes; data-values as text where a value has no code), and with
// data-values-in="table" only those of the cells the table beside it does not show.

// A vector over the vocabulary (the next-token probabilities) is drawn as a grid of token IDs;
// its readout names each cell's token by the label the pages give it, read from the site's
// one table of every token's label (the replay's steps.json, written by the build from the
// model's tokenizer) on the first hover, so no page carries the vocabulary's labels.
export const LABELS_URL = new URL("../replay/steps.json", import.meta.url);
let labelsLoad = null;

/** Every token's label ({token_labels} of steps.json), fetched once; null until it came. */
export function tokenLabels(load = () => fetch(LABELS_URL).then((r) => r.json())) {
  if (labelsLoad === null) {
    labelsLoad = { labels: null };
    const pending = labelsLoad;
    load().then((json) => { pending.labels = Array.isArray(json.token_labels) ? json.token_labels : null; },
      () => { labelsLoad = null; }); // offline: try again on a later hover
  }
  return labelsLoad.labels;
}

/** A token as the readout names it: its label from `labels` when they have come, its ID
 * alone before that (or outside the table). */
export function tokenLabel(labels, token) {
  return labels && token >= 0 && token < labels.length ? `${token} (${labels[token]})` : String(token);
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

const CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const CODE_SPECIALS = ["-", "0", "+∞", "−∞", "NaN"];
const [LOW, HIGH] = [-50, 40]; // the powers of ten a 4-character code holds (html/heatmap.py)
const SHORT_SPAN = 14; // and a 3-character one, from data-code-base

/** Each language's decimal mark, as docs/_texts/<lang>/ui.yml's number.decimal (a test checks
 * that they agree): what the scripts write, the pages' tables and prose write too. */
export const DECIMAL_MARKS = { en: ".", pt: "," };

/** The page's language, from <html lang> ("pt-BR" -> "pt"); "en" outside a page. */
export function pageLanguage() {
  return typeof document === "undefined" ? "en" : String(document.documentElement.lang || "en").split("-")[0];
}

/** A number as ``formatG4`` wrote it, with the decimal mark of ``language``. */
export function inLanguage(text, language = pageLanguage()) {
  const mark = DECIMAL_MARKS[language] ?? ".";
  return typeof text === "string" && mark !== "." ? text.replace(".", mark) : text;
}

/** A number as Python's "%.4g" writes it, from its sign, 4-digit mantissa m and power of
 * ten e (the value is ±m·10^e): fixed notation for exponents -4..3, else d.ddde±XX, trailing
 * zeros dropped, as glassllm's pages write every value (text/numbers.py: format_value). */
export function formatG4(negative, m, e) {
  const digits = String(m);
  const x = e + 3; // the power of ten of the first digit
  const trim = (s) => s.replace(/0+$/, "");
  let text;
  if (x >= -4 && x < 4) {
    if (x >= 0) {
      const fraction = trim(digits.slice(x + 1));
      text = digits.slice(0, x + 1) + (fraction ? "." + fraction : "");
    } else {
      text = "0." + "0".repeat(-x - 1) + trim(digits);
    }
  } else {
    const fraction = trim(digits.slice(1));
    text = digits[0] + (fraction ? "." + fraction : "") + "e" + (x < 0 ? "-" : "+")
      + String(Math.abs(x)).padStart(2, "0");
  }
  return (negative ? "-" : "") + text;
}

/** The values of data-codes (html/heatmap.py: value_code): 4 base64url characters each, or
 * 3 with their powers of ten counted from ``base`` (data-code-base) when it is given. */
export function decodeValues(codes, base = null) {
  const width = base === null ? 4 : 3;
  const low = base === null ? LOW : base;
  const span = base === null ? HIGH - LOW + 1 : SHORT_SPAN;
  const values = [];
  for (let k = 0; k + width <= codes.length; k += width) {
    let n = 0;
    for (let c = 0; c < width; c += 1) n = n * 64 + CODE_ALPHABET.indexOf(codes[k + c]);
    if (n < CODE_SPECIALS.length) {
      values.push(CODE_SPECIALS[n]);
      continue;
    }
    n -= CODE_SPECIALS.length;
    const m = (n % 9000) + 1000;
    const rest = Math.floor(n / 9000);
    values.push(formatG4(rest >= span, m, (rest % span) + low));
  }
  return values;
}

/** The readout's values, row-major: the table's (``fromTable``, null where it shows none)
 * with the figure's own (``rest``) in the other cells, in order. */
export function mergeValues(fromTable, rest) {
  let k = 0;
  return fromTable.map((value) => (value === null ? rest[k++] : value));
}

/** The readout's values, row-major, from the table beside the heatmap: its shown rows'
 * (its shown rows' and columns' indices, data-rows and data-cols, and its cells' texts, row
 * by row); ``empty`` in the cells it does not show. */
export function valuesFromTable(rowIndices, colIndices, cellTexts, rows, cols, empty = "-") {
  const values = new Array(rows * cols).fill(empty);
  rowIndices.forEach((i, r) => {
    colIndices.forEach((j, c) => { values[i * cols + j] = cellTexts[r][c]; });
  });
  return values;
}

/** What the readout says about cell (i, j), or null for a cell it says nothing about
 * ("-": the padding of a byte grid). */
export function cellText(kind, rowLabels, colLabels, i, j, cols, value, labels = null) {
  if (value === undefined || value === "-") return null;
  if (kind === "byte-grid") return `${tokenLabel(labels, i * cols + j)}: ${value}`;
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
  const base = figure.dataset.codeBase === undefined ? null : Number(figure.dataset.codeBase);
  const own = figure.dataset.codes !== undefined ? decodeValues(figure.dataset.codes, base)
    : figure.dataset.values !== undefined ? figure.dataset.values.split(" ") : [];
  if (figure.dataset.valuesIn !== "table") return own;
  const table = tableOf(figure);
  if (!table) return [];
  const indices = (name) => table.dataset[name].split(" ").map(Number);
  const cells = [...table.tBodies[0].rows].filter((tr) => !tr.classList.contains("gl-ellipsis-row"))
    .map((tr) => [...tr.cells].filter((td) => td.tagName === "TD" && !td.classList.contains("gl-ellipsis"))
      .map((td) => td.textContent));
  return mergeValues(valuesFromTable(indices("rows"), indices("cols"), cells, rows, cols, null), own);
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
    const text = cell && cellText(kind, rowLabels, colLabels, cell[0], cell[1], cols,
      inLanguage(values[cell[0] * cols + cell[1]]), kind === "byte-grid" ? tokenLabels() : null);
    readout.hidden = !text;
    readout.textContent = text || "";
  });
  svg.addEventListener("pointerleave", () => { readout.hidden = true; });
}

if (typeof document !== "undefined") {
  document.querySelectorAll("figure.gl-heatmap[data-shape]").forEach(attach);
}
