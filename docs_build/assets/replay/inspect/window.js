/* glassllm replay: the window of a large slice on screen — larger slices are panned, never
 * silently cut. Pure module (no DOM).
 */

export const WINDOW_ROWS = 32;
export const WINDOW_COLS = 32;

/* The window of rows r0..r1 and columns c0..c1 (end excluded) shown from the slice.
   Until the reader pans, a vocabulary axis opens on the window holding `focusCol`. */
export function windowOf(rows, cols, offsets, focusCol, panned) {
  const col = !panned && focusCol >= 0 ? Math.floor(focusCol / WINDOW_COLS) * WINDOW_COLS : offsets.col;
  const r0 = Math.min(offsets.row, Math.max(0, rows - WINDOW_ROWS));
  const c0 = Math.min(col, Math.max(0, cols - WINDOW_COLS));
  return { r0: r0, r1: Math.min(rows, r0 + WINDOW_ROWS), c0: c0, c1: Math.min(cols, c0 + WINDOW_COLS) };
}

/* The first and last index a window [start, end) shows, counted from 0 like the axis
   labels and the equations' positions. */
export function windowSpan(start, end) {
  return { from: start, to: end - 1 };
}

/* The offset after panning one window back (-1) or on (+1) from `start`. */
export function panned(start, delta, size) {
  return Math.max(0, start + delta * size);
}
