/* glassllm replay: the page's controls — building the player in its mount element, loading
 * the recordings, and drawing the current event and the inspector. The logic it draws
 * lives in the pure modules: replay-format.js (reading a file), replay-player.js (events,
 * filters, timing) and replay-inspector.js (slices, windows, numbers, colours).
 *
 * The page (docs/replay.md, docs/pt/replay.md) holds a mount element `.glassllm-replay` with
 * its UI strings in a JSON <script> block. The recordings the page offers are listed in
 * site.json, next to this file (docs_build/replay.py writes both).
 *
 * A binary recording (version 2) is opened from its index alone; an event's values are
 * read when it is shown (render waits for them, then reads the next one ahead), so a
 * 30-layer run opens without reading or decoding its hundred megabytes.
 */

import {
  RecordingError, blobSource, eventReady, fileStepInfo, loadEvent, openRecording, urlSource
} from "./replay-format.js";
import { Player, speedOf, speedText } from "./replay-player.js";
import { ModelMap, nextEventOf } from "./replay-map.js";
import {
  WINDOW_COLS, WINDOW_ROWS, TOKEN_AXES, axesOf, causalMasked, cellColour, chosenColumn,
  colourScale, exactText, headGroup, maskedShown, panned, scaleSpan, setPick, sequenceOf,
  shortText, sliceOf, statsOf, tokenText, topEntries, utf8, windowOf, windowSpan
} from "./replay-inspector.js";

const BASE = new URL(".", import.meta.url);
const FILE_KEY = "file"; // the reader's own recording, after the site's

// Inline SVG icons (24x24 paths): no icon font, no request, and no glyph the reader's
// fonts may lack.
const ICONS = {
  prev: "M6 6h2v12H6zM20 6v12l-10-6z",
  play: "M8 5v14l11-7z",
  pause: "M6 5h4v14H6zM14 5h4v14h-4z",
  next: "M16 6h2v12h-2zM4 6v12l10-6z"
};

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children || []) {
    if (child !== null && child !== undefined) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  return node;
}

function icon(path) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "gr-icon");
  const shape = document.createElementNS(ns, "path");
  shape.setAttribute("d", path);
  svg.appendChild(shape);
  return svg;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/* One chip per byte token: the random-weight model often produces bytes that are not
   valid UTF-8 on their own, and the chips show exactly what was produced. */
function chips(tokens, nextToken, nextTitle) {
  const box = el("span", { className: "gr-sequence" },
    tokens.map((b) => el("span", { className: "gr-token", text: tokenText(b) })));
  if (nextToken !== undefined) {
    box.appendChild(el("span", { className: "gr-token gr-token--next", title: nextTitle, text: tokenText(nextToken) }));
  }
  return box;
}

class Replay {
  constructor(mount, strings, site) {
    this.mount = mount;
    this.strings = strings;
    this.site = site;
    this.lang = mount.getAttribute("data-lang") || document.documentElement.lang || "en";
    this.recordings = new Map(); // key -> { rec, title }, in the order site.json lists them
    this.current = null; // key of the shown recording
    this.player = null;
    this.timer = null;
    this.resetView();
    this.build();
  }

  resetView() {
    this.picks = {}; // chosen index per leading axis name, kept across events
    this.offsets = { row: 0, col: 0 };
    this.panned = false;
    this.focusCell = null; // [row, col] of the grid cell that keeps the tab stop
    this.shownStep = null;
  }

  t(key, vars) {
    const text = this.strings[key];
    if (typeof text !== "string") {
      console.error("glassllm replay: the page has no UI string '" + key + "'");
      return key;
    }
    return text.replace(/\{(\w+)\}/g, (all, name) => (vars && name in vars ? String(vars[name]) : all));
  }

  reason(err) {
    return err instanceof RecordingError ? this.t(err.reason, err.vars)
      : this.t("reasonBroken", { detail: String((err && err.message) || err) });
  }

  /* site.json's entry of a step for the page's language: "labels", "pages" or "sources". */
  siteEntry(kind, stepId) {
    const table = this.site[kind] && this.site[kind][this.lang];
    return table && Object.prototype.hasOwnProperty.call(table, stepId) ? table[stepId] : null;
  }

  label(stepId) {
    return this.siteEntry("labels", stepId) || "";
  }

  get rec() {
    return this.player ? this.player.rec : null;
  }

