// The time-lapse of training (docs_build/html/timelapse.py): a slider and a play button move
// through the training record's snapshots. Each featured head's frames are one film strip
// (one PNG, the snapshots side by side) that the page shows one frame of; the chart's line
// marks the shown snapshot's step. Without JavaScript the figure shows the last snapshot.

/** The CSS background-position that shows frame ``index`` of a strip of ``count`` frames
 * scaled to ``count`` × 100 % of the box: 0 % is the first frame, 100 % the last. */
export function framePosition(index, count) {
  const percent = count > 1 ? (100 * index) / (count - 1) : 0;
  return `${Number(percent.toFixed(4))}% 0`;
}

/** A "{name}" template filled from ``fields``, as Python's str.format fills the page's. */
export function fill(template, fields) {
  return template.replace(/\{(\w+)\}/g, (whole, name) => (name in fields ? String(fields[name]) : whole));
}

/** The snapshot after ``index`` while playing, or null at the last one (playing stops). */
export function nextFrame(index, count) {
  return index + 1 < count ? index + 1 : null;
}

const FRAME_MS = 450;

function attach(box) {
  const steps = box.dataset.steps.split(" ").map(Number);
  const xs = box.dataset.x.split(" ").map(Number);
  const slider = box.querySelector("input.gl-tl-slider");
  const shownStep = box.querySelector("output.gl-tl-step");
  const now = box.querySelector(".gl-tl-now");
  const play = box.querySelector("button.gl-tl-play");
  const heads = [...box.querySelectorAll("figure.gl-tl-head")].map((figure) => ({
    frame: figure.querySelector(".gl-tl-frame"),
    caption: figure.querySelector("figcaption"),
    scores: figure.dataset.scores.split(" "),
    label: figure.dataset.label,
    head: figure.dataset.head,
  }));
  let timer = null;
  const show = (index) => {
    slider.value = String(index);
    shownStep.textContent = fill(box.dataset.stepLabel, { step: steps[index] });
    now.setAttribute("x1", String(xs[index]));
    now.setAttribute("x2", String(xs[index]));
    for (const head of heads) {
      head.frame.style.backgroundPosition = framePosition(index, steps.length);
      const text = fill(head.label, { head: head.head, step: steps[index], score: head.scores[index] });
      head.frame.setAttribute("aria-label", text);
      head.caption.textContent = text;
    }
  };
  const stop = () => {
    clearInterval(timer);
    timer = null;
    play.textContent = play.dataset.play;
  };
  slider.addEventListener("input", () => { stop(); show(Number(slider.value)); });
  play.addEventListener("click", () => {
    if (timer !== null) { stop(); return; }
    if (nextFrame(Number(slider.value), steps.length) === null) show(0); // from the start again
    play.textContent = play.dataset.pause;
    timer = setInterval(() => {
      const next = nextFrame(Number(slider.value), steps.length);
      if (next === null) stop(); else show(next);
    }, FRAME_MS);
  });
  box.querySelector(".gl-tl-controls").hidden = false;
}

if (typeof document !== "undefined") {
  document.querySelectorAll(".gl-timelapse[data-steps]").forEach(attach);
}
