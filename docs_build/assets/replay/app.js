/* glassllm replay: the player on the page — its state and the wiring between the reader's
 * actions, the pure modules that decide (format/ reads a file, play/ moves through its
 * events, inspect/ picks what to show) and the ui/ modules that draw.
 *
 * The page (docs/replay.md, docs/pt/replay.md) holds a mount element `.glassllm-replay` with
 * its UI strings in a JSON <script> block; boot.js loads the build's step table
 * (steps.json) and site.json, builds a Replay in the mount and hands it the recordings.
 *
 * A binary recording (version 2) is opened from its index alone; an event's values are
 * read when it is shown (render waits for them, then reads the next one ahead), so a
 * 30-layer run opens without reading or decoding its hundred megabytes.
 */

import { blobSource, bytesSource, eventReady, loadEvent, openRecording } from "./format/index.js";
import { cacheBoxText, cacheOf } from "./inspect/cache.js";
import { filterOptions } from "./play/filter-options.js";
import { keyAction } from "./play/keys.js";
import { nextEventOf } from "./play/next-event.js";
import { Player } from "./play/player.js";
import { speedOf, speedText } from "./play/speed.js";
import { siteEntry } from "./site.js";
import { reasonText, translate } from "./strings.js";
import { recordingLabels } from "./tokens.js";
import { clear, el } from "./ui/dom.js";
import { acceptDrops } from "./ui/drop.js";
import { drawEvent } from "./ui/event.js";
import { drawUpdate, drawUpdateInspector } from "./ui/update.js";
import { fillFilters, filterControls } from "./ui/filters.js";
import { drawInspector } from "./ui/inspector.js";
import { ModelMap } from "./ui/map.js";
import { drawSwitch, recordingPicker } from "./ui/picker.js";
import { drawSummary } from "./ui/summary.js";
import { timeline } from "./ui/timeline.js";
import { ACTIONS, showPlaying, transport } from "./ui/transport.js";

const FILE_KEY = "file"; // the reader's own recording, after the site's
const YOURS_KEY = "yours"; // the reader's text, recorded in this browser

/* The inspector's view of a recording, kept across its events: the index picked per leading
   axis, the window's offsets and whether the reader panned it, the grid cell that keeps the
   tab stop, and the step shown last (a new step opens on its own window). */
function freshView() {
  return { picks: {}, offsets: { row: 0, col: 0 }, panned: false, focusCell: null, shownStep: null };
}

export class Replay {
  /* `table`: the build's step table (steps.js), or null when it could not be loaded (then
     `unavailable` says why, and no file can be read). */
  constructor(mount, strings, site, table) {
    this.mount = mount;
    this.strings = strings;
    this.site = site;
    this.table = table;
    this.unavailable = "";
    this.lang = mount.getAttribute("data-lang") || document.documentElement.lang || "en";
    this.t = (key, vars) => translate(strings, key, vars);
    this.recordings = new Map(); // key -> { rec, title }, in the order site.json lists them
    this.current = null; // key of the shown recording
    this.player = null;
    this.timer = null;
    this.view = freshView();
    this.build();
  }

  reason(err) {
    return reasonText(this.t, err);
  }

  get rec() {
    return this.player ? this.player.rec : null;
  }

  /* What the ui/ modules draw with: the labels of the recording's own tokens (tokens.js,
     recordingLabels: the site's model's table, bytes, or what the file recorded). */
  context() {
    const rec = this.rec;
    if (this.labelled === undefined || this.labelled.rec !== rec) {
      this.labelled = { rec: rec, ...(rec ? recordingLabels(this.table, rec)
        : { labels: this.table.tokenLabels, bytes: this.table.tokenBytes }) };
    }
    return {
      t: this.t, strings: this.strings, labels: this.labelled.labels, tokenBytes: this.labelled.bytes, rec: rec,
      entry: (kind, stepId) => siteEntry(this.site, this.lang, kind, stepId)
    };
  }