  build() {
    const t = this.t.bind(this);
    const root = el("div", { className: "gr" });

    // which recording
    this.switchBox = el("div", { className: "gr-switch", role: "radiogroup", "aria-label": t("recording") });
    this.fileInput = el("input", {
      type: "file", accept: ".glrec,.json,application/json", className: "gr-file-input", id: "gr-file",
      onchange: () => { if (this.fileInput.files[0]) this.openFile(this.fileInput.files[0]); }
    });
    root.appendChild(el("div", { className: "gr-top" }, [
      el("span", { className: "gr-caption", text: t("recording") }), this.switchBox,
      el("div", { className: "gr-drop" }, [
        this.fileInput,
        el("label", { "for": "gr-file", className: "md-button gr-file-label", text: t("open") }),
        el("span", { className: "gr-drop-hint", text: t("dropHint") })
      ])
    ]));
    this.message = el("p", { className: "gr-message", role: "status", "aria-live": "polite" });
    root.appendChild(this.message);
    this.summary = el("div", { className: "gr-summary" });
    root.appendChild(this.summary);

    // transport
    const button = (action, text) => el("button", {
      type: "button", className: "md-button gr-button", "data-action": action, title: text,
      onclick: () => this.act(action)
    }, [icon(ICONS[action]), el("span", { className: "gr-button-text", text: text })]);
    this.buttons = {
      prev: button("prev", t("prev")),
      play: button("play", t("play")),
      pause: button("pause", t("pause")),
      next: button("next", t("next"))
    };
    this.speed = el("input", {
      type: "range", min: 0, max: 100, step: 1, value: 35, id: "gr-speed",
      oninput: () => {
        this.showSpeed();
        if (this.player && this.player.playing) this.schedule();
      }
    });
    this.speedOut = el("output", { "for": "gr-speed", className: "gr-speed-out" });
    root.appendChild(el("div", { className: "gr-controls" }, [
      this.buttons.prev, this.buttons.play, this.buttons.pause, this.buttons.next,
      el("label", { "for": "gr-speed", className: "gr-speed-label", text: t("speed") }),
      this.speed, this.speedOut
    ]));

    // timeline
    this.timeline = el("input", {
      type: "range", min: 0, max: 0, step: 1, value: 0, id: "gr-timeline", className: "gr-timeline",
      oninput: () => this.go(Number(this.timeline.value))
    });
    this.timelineOut = el("output", { "for": "gr-timeline", className: "gr-timeline-out" });
    root.appendChild(el("div", { className: "gr-timeline-row" }, [
      el("label", { "for": "gr-timeline", text: t("timeline") }), this.timeline, this.timelineOut
    ]));

    // filters
    this.selects = {};
    const filterRow = el("fieldset", { className: "gr-filters" }, [el("legend", { text: t("filters") })]);
    for (const [name, text] of [["step", t("step")], ["layer", t("layer")], ["head", t("head")], ["gen", t("gen")]]) {
      const id = "gr-filter-" + name;
      const select = el("select", {
        id: id, "data-filter": name, onchange: () => this.setFilter(name, select.value)
      });
      this.selects[name] = select;
      filterRow.appendChild(el("span", { className: "gr-filter gr-filter--" + name }, [
        el("label", { "for": id, text: text }), select
      ]));
    }
    this.clearButton = el("button", {
      type: "button", className: "md-button gr-button", "data-action": "clear-filters",
      text: t("clearFilters"), onclick: () => this.clearFilters()
    });
    this.matchOut = el("span", { className: "gr-match", "aria-live": "polite" });
    filterRow.appendChild(this.clearButton);
    filterRow.appendChild(this.matchOut);
    root.appendChild(filterRow);
    root.appendChild(el("p", { className: "gr-keys", text: t("keys") }));

    // current event + inspector
    this.eventBox = el("section", { className: "gr-event", "aria-live": "polite", "aria-label": t("currentEvent") });
    // the page's map of the model (if any) moves in beside the event and follows it
    this.map = ModelMap.find(document, (stepId) => this.pickStep(stepId));
    root.appendChild(this.map ? el("div", { className: "gr-event-row" }, [this.eventBox, this.map.figure])
      : this.eventBox);
    this.inspector = el("section", { className: "gr-inspector", "aria-label": t("inspector") });
    root.appendChild(this.inspector);

    clear(this.mount);
    this.mount.appendChild(root);
    this.root = root;
    this.showSpeed();
    this.setBusy(true);

    // drag and drop anywhere on the widget
    for (const type of ["dragenter", "dragover"]) {
      root.addEventListener(type, (ev) => {
        if (!ev.dataTransfer || Array.prototype.indexOf.call(ev.dataTransfer.types, "Files") < 0) return;
        ev.preventDefault();
        ev.dataTransfer.dropEffect = "copy";
        root.classList.add("gr--dragging");
      });
    }
    root.addEventListener("dragleave", (ev) => {
      if (!root.contains(ev.relatedTarget)) root.classList.remove("gr--dragging");
    });
    root.addEventListener("drop", (ev) => {
      root.classList.remove("gr--dragging");
      if (!ev.dataTransfer || !ev.dataTransfer.files.length) return;
      ev.preventDefault();
      this.openFile(ev.dataTransfer.files[0]);
    });
    document.addEventListener("keydown", (ev) => this.onKey(ev));
  }

