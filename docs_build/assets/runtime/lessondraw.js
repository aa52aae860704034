// The "Watch it learn" page's pure logic (lesson.js draws with it; node --test tests it):
// when a head formed, the charts as SVG, the attention tables, the time left.

// glassllm.circuits.QUALIFIES: the one threshold of the rule below, for both kinds of head
export const QUALIFIES = 0.5;
export const KINDS = ["previous_token", "induction"];

// glassllm.lessons.formed_at: the step of the first snapshot from which the best `kind`
// score stays at or above `threshold` to the last snapshot; null if the last is below
export function formedAt(history, kind, threshold = QUALIFIES) {
  let step = null;
  for (const snapshot of history) {
    if (snapshot[kind] >= threshold) {
      if (step === null) step = snapshot.step;
    } else {
      step = null;
    }
  }
  return step;
}

// An attention table (n, n) as a Float32Array, row-major: from the recording's base64 bytes
// of each row up to the diagonal (docs_build/data/lesson.py: attention_bytes), or from a
// live snapshot's nested arrays
export function attentionTable(value, n) {
  const table = new Float32Array(n * n);
  if (typeof value === "string") {
    const bytes = typeof atob === "function" ? Uint8Array.from(atob(value), (c) => c.charCodeAt(0))
      : Uint8Array.from(Buffer.from(value, "base64"));
    if (bytes.length !== (n * (n + 1)) / 2) {
      throw new Error(`an attention table of ${n} positions has ${(n * (n + 1)) / 2} weights up to the diagonal, got ${bytes.length}`);
    }
    let k = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j <= i; j++) table[i * n + j] = bytes[k++] / 255;
    }
    return table;
  }
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) table[i * n + j] = value[i][j];
  }
  return table;
}

// The index of the last snapshot at or before `step` (0 if none)
export function indexAt(history, step) {
  let index = 0;
  for (let i = 0; i < history.length; i++) {
    if (history[i].step <= step) index = i;
  }
  return index;
}

const PAD = { left: 34, right: 8, top: 8, bottom: 22 };

function escapeXml(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// A line chart of `series` ([{key, label, className}]) over the snapshots' steps, as SVG:
// x from step 0 to `steps`, y from 0 to `yMax`; `marks` ([{step, label}]) as dashed vertical
// lines (where a head formed), `cursor` the shown step. `format` writes the axis numbers.
export function chartSvg(history, { series, steps, yMax, marks = [], cursor = null, title = "",
  width = 320, height = 150, format = (v) => String(v) }) {
  const w = width - PAD.left - PAD.right;
  const h = height - PAD.top - PAD.bottom;
  const x = (step) => PAD.left + (steps > 0 ? (step / steps) * w : 0);
  const y = (v) => PAD.top + h - (Math.max(0, Math.min(v, yMax)) / yMax) * h;
  const out = [`<svg class="gl-lesson-chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(title)}">`];
  out.push(`<title>${escapeXml(title)}</title>`);
  out.push(`<g class="gl-lesson-axis">`);
  for (const v of [0, yMax / 2, yMax]) {
    out.push(`<line x1="${PAD.left}" x2="${width - PAD.right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/>`);
    out.push(`<text x="${PAD.left - 4}" y="${(y(v) + 3).toFixed(1)}" text-anchor="end">${escapeXml(format(v))}</text>`);
  }
  for (const s of [0, steps / 2, steps]) {
    out.push(`<text x="${x(s).toFixed(1)}" y="${height - 6}" text-anchor="middle">${Math.round(s)}</text>`);
  }
  out.push("</g>");
  for (const mark of marks) {
    if (mark.step === null || mark.step === undefined) continue;
    out.push(`<g class="gl-lesson-mark ${mark.className || ""}"><line x1="${x(mark.step).toFixed(1)}" x2="${x(mark.step).toFixed(1)}" y1="${PAD.top}" y2="${PAD.top + h}"/>`
      + `<title>${escapeXml(mark.label)}</title></g>`);
  }
  for (const line of series) {
    const points = history.map((s) => `${x(s.step).toFixed(1)},${y(s[line.key]).toFixed(1)}`).join(" ");
    out.push(`<polyline class="gl-lesson-line ${line.className}" points="${points}"><title>${escapeXml(line.label)}</title></polyline>`);
  }
  if (cursor !== null) {
    out.push(`<line class="gl-lesson-cursor" x1="${x(cursor).toFixed(1)}" x2="${x(cursor).toFixed(1)}" y1="${PAD.top}" y2="${PAD.top + h}"/>`);
  }
  out.push("</svg>");
  return out.join("");
}

// Milliseconds left at the pace so far: `done` of `total` steps took `elapsed` ms
export function timeLeft(done, total, elapsed) {
  if (done <= 0) return null;
  return Math.max(0, ((total - done) * elapsed) / done);
}

// "1 min 05 s" / "42 s"
export function formatDuration(ms) {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${String(seconds % 60).padStart(2, "0")} s`;
}

// A number with `digits` decimals and the page's decimal mark
export function fixed(value, digits, decimal = ".") {
  return Number(value).toFixed(digits).replace(".", decimal);
}