  build() {
    const t = this.t;
    this.picker = recordingPicker(t, (file) => this.openFile(file));
    this.message = el("p", { className: "gr-message", role: "status", "aria-live": "polite" });
    this.summary = el("div", { className: "gr-summary" });
    this.transport = transport(t, (action) => this.act(action), () => {
      this.showSpeed();
      if (this.player && this.player.playing) this.schedule();
    });
    this.timeline = timeline(t, (index) => this.go(index));
    this.filters = filterControls(t, (name, value) => this.setFilter(name, value), () => this.clearFilters());
    this.eventBox = el("section", { className: "gr-event", "aria-live": "polite", "aria-label": t("currentEvent") });
    // the page's map of the model (if any) moves in beside the event and follows it
    this.map = ModelMap.find(document, (stepId) => this.pickStep(stepId));
    this.inspector = el("section", { className: "gr-inspector", "aria-label": t("inspector") });
    const root = el("div", { className: "gr" }, [
      this.picker.row, this.message, this.summary, this.transport.row, this.timeline.row,
      this.filters.row, el("p", { className: "gr-keys", text: t("keys") }),
      this.map ? el("div", { className: "gr-event-row" }, [this.eventBox, this.map.figure]) : this.eventBox,
      this.inspector
    ]);
    clear(this.mount);
    this.mount.appendChild(root);
    this.root = root;
    this.showSpeed();
    this.setBusy(true);
    acceptDrops(root, (file) => this.openFile(file));
    // a run of the reader's text, recorded in this browser (runtime/panel.js, record mode)
    document.addEventListener("glassllm:recording", (ev) => this.openYours(ev.detail));
    document.addEventListener("keydown", (ev) => this.onKey(ev));
  }

  setBusy(busy) {
    for (const name of ACTIONS) this.transport.buttons[name].disabled = busy;
    this.timeline.input.disabled = busy;
    for (const select of Object.values(this.filters.selects)) select.disabled = busy;
    this.filters.clearButton.disabled = busy;
  }

  say(text, isError) {
    this.message.textContent = text;
    this.message.setAttribute("role", isError ? "alert" : "status");
    this.message.classList.toggle("gr-message--error", Boolean(isError));
  }

  // -- recordings --------------------------------------------------------------------------

  renderSwitch() {
    const keys = Array.from(this.recordings.keys()).filter((k) => k !== FILE_KEY && k !== YOURS_KEY);
    for (const key of [YOURS_KEY, FILE_KEY]) if (this.recordings.has(key)) keys.push(key);
    drawSwitch(this.picker.switchBox, keys.map((key) => [key, this.recordings.get(key).title]), this.current, (key) => {
      try {
        this.switchTo(key);
      } catch (err) {
        this.say(this.reason(err), true);
      }
    });
  }

  /* What a failed switch puts back: the recording, its event, filters and inspector. */
  saved() {
    if (!this.player) return null;
    const view = this.view;
    return {
      key: this.current, player: this.player.snapshot(), recordings: new Map(this.recordings),
      view: Object.assign({}, view, { picks: Object.assign({}, view.picks), offsets: Object.assign({}, view.offsets) })
    };
  }

  /* Show recording `key` from its first event, or as `state` (a saved()) had it. */
  present(key, state) {
    this.stop();
    const player = new Player(this.recordings.get(key).rec);
    const speed = this.transport.speed;
    player.speed = speedOf(speed.value);
    this.view = freshView();
    if (state) {
      player.restore(state.player);
      player.speed = speedOf(speed.value);
      this.view = state.view;
    }
    this.player = player;
    this.current = key;
    this.timeline.input.max = String(player.last);
    this.fillFilters();
    this.renderSwitch();
    drawSummary(this.summary, this.context());
    this.setBusy(false);
    this.render();
  }

  /* Switch recordings as one step: on any failure the page is put back as it was. */
  switchTo(key, change) {
    const before = this.saved();
    try {
      if (change) change();
      this.present(key, null);
    } catch (err) {
      if (before) {
        this.recordings = before.recordings;
        this.present(before.key, before);
      }
      throw err;
    }
  }

  openFile(file) {
    const name = file.name || "file";
    if (!this.table) {
      this.say(this.unavailable, true);
      this.picker.fileInput.value = "";
      return;
    }
    // the whole file (version 1) or the whole index (version 2) is checked, and the first
    // event read, before anything on the page changes
    openRecording(blobSource(file), this.table).then(async (rec) => {
      await loadEvent(rec, rec.events[0]);
      this.switchTo(FILE_KEY, () => this.recordings.set(FILE_KEY, { rec: rec, title: this.t("recFile", { name: name }) }));
      this.say(this.t("opened", { name: name, count: rec.events.length }));
    }).catch((err) => {
      this.say(this.t("notRecording", { name: name, reason: this.reason(err) }), true);
    }).then(() => {
      this.picker.fileInput.value = "";
    });
  }

  /* The reader's text, generated and recorded in this page (glassllm.record): opened like a
     file, as the recording "yours". */
  openYours(detail) {
    if (!this.table) {
      this.say(this.unavailable, true);
      return;
    }
    openRecording(bytesSource(detail.bytes), this.table).then(async (rec) => {
      await loadEvent(rec, rec.events[0]);
      this.switchTo(YOURS_KEY, () => this.recordings.set(YOURS_KEY, { rec: rec, title: this.t("recYours", { text: detail.text }) }));
      this.say(this.t("openedYours", { text: detail.text, count: rec.events.length }));
    }).catch((err) => {
      this.say(this.t("notRecording", { name: this.t("recYours", { text: detail.text }), reason: this.reason(err) }), true);
    });
  }