  setBusy(busy) {
    for (const name of ["prev", "play", "pause", "next"]) this.buttons[name].disabled = busy;
    this.timeline.disabled = busy;
    for (const select of Object.values(this.selects)) select.disabled = busy;
    this.clearButton.disabled = busy;
  }

  say(text, isError) {
    this.message.textContent = text;
    this.message.setAttribute("role", isError ? "alert" : "status");
    this.message.classList.toggle("gr-message--error", Boolean(isError));
  }

  // -- recordings --------------------------------------------------------------------------

  renderSwitch() {
    clear(this.switchBox);
    const keys = Array.from(this.recordings.keys()).filter((k) => k !== FILE_KEY);
    if (this.recordings.has(FILE_KEY)) keys.push(FILE_KEY);
    for (const key of keys) {
      const id = "gr-rec-" + key;
      const input = el("input", {
        type: "radio", name: "gr-recording", id: id, value: key, "data-recording": key,
        checked: key === this.current,
        onchange: () => {
          if (!input.checked) return;
          try {
            this.switchTo(key);
          } catch (err) {
            this.say(this.reason(err), true);
          }
        }
      });
      this.switchBox.appendChild(el("span", { className: "gr-switch-item" }, [
        input, el("label", { "for": id, text: this.recordings.get(key).title })
      ]));
    }
  }

  /* What a failed switch puts back: the recording, its event, filters and inspector. */
  view() {
    if (!this.player) return null;
    return {
      key: this.current, player: this.player.snapshot(), picks: Object.assign({}, this.picks),
      offsets: Object.assign({}, this.offsets), panned: this.panned,
      focusCell: this.focusCell, shownStep: this.shownStep, recordings: new Map(this.recordings)
    };
  }

  /* Show recording `key` from its first event, or as `state` (a view()) had it. */
  present(key, state) {
    this.stop();
    const player = new Player(this.recordings.get(key).rec);
    player.speed = speedOf(this.speed.value);
    this.resetView();
    if (state) {
      player.restore(state.player);
      player.speed = speedOf(this.speed.value);
      Object.assign(this, {
        picks: state.picks, offsets: state.offsets, panned: state.panned,
        focusCell: state.focusCell, shownStep: state.shownStep
      });
    }
    this.player = player;
    this.current = key;
    this.timeline.max = String(player.last);
    this.fillFilters();
    this.renderSwitch();
    this.renderSummary();
    this.setBusy(false);
    this.render();
  }

  /* Switch recordings as one step: on any failure the page is put back as it was. */
  switchTo(key, change) {
    const before = this.view();
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
    // the whole file (version 1) or the whole index (version 2) is checked, and the first
    // event read, before anything on the page changes
    openRecording(blobSource(file)).then(async (rec) => {
      await loadEvent(rec, rec.events[0]);
      this.switchTo(FILE_KEY, () => this.recordings.set(FILE_KEY, { rec: rec, title: this.t("recFile", { name: name }) }));
      this.say(this.t("opened", { name: name, count: rec.events.length }));
    }).catch((err) => {
      this.say(this.t("notRecording", { name: name, reason: this.reason(err) }), true);
    }).then(() => {
      this.fileInput.value = "";
    });
  }

