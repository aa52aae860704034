// The "Watch it learn" page: <div class="glassllm-lesson" data-mode="player"> plays the
// recording of the induction lesson the build ships (data-recording: its URL), and
// data-mode="trainer" trains the same lesson live in the runtime's worker
// (window.glassllm.lesson), drawing each snapshot as it comes. Both show the same view: the
// two losses and the two head scores over the steps, the step where each head formed, and
// the two heads' attention on the probe. Strings: build.js's ui (keys runtime.lesson_*).

import { fill } from "./records.js";
import { KINDS, attentionTable, chartSvg, fixed, formatDuration, formedAt, indexAt, timeLeft } from "./lessondraw.js";

const LOSSES = [
  { key: "loss", className: "gl-lesson-loss" },
  { key: "first_copy_loss", className: "gl-lesson-first" },
  { key: "second_copy_loss", className: "gl-lesson-second" },
];
const SCORES = [
  { key: "previous_token", className: "gl-lesson-prev" },
  { key: "induction", className: "gl-lesson-ind" },
];
const TARGET_MS = 400; // about this long per call to the worker: pausing answers quickly
const PLAY_MS = 60; // per snapshot when the recording plays

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(text, onClick) {
  const node = element("button", "md-button", text);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

export function mountLessons(mounts, api, data) {
  return Array.prototype.map.call(mounts, (mount) => (mount.dataset.mode === "trainer"
    ? new Trainer(mount, api, data) : new Player(mount, api, data)));
}

// The charts, the readout and the two heads' attention of one snapshot of a history
class LessonView {
  constructor(root, t, decimal) {
    this.t = t;
    this.decimal = decimal;
    this.readout = element("p", "gl-lesson-readout");
    this.readout.setAttribute("aria-live", "polite");
    this.charts = element("div", "gl-lesson-charts");
    this.legend = element("p", "gl-lesson-legend");
    for (const line of [...LOSSES, ...SCORES]) {
      const item = element("span", "gl-lesson-key");
      const swatch = element("span", `gl-lesson-swatch ${line.className}`);
      swatch.setAttribute("aria-hidden", "true");
      item.append(swatch, t[`lesson_${line.key}`]);
      this.legend.append(item);
    }
    this.heads = element("div", "gl-lesson-heads");
    this.canvases = KINDS.map((kind) => {
      const figure = element("figure", "gl-lesson-head");
      const canvas = element("canvas", "gl-lesson-attention");
      const caption = element("figcaption");
      figure.append(canvas, caption);
      this.heads.append(figure);
      return { kind, canvas, caption };
    });
    root.append(this.readout, this.charts, this.legend, this.heads);
  }

  number(value, digits = 2) {
    return fixed(value, digits, this.decimal);
  }

  // history: snapshots so far; steps: the run's last step; index: the snapshot shown
  show(history, steps, index, probe) {
    if (!history.length) return;
    const s = history[index];
    const formed = Object.fromEntries(KINDS.map((kind) => [kind, formedAt(history, kind)]));
    const marks = KINDS.map((kind) => ({
      step: formed[kind], className: `gl-lesson-mark-${kind}`,
      label: fill(this.t[`lesson_formed_${kind}`], { step: formed[kind] }),
    }));
    const yMax = Math.ceil(Math.max(...history.map((h) => Math.max(h.loss, h.first_copy_loss, h.second_copy_loss))));
    const label = (line) => ({ ...line, label: this.t[`lesson_${line.key}`] });
    this.charts.innerHTML = chartSvg(history, {
      series: LOSSES.map(label), steps, yMax, marks, cursor: s.step, title: this.t.lesson_losses_title,
      format: (v) => this.number(v, 1),
    }) + chartSvg(history, {
      series: SCORES.map(label), steps, yMax: 1, marks, cursor: s.step, title: this.t.lesson_scores_title,
      format: (v) => this.number(v, 1),
    });
    this.readout.textContent = fill(this.t.lesson_readout, {
      step: s.step, loss: this.number(s.loss), first: this.number(s.first_copy_loss),
      second: this.number(s.second_copy_loss), prev: this.number(s.previous_token),
      prev_head: `L0H${s.previous_token_head}`, ind: this.number(s.induction),
      ind_head: `L1H${s.induction_head}`,
    }) + KINDS.map((kind) => (formed[kind] !== null && formed[kind] <= s.step
      ? " " + fill(this.t[`lesson_formed_${kind}`], { step: formed[kind] }) : "")).join("");
    const n = probe.tokens.length;
    for (const { kind, canvas, caption } of this.canvases) {
      draw(canvas, attentionTable(s[`${kind}_attention`], n), n);
      const head = kind === "induction" ? `L1H${s.induction_head}` : `L0H${s.previous_token_head}`;
      caption.textContent = fill(this.t[`lesson_${kind}_caption`], { head, step: s.step,
        score: this.number(s[kind]) });
      canvas.setAttribute("aria-label", caption.textContent);
    }
  }
}

// An (n, n) attention table as n×n pixels, darker for more weight (CSS scales it up)
function draw(canvas, table, n) {
  canvas.width = n;
  canvas.height = n;
  const context = canvas.getContext("2d");
  if (!context) return;
  const image = context.createImageData(n, n);
  for (let k = 0; k < n * n; k++) {
    const shade = Math.round(255 * (1 - Math.sqrt(table[k])));
    image.data[4 * k] = shade;
    image.data[4 * k + 1] = shade;
    image.data[4 * k + 2] = 255;
    image.data[4 * k + 3] = 255;
  }
  context.putImageData(image, 0, 0);
}

function decimalMark() {
  return String(document.documentElement.lang).startsWith("pt") ? "," : ".";
}

// The build's recording: it plays once through when it has loaded; the slider scrubs
class Player {
  constructor(mount, api, data) {
    this.t = (data && data.ui && (data.ui[api.language] || data.ui.en)) || {};
    this.mount = mount;
    this.timer = null;
    fetch(mount.dataset.recording).then((response) => {
      if (!response.ok) throw new Error(`${mount.dataset.recording}: HTTP ${response.status}`);
      return response.json();
    }).then((recording) => this.start(recording), (error) => {
      const note = element("p", "glr-message glr-message--error", `${error.message}`);
      note.setAttribute("role", "alert");
      mount.replaceChildren(note);
    });
  }

  start(recording) {
    this.recording = recording;
    const controls = element("div", "gl-lesson-controls");
    this.play = button(this.t.lesson_play, () => (this.timer ? this.stop() : this.run()));
    this.slider = element("input", "gl-lesson-slider");
    Object.assign(this.slider, { type: "range", min: 0, max: recording.history.length - 1, value: 0 });
    this.slider.setAttribute("aria-label", this.t.lesson_slider);
    this.slider.addEventListener("input", () => {
      this.stop();
      this.showAt(Number(this.slider.value));
    });
    controls.append(this.play, this.slider);
    const view = element("div", "gl-lesson-view");
    this.mount.replaceChildren(controls, view);
    this.view = new LessonView(view, this.t, decimalMark());
    this.showAt(0);
    const still = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    if (still) this.showAt(recording.history.length - 1);
    else this.run();
  }

  showAt(index) {
    this.index = index;
    this.slider.value = index;
    const r = this.recording;
    this.view.show(r.history, r.steps, index, r.probe);
    this.mount.dataset.step = r.history[index].step;
  }

  run() {
    if (this.index >= this.recording.history.length - 1) this.showAt(0);
    this.play.textContent = this.t.lesson_pause;
    this.timer = setInterval(() => {
      if (this.index >= this.recording.history.length - 1) this.stop();
      else this.showAt(this.index + 1);
    }, PLAY_MS);
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
    this.play.textContent = this.t.lesson_play;
  }
}

// The same lesson trained live in the worker: start, pause, step; after the last step one
// click silences a head (glassllm.lesson.ablate) and shows what happens to the copy
class Trainer {
  constructor(mount, api, data) {
    this.api = api;
    this.t = (data && data.ui && (data.ui[api.language] || data.ui.en)) || {};
    this.mount = mount;
    this.seed = Number(mount.dataset.seed) || 0;
    this.history = [];
    this.running = false;
    this.session = null;
    const controls = element("div", "gl-lesson-controls");
    controls.dataset.glassllmLive = ""; // the pointer here starts the runtime (glassllm.js)
    const mb = new Intl.NumberFormat(document.documentElement.lang || "en", { maximumFractionDigits: 1 })
      .format(((api.download && api.download.gzip) || 0) / 1e6);
    this.startButton = button(fill(this.t.lesson_start, { mb }), () => this.toggle());
    this.stepButton = button(this.t.lesson_step, () => this.stepOnce());
    this.stepButton.hidden = true;
    this.line = element("p", "gl-lesson-progress");
    this.line.setAttribute("aria-live", "polite");
    controls.append(this.startButton, this.stepButton);
    this.viewBox = element("div", "gl-lesson-view");
    this.ablation = element("div", "gl-lesson-ablation");
    mount.replaceChildren(controls, this.line, this.viewBox, this.ablation);
    api.addEventListener("progress", (event) => {
      if (!this.session) this.line.textContent = this.t[`stage_${event.detail.stage}`]
        ? fill(this.t[`stage_${event.detail.stage}`], { percent: Math.floor(100 * event.detail.loaded / Math.max(1, event.detail.total)) })
        : "";
    });
  }

  async begin() {
    if (this.session) return this.session;
    this.line.textContent = this.t.progress_label;
    const options = { seed: this.seed };
    // data-steps: a shorter lesson (its start is the full one's)
    if (this.mount.dataset.steps) options.steps = Number(this.mount.dataset.steps);
    const session = await this.api.lesson.start(options);
    this.session = session;
    this.view = new LessonView(this.viewBox, this.t, decimalMark());
    this.elapsed = 0;
    this.chunk = 1;
    return session;
  }

  async toggle() {
    if (this.running) {
      this.running = false;
      return;
    }
    this.running = true;
    this.startButton.textContent = this.t.lesson_pause;
    this.stepButton.hidden = true;
    try {
      await this.begin();
      while (this.running && !this.done) await this.advance(this.chunk);
    } catch (error) {
      this.fail(error);
    }
    this.running = false;
    this.startButton.textContent = this.t.lesson_resume;
    this.startButton.hidden = this.done;
    this.stepButton.hidden = this.done || !this.session;
  }

  // one snapshot's worth of steps
  async stepOnce() {
    if (this.running || this.done) return;
    this.stepButton.disabled = true;
    try {
      await this.begin();
      const every = this.session.snapshot_every;
      await this.advance(every - (this.step % every) || every);
    } catch (error) {
      this.fail(error);
    }
    this.stepButton.disabled = false;
    this.stepButton.hidden = this.done;
    this.startButton.hidden = this.done;
  }

  async advance(steps) {
    const started = performance.now();
    const before = this.step || 0;
    const reply = await this.api.lesson.advance(steps);
    const spent = performance.now() - started;
    this.step = reply.step;
    this.done = reply.done;
    if (reply.step > before) {
      this.elapsed += spent;
      // as many steps as fit in TARGET_MS at the pace so far, at most one snapshot's worth
      this.chunk = Math.max(1, Math.min(this.session.snapshot_every,
        Math.round(TARGET_MS / (spent / (reply.step - before)))));
    }
    this.history.push(...reply.snapshots);
    this.mount.dataset.step = String(this.step);
    this.view.show(this.history, this.session.steps, this.history.length - 1, this.session.probe);
    const left = timeLeft(this.step, this.session.steps, this.elapsed);
    this.line.textContent = this.done ? fill(this.t.lesson_done, { steps: this.step, time: formatDuration(this.elapsed) })
      : fill(this.t.lesson_progress, { step: this.step, steps: this.session.steps,
        left: left === null ? "…" : formatDuration(left) });
    if (this.done) this.offerAblation(reply.check);
  }

  offerAblation(check) {
    const last = this.history[this.history.length - 1];
    const prev = [0, last.previous_token_head];
    const other = [0, (last.previous_token_head + 1) % last.previous_token_scores.length];
    const result = element("p", "gl-lesson-ablated");
    result.setAttribute("aria-live", "polite");
    const silence = (head) => async () => {
      result.textContent = "…";
      try {
        const reply = await this.api.lesson.ablate([head]);
        result.textContent = fill(this.t.lesson_ablated, {
          head: `L${head[0]}H${head[1]}`, clean: fixed(reply.clean.second_copy_loss, 2, decimalMark()),
          edited: fixed(reply.edited.second_copy_loss, 2, decimalMark()),
          first: fixed(reply.edited.first_copy_loss, 2, decimalMark()),
        });
        this.mount.dataset.ablated = JSON.stringify(reply);
      } catch (error) {
        this.fail(error);
      }
    };
    this.ablation.replaceChildren(
      button(fill(this.t.lesson_ablate, { head: `L0H${prev[1]}` }), silence(prev)),
      button(fill(this.t.lesson_ablate_other, { head: `L0H${other[1]}` }), silence(other)),
      result);
    if (check) this.mount.dataset.check = JSON.stringify(check);
  }

  fail(error) {
    this.running = false;
    const note = element("p", "glr-message glr-message--error", error.kind === "cancelled"
      ? this.t.cancelled : fill(this.t.failed, { message: error.message }));
    note.setAttribute("role", "alert");
    this.line.replaceChildren(note);
  }
}
