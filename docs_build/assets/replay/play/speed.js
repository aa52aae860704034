/* glassllm replay: the speed slider — a position 0..100 as events per second and back to
 * the text the page shows. Pure module (no DOM).
 */

export const SPEED_MIN = 0.25; // events per second at the slider's left end
export const SPEED_MAX = 60;

/* Events per second for a slider position 0..100 (logarithmic: slow motion to fast). */
export function speedOf(position) {
  return SPEED_MIN * Math.pow(SPEED_MAX / SPEED_MIN, Number(position) / 100);
}

/* "0.25", "1.5", "12": two decimals below 10 events/s, whole numbers above. */
export function speedText(speed) {
  return speed < 10 ? speed.toFixed(2).replace(/\.?0+$/, "") : String(Math.round(speed));
}