  renderSummary() {
    const rec = this.rec;
    const t = this.t.bind(this);
    clear(this.summary);
    const rows = [[t(rec.kind === "generation" ? "prompt" : "inputs"), rec.prompt]];
    if (rec.kind === "generation") rows.push([t("generated"), rec.generated]);
    else rows.push([t("targets"), rec.targets]);
    const list = el("dl", { className: "gr-run" });
    for (const [name, tokens] of rows) {
      list.appendChild(el("dt", { text: name }));
      list.appendChild(el("dd", {}, [el("q", { text: utf8(tokens) }), " ", chips(tokens)]));
    }
    const cfg = rec.config;
    list.appendChild(el("dt", { text: t("model") }));
    list.appendChild(el("dd", {
      text: t("modelValue", {
        layers: cfg.n_layers, d: cfg.d_model, heads: cfg.n_heads, kv: cfg.n_kv_heads,
        ff: cfg.d_ff, seed: cfg.seed
      })
    }));
    if (rec.kind === "loss") {
      list.appendChild(el("dt", { text: t("loss") }));
      list.appendChild(el("dd", { text: exactText(Math.fround(rec.loss)) }));
    }
    this.summary.appendChild(list);
  }

  // -- filters -----------------------------------------------------------------------------

  fillFilters() {
    const rec = this.rec;
    const t = this.t.bind(this);
    const fill = (select, anyText, options) => {
      clear(select);
      select.appendChild(el("option", { value: "", text: anyText }));
      for (const [value, text] of options) select.appendChild(el("option", { value: value, text: text }));
    };
    fill(this.selects.step, t("anyStep"), rec.stepIds.map((id) => {
      const label = this.label(id);
      return [id, label ? id + " — " + label : id];
    }));
    const range = (n) => Array.from({ length: n }, (_, i) => [String(i), String(i)]);
    fill(this.selects.layer, t("anyLayer"), range(rec.config.n_layers));
    fill(this.selects.head, t("anyHead"), range(rec.config.n_heads));
    fill(this.selects.gen, t("anyGen"), rec.generated.map((tok, g) => [String(g), t("genOption", { k: g, token: tokenText(tok) })]));
    this.selects.gen.parentNode.hidden = rec.kind !== "generation";
    for (const [name, select] of Object.entries(this.selects)) select.value = this.player.filters[name];
  }

  setFilter(name, value) {
    if (name === "head" && value !== "") this.picks.head = Number(value);
    if (this.player.setFilter(name, value)) this.say("");
    else this.say(this.t("noMatch"), true);
    this.render();
  }

  clearFilters() {
    this.player.clearFilters();
    for (const select of Object.values(this.selects)) select.value = "";
    this.say("");
    this.render();
  }

  // -- transport ---------------------------------------------------------------------------