  // -- filters -----------------------------------------------------------------------------

  fillFilters() {
    const ctx = this.context();
    const options = filterOptions(ctx, (stepId) => ctx.entry("labels", stepId) || "");
    fillFilters(this.filters, this.t, options, this.player.filters, this.rec.kind === "generation");
  }

  setFilter(name, value) {
    if (name === "head" && value !== "") this.view.picks.head = Number(value);
    if (this.player.setFilter(name, value)) this.say("");
    else this.say(this.t("noMatch"), true);
    this.render();
  }

  clearFilters() {
    this.player.clearFilters();
    for (const select of Object.values(this.filters.selects)) select.value = "";
    this.say("");
    this.render();
  }

  // -- transport ---------------------------------------------------------------------------

  showSpeed() {
    const speed = speedOf(this.transport.speed.value);
    if (this.player) this.player.speed = speed;
    this.transport.speedOut.textContent = this.t("speedValue", { speed: speedText(speed) });
  }

  act(action) {
    if (!this.player) return;
    if (action === "play") this.play();
    else if (action === "pause") this.pause();
    else if (action === "next" || action === "prev") {
      this.pause();
      if (this.player.step(action === "next" ? 1 : -1)) this.render();
    }
  }

  play() {
    if (this.player.playing) return;
    this.player.play();
    this.render();
    this.schedule();
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const moved = this.player.tick();
      this.render();
      if (moved) this.schedule();
    }, this.player.delay());
  }

  stop() {
    clearTimeout(this.timer);
    if (this.player) this.player.pause();
  }

  pause() {
    this.stop();
    this.updateButtons();
  }

  updateButtons() {
    showPlaying(this.transport, this.root, Boolean(this.player && this.player.playing), Boolean(this.player));
  }

  go(index) {
    this.stop();
    this.player.go(index);
    this.render();
  }

  /* A box of the map: with a step filter set, filter on that step; else its next event. */
  pickStep(stepId) {
    if (!this.player || this.rec.stepIds.indexOf(stepId) < 0) return false;
    if (this.player.filters.step) {
      this.filters.selects.step.value = stepId;
      this.setFilter("step", stepId);
      return true;
    }
    const index = nextEventOf(this.rec.events, stepId, this.player.index);
    if (index >= 0) this.go(index);
    return index >= 0;
  }

  onKey(ev) {
    if (!this.player || !document.body.contains(this.mount)) return;
    const action = keyAction(ev);
    if (!action) return;
    ev.preventDefault();
    if (action !== "toggle") this.act(action);
    else if (this.player.playing) this.pause();
    else this.play();
  }

  // -- rendering ---------------------------------------------------------------------------

  render() {
    const rec = this.rec;
    const player = this.player;
    const e = player.event;
    if (e.step !== this.view.shownStep) this.view.panned = false; // a new step opens on its own window
    this.view.shownStep = e.step;
    this.timeline.input.value = String(player.index);
    this.timeline.output.textContent = this.t("eventOf", { i: player.index + 1, n: rec.events.length });
    this.filters.matchOut.textContent = player.filtered()
      ? this.t("matching", { count: player.matchCount(), total: rec.events.length }) : "";
    this.updateButtons();
    if (!eventReady(rec, e)) {
      // its bytes are on their way: the previous event stays until they are here
      this.eventBox.setAttribute("aria-busy", "true");
      loadEvent(rec, e).then(() => {
        if (this.player === player && player.event === e) this.render();
      }, (err) => {
        if (this.player === player) {
          this.say(this.t("loadFailed", { url: this.recordings.get(this.current).title, error: this.reason(err) }), true);
        }
      });
      return;
    }
    this.eventBox.removeAttribute("aria-busy");
    // a training step's update: one parameter's AdamW step, its sampled weights in a table
    if (e.param) drawUpdate(this.eventBox, e, player.index, this.context());
    else drawEvent(this.eventBox, e, player.index, this.context());
    this.renderInspector(e);
    if (this.map) {
      this.map.show(e.param ? null : e.step, rec.stepIds);
      const cache = cacheOf(rec, e);
      this.map.showCache(cache, cache ? cacheBoxText(this.t, cache, e.gen, rec.generated.length)
        : this.t(rec.kind === "generation" ? "mapNoCache" : "mapCacheLoss"));
    }
    // read the next event ahead, so that playing and stepping need not wait for it
    const next = rec.events[player.index + 1];
    if (next && !eventReady(rec, next)) loadEvent(rec, next).catch(() => {});
  }

  renderInspector(e) {
    if (e.param) {
      drawUpdateInspector(this.inspector, e, this.context());
      return;
    }
    drawInspector(this.inspector, e, this.context(), this.view, () => this.renderInspector(e));
  }
}