  showSpeed() {
    const speed = speedOf(this.speed.value);
    if (this.player) this.player.speed = speed;
    this.speedOut.textContent = this.t("speedValue", { speed: speedText(speed) });
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
      if (moved) {
        this.render();
        this.schedule();
      } else {
        this.render();
      }
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
    const playing = Boolean(this.player && this.player.playing);
    this.buttons.play.disabled = playing || !this.player;
    this.buttons.pause.disabled = !playing;
    this.root.classList.toggle("gr--playing", playing);
    // keep keyboard focus on the transport when the focused button becomes disabled
    if (playing && document.activeElement === this.buttons.play) this.buttons.pause.focus();
    if (!playing && document.activeElement === this.buttons.pause) this.buttons.play.focus();
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
      this.selects.step.value = stepId;
      this.setFilter("step", stepId);
      return true;
    }
    const index = nextEventOf(this.rec.events, stepId, this.player.index);
    if (index >= 0) this.go(index);
    return index >= 0;
  }

  onKey(ev) {
    if (!this.player || !document.body.contains(this.mount)) return;
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented) return;
    const target = ev.target;
    const tag = target && target.tagName;
    const type = tag === "INPUT" ? (target.type || "text") : "";
    const typing = tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable) ||
      (tag === "INPUT" && type !== "button" && type !== "checkbox" && type !== "radio" && type !== "file");
    if (typing) return;
    if (target && target.closest && target.closest(".gr-grid")) return; // grid arrows move the cell
    if (ev.key === " " || ev.key === "Spacebar") {
      // a focused button or radio reacts to space by itself
      if (tag === "BUTTON" || type === "radio" || type === "checkbox" || type === "file" || tag === "A") return;
      ev.preventDefault();
      if (this.player.playing) this.pause();
      else this.play();
    } else if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
      if (type === "radio") return; // arrows move between the recordings
      ev.preventDefault();
      this.act(ev.key === "ArrowRight" ? "next" : "prev");
    }
  }

  // -- rendering ---------------------------------------------------------------------------

  render() {
    const rec = this.rec;
    const player = this.player;
    const e = player.event;
    if (e.step !== this.shownStep) this.panned = false; // a new step opens on its own window
    this.shownStep = e.step;
    this.timeline.value = String(player.index);
    this.timelineOut.textContent = this.t("eventOf", { i: player.index + 1, n: rec.events.length });
    this.matchOut.textContent = player.filtered()
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
    this.renderEvent(e);
    this.renderInspector(e);
    if (this.map) this.map.show(e.step, rec.stepIds);
    // read the next event ahead, so that playing and stepping need not wait for it
    const next = rec.events[player.index + 1];
    if (next && !eventReady(rec, next)) loadEvent(rec, next).catch(() => {});
  }

  siteUrl(path) {
    // the replay files sit in <site>/assets/replay/, next to this module
    return new URL("../../" + path, BASE).href;
  }

  renderEvent(e) {
    const rec = this.rec;
    const t = this.t.bind(this);
    const info = fileStepInfo(rec, e.step);
    const box = this.eventBox;
    clear(box);
    box.setAttribute("data-event-index", String(this.player.index));
    box.setAttribute("data-step-id", e.step);
    box.setAttribute("data-layer", e.layer === null ? "" : String(e.layer));
    if (e.gen !== null) box.setAttribute("data-gen", String(e.gen));
    else box.removeAttribute("data-gen");

    const label = this.label(e.step);
    box.appendChild(el("h3", { className: "gr-event-title" }, [
      el("code", { className: "gr-step-id", text: e.step }), label ? " " : null,
      label ? el("span", { className: "gr-step-label", text: label }) : null
    ]));

    const facts = el("dl", { className: "gr-facts" });
    const fact = (name, value) => {
      facts.appendChild(el("dt", { text: name }));
      facts.appendChild(el("dd", {}, [value]));
    };
    const cfg = rec.config;
    fact(t("layer"), e.layer === null ? t("noLayer") : t("layerOf", { layer: e.layer, count: cfg.n_layers }));
    const axes = axesOf(e);
    if (axes[0] === "head") fact(t("heads"), t("headsQuery", { count: cfg.n_heads }));
    else if (axes[0] === "kv_head") fact(t("heads"), t("headsKv", { count: cfg.n_kv_heads, group: headGroup(cfg) }));
    else fact(t("heads"), t("noHeads"));
    if (rec.kind === "generation") {
      const produced = rec.generated[e.gen];
      fact(t("gen"), el("span", {}, [
        t("genValue", { k: e.gen, n: rec.generated.length, token: tokenText(produced) }), " ",
        chips(sequenceOf(rec, e), produced, t("producing"))
      ]));
    } else {
      fact(t("pass"), t("lossPass", { n: rec.prompt.length }));
    }
    fact(t("shape"), el("span", {}, [
      el("code", { text: "(" + e.shape.join(", ") + (e.shape.length === 1 ? "," : "") + ")" }), " " + e.dtype
    ]));
    if (e.values.length > 1) fact(t("stats"), this.statsText(e));
    box.appendChild(facts);

    const eq = el("div", { className: "gr-equation", "aria-label": info.plain });
    box.appendChild(eq);
    if (window.katex && info.latex) {
      try {
        window.katex.render(info.latex, eq, { displayMode: true, throwOnError: false });
      } catch (err) {
        eq.textContent = info.plain || info.latex;
      }
    } else {
      eq.textContent = info.plain || info.latex;
    }

    const links = el("p", { className: "gr-links" });
    // links follow the site's scheme (site.json, written with the step pages' own URLs)
    const page = this.siteEntry("pages", e.step);
    if (page) links.appendChild(el("a", { href: this.siteUrl(page), text: t("stepPage", { id: e.step }) }));
    const src = this.siteEntry("sources", e.step);
    const where = src || info.source;
    if (where) {
      if (links.firstChild) links.appendChild(document.createTextNode(" · "));
      const text = t("sourceLink", { file: where.file, line: where.line });
      links.appendChild(src ? el("a", { href: this.siteUrl(src.url), text: text }) : el("span", { text: text }));
    }
    box.appendChild(links);
  }

  statsText(e) {
    const s = statsOf(e.values);
    let text = s.finite ? this.t("statsValue", {
      min: shortText(s.min, e.dtype), max: shortText(s.max, e.dtype), mean: shortText(s.mean)
    }) : "";
    if (s.finite < s.count) text += (text ? " · " : "") + this.t("nonFinite", { count: s.count - s.finite });
    return text;
  }

  /* Leading axes get selectors; the last two (or one) form the slice. */
  renderInspector(e) {
    const t = this.t.bind(this);
    const box = this.inspector;
    clear(box);
    box.appendChild(el("h3", { text: t("inspector") }));

    if (e.shape.length === 0) {
      const raw = exactText(e.values[0], e.dtype);
      const text = e.step === "sample" ? raw + " (" + tokenText(e.values[0]) + ")" : raw;
      box.appendChild(el("p", { className: "gr-scalar" }, [
        el("span", { className: "gr-scalar-name", text: t("scalar") + " " }),
        el("output", { className: "gr-cell gr-scalar-value", "data-value": raw, title: raw, text: text })
      ]));
      return;
    }

    // selectors for the leading axes; the head axis follows the head filter / last pick
    const slice = sliceOf(e, this.picks, this.rec.config);
    if (slice.lead.length) {
      const selectors = el("div", { className: "gr-axes" });
      slice.lead.forEach((lead, a) => {
        const id = "gr-axis-" + a;
        const select = el("select", { id: id, "data-axis": lead.axis, className: "gr-axis-select" });
        for (let i = 0; i < lead.size; i++) {
          select.appendChild(el("option", { value: String(i), text: this.axisLabel(lead.axis, i, e) }));
        }
        select.value = String(lead.pick);
        select.addEventListener("change", () => {
          setPick(this.picks, lead.axis, Number(select.value), this.rec.config);
          this.renderInspector(e);
          const again = this.inspector.querySelector('select[data-axis="' + CSS.escape(lead.axis) + '"]');
          if (again) again.focus();
        });
        selectors.appendChild(el("span", { className: "gr-axis" }, [
          el("label", { "for": id, text: this.axisName(lead.axis) }), select
        ]));
      });
      box.appendChild(selectors);
    }
    this.renderGrid(box, e, slice);
  }

  axisName(name) {
    const key = "axis_" + name;
    return typeof this.strings[key] === "string" ? this.t(key) : name;
  }

  axisLabel(name, i, e) {
    if (name === "kv_head") {
      const group = headGroup(this.rec.config);
      return this.t("kvHeadOption", { kv: i, from: i * group, to: (i + 1) * group - 1 });
    }
    if (TOKEN_AXES.indexOf(name) >= 0) return i + " " + tokenText(sequenceOf(this.rec, e)[i]);
    if (name === "vocab") return i + " " + tokenText(i);
    return String(i);
  }

  /* The largest entries of a 1-D vocabulary slice (probs), most likely first. */
  topList(e, values) {
    const chosen = chosenColumn(this.rec, e, 0, 1, "vocab");
    const list = el("p", { className: "gr-top-list" }, [this.t("top") + " "]);
    for (const i of topEntries(values, 5)) {
      list.appendChild(el("span", { className: "gr-token" + (i === chosen ? " gr-token--next" : ""), text: tokenText(i) }));
      list.appendChild(document.createTextNode(" " + shortText(values[i]) + "  "));
    }
    return list;
  }

  renderGrid(box, e, slice) {
    const rec = this.rec;
    const t = this.t.bind(this);
    const { rows, cols, rowAxis, colAxis, values } = slice;
    const masked = (r, c) => causalMasked(e, slice, r, c);
    const scale = colourScale(values, (i) => masked(Math.floor(i / cols), i % cols));
    const focusCol = chosenColumn(rec, e, rec.kind === "generation" ? rows - 1 : 0, rows, colAxis);
    const win = windowOf(rows, cols, this.offsets, focusCol, this.panned);
    const { r0, r1, c0, c1 } = win;

    // panning controls when the slice is larger than the window
    const pan = (kind, delta, text, glyph) => el("button", {
      type: "button", className: "md-button gr-button gr-pan",
      "data-action": "pan-" + kind + (delta < 0 ? "-back" : "-forward"), "aria-label": text, title: text,
      onclick: () => {
        this.offsets[kind] = kind === "row" ? panned(r0, delta, WINDOW_ROWS) : panned(c0, delta, WINDOW_COLS);
        if (kind === "row") this.offsets.col = c0;
        this.panned = true;
        this.renderInspector(e);
      }
    }, [glyph]);
    const windowInfo = el("div", { className: "gr-window" });
    const rowText = t("windowRows", Object.assign({ count: rows }, windowSpan(r0, r1)));
    const colText = t("windowCols", Object.assign({ count: cols }, windowSpan(c0, c1)));
    if (rows > WINDOW_ROWS) {
      const rowPan = el("span", { className: "gr-pan-group" }, [pan("row", -1, t("panUp"), "▲"), pan("row", 1, t("panDown"), "▼")]);
      rowPan.firstChild.disabled = r0 === 0;
      rowPan.lastChild.disabled = r1 >= rows;
      windowInfo.appendChild(el("span", {}, [rowText, " ", rowPan]));
    } else if (rowAxis) {
      windowInfo.appendChild(el("span", { text: rowText }));
    }
    if (cols > WINDOW_COLS) {
      const colPan = el("span", { className: "gr-pan-group" }, [pan("col", -1, t("panLeft"), "◀"), pan("col", 1, t("panRight"), "▶")]);
      colPan.firstChild.disabled = c0 === 0;
      colPan.lastChild.disabled = c1 >= cols;
      windowInfo.appendChild(el("span", {}, [colText, " ", colPan]));
    } else {
      windowInfo.appendChild(el("span", { text: colText }));
    }
    box.appendChild(windowInfo);
    if (rows === 1 && colAxis === "vocab") box.appendChild(this.topList(e, values));

    const readout = el("p", { className: "gr-readout", "aria-live": "polite" });
    const table = el("table", { className: "gr-grid", role: "grid", "aria-label": t("slice") });
    const head = el("tr", {}, [el("th", {
      className: "gr-corner", scope: "col",
      text: (rowAxis ? this.axisName(rowAxis) + " \\ " : "") + this.axisName(colAxis)
    })]);
    for (let c = c0; c < c1; c++) head.appendChild(el("th", { scope: "col", text: this.axisLabel(colAxis, c, e) }));
    table.appendChild(el("thead", {}, [head]));
    const body = el("tbody");
    const fc = this.focusCell;
    const focus = fc && fc[0] >= r0 && fc[0] < r1 && fc[1] >= c0 && fc[1] < c1 ? fc : [r0, c0];
    for (let r = r0; r < r1; r++) {
      const tr = el("tr", {}, [el("th", { scope: "row", text: rowAxis ? this.axisLabel(rowAxis, r, e) : "" })]);
      const chosen = chosenColumn(rec, e, r, rows, colAxis);
      for (let c = c0; c < c1; c++) {
        const v = values[r * cols + c];
        const raw = exactText(v, e.dtype);
        const where = (rowAxis ? this.axisName(rowAxis) + " " + this.axisLabel(rowAxis, r, e) + ", " : "") +
          this.axisName(colAxis) + " " + this.axisLabel(colAxis, c, e);
        const cell = el("td", {
          className: "gr-cell", "data-value": raw, "data-row": r, "data-col": c,
          title: where + ": " + raw, "aria-label": where + ": " + raw,
          tabindex: r === focus[0] && c === focus[1] ? 0 : -1, role: "gridcell",
          text: shortText(v, e.dtype)
        });
        if (c === chosen) {
          cell.classList.add("gr-cell--chosen");
          cell.title += " · " + t(rec.kind === "generation" ? "chosenToken" : "targetToken");
        }
        const colour = cellColour(v, scale, masked(r, c));
        if (colour.kind !== "value") {
          cell.classList.add("gr-cell--" + colour.kind);
        } else {
          cell.style.setProperty("--gr-alpha", (colour.strength * 0.85).toFixed(3));
          cell.style.setProperty("--gr-rgb", "var(--gr-" + colour.hue + ")");
          if (rows === 1) cell.style.setProperty("--gr-bar", (colour.strength * 100).toFixed(1) + "%");
        }
        tr.appendChild(cell);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    if (rows === 1) table.classList.add("gr-grid--bars");
    box.appendChild(el("div", { className: "gr-scroll", "data-scroll-hint": t("scrollHint") }, [table]));
    box.appendChild(readout);
    box.appendChild(this.legend(scale, e.dtype, maskedShown(e, slice, win), scaleSpan(slice)));

    // roving tab stop: arrows move between cells, the readout says the exact value
    const show = (cell) => { readout.textContent = cell.getAttribute("aria-label"); };
    table.addEventListener("focusin", (ev) => {
      if (ev.target.classList.contains("gr-cell")) show(ev.target);
    });
    table.addEventListener("mouseover", (ev) => {
      if (ev.target.classList && ev.target.classList.contains("gr-cell")) show(ev.target);
    });
    table.addEventListener("keydown", (ev) => {
      const cell = ev.target;
      if (!cell.classList.contains("gr-cell")) return;
      const dr = { ArrowUp: -1, ArrowDown: 1 }[ev.key] || 0;
      const dc = { ArrowLeft: -1, ArrowRight: 1 }[ev.key] || 0;
      if (!dr && !dc) return;
      ev.preventDefault();
      const r = Number(cell.getAttribute("data-row")) + dr;
      const c = Number(cell.getAttribute("data-col")) + dc;
      const next = table.querySelector('td[data-row="' + r + '"][data-col="' + c + '"]');
      if (!next) return;
      cell.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
      this.focusCell = [r, c];
    });
  }

  /* The colour bar, saying what it spans; the masked swatch only when the window shows a
     masked cell (`maskedValue`, what such a cell holds: −∞ or 0; null if none). */
  legend(scale, dtype, maskedValue, span) {
    const t = this.t.bind(this);
    const legend = el("div", { className: "gr-legend" });
    const { lo, hi, diverging } = scale;
    if (lo <= hi) {
      legend.appendChild(el("span", { text: t(span === "head" ? "colourScaleHead" : "colourScale") }));
      legend.appendChild(el("span", { className: "gr-legend-end", text: shortText(diverging ? -Math.max(-lo, hi) : 0, dtype) }));
      legend.appendChild(el("span", {
        className: "gr-legend-bar" + (diverging ? " gr-legend-bar--diverging" : ""), "aria-hidden": "true"
      }));
      legend.appendChild(el("span", { className: "gr-legend-end", text: shortText(diverging ? Math.max(-lo, hi) : hi, dtype) }));
    }
    if (maskedValue !== null) {
      legend.appendChild(el("span", { className: "gr-cell gr-cell--masked gr-legend-swatch", text: shortText(maskedValue, dtype) }));
      legend.appendChild(el("span", { text: t("maskedCell") }));
    }
    return legend;
  }
}

// -- start: fetch the site's list of recordings, then each one, next to this module ------

async function fetchOk(url) {
  const response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) throw new Error(response.status + " " + response.statusText);
  return response;
}

/* A recording of the site: its index (the whole file for version 1, or when the server
   ignores Range) and its first event. */
async function fetchRecording(url) {
  const rec = await openRecording(await urlSource(url));
  await loadEvent(rec, rec.events[0]);
  return rec;
}

function labelOf(entry, lang) {
  const label = entry && entry.label;
  return label && typeof label[lang] === "string" ? label[lang] : String(entry.id);
}

async function start(mount) {
  const stringsNode = mount.querySelector("script.glassllm-replay-strings");
  let strings;
  try {
    strings = JSON.parse(stringsNode.textContent);
  } catch (e) {
    console.error("glassllm replay: the mount element needs a <script class=\"glassllm-replay-strings\"> with its UI strings as JSON");
    return;
  }
  const siteUrl = new URL("site.json", BASE).href;
  let site;
  let failure = null;
  try {
    site = await (await fetchOk(siteUrl)).json();
  } catch (err) {
    site = { recordings: [] };
    failure = [siteUrl, String(err.message || err)];
  }
  // a browser that runs this module from disk still refuses to fetch next to it
  const fromDisk = location.protocol === "file:";
  const replay = new Replay(mount, strings, site);
  mount.glassllmReplay = () => replay;
  if (failure) {
    replay.say(fromDisk ? replay.t("fileProtocol")
      : replay.t("loadFailed", { url: failure[0], error: failure[1] }), true);
    return;
  }
  replay.say(replay.t("loading"));
  const list = Array.isArray(site.recordings) ? site.recordings : [];
  // fetched in parallel, offered in the order site.json lists them
  const loaded = await Promise.all(list.map(async (entry) => {
    const url = new URL(String(entry.file), BASE).href;
    try {
      return { entry: entry, rec: await fetchRecording(url) };
    } catch (err) {
      return { entry: entry, error: replay.t("loadFailed", { url: url, error: replay.reason(err) }) };
    }
  }));
  const errors = [];
  for (const item of loaded) {
    if (item.rec) replay.recordings.set(String(item.entry.id), { rec: item.rec, title: labelOf(item.entry, replay.lang) });
    else errors.push(item.error);
  }
  replay.say(errors.join(" "), errors.length > 0);
  const first = replay.recordings.keys().next();
  if (!first.done && !replay.player) replay.present(first.value, null);
  else replay.renderSwitch();
}

export function boot(mounts) {
  // let the page paint before fetching and decoding the recordings
  requestAnimationFrame(() => setTimeout(() => Array.prototype.forEach.call(mounts, start), 0));
}
