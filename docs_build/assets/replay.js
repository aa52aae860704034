/* glassllm slow-motion replay: plays a recorded run back event by event.
 *
 * Vanilla JS, no build step. The page (docs/replay.md, docs/pt/replay.md) holds a mount
 * element `.glassllm-replay` with its UI strings in a JSON <script> block; this file builds
 * the controls, fetches the recordings that sit next to it (assets/replay/*.json) after
 * first paint, and renders the current event and the inspector.
 *
 * Recording format: see glassllm/recording.py. Arrays are base64 little-endian float32
 * (int32 for the sampled token), so -inf/+inf/NaN arrive as their exact IEEE values.
 */
(function () {
  "use strict";

  // Captured at load time: document.currentScript is null inside callbacks.
  var SCRIPT_URL = document.currentScript ? document.currentScript.src : document.baseURI;
  var FORMAT = "glassllm.recording";
  var VERSION = 1;
  var WINDOW_ROWS = 32;   // larger slices are panned, never silently cut
  var WINDOW_COLS = 32;
  var CACHE_EVENTS = 256; // decoded snapshots kept per recording
  var SPEED_MIN = 0.25;   // events per second at the slider's left end
  var SPEED_MAX = 60;
  var HEAD_AXES = { head: true, kv_head: true };
  var TOKEN_AXES = { token: true, query: true, key: true };

  // ---------------------------------------------------------------------------------------
  // small helpers

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        var value = attrs[key];
        if (value === null || value === undefined || value === false) return;
        if (key === "text") node.textContent = value;
        else if (key === "className") node.className = value;
        else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
        else node.setAttribute(key, value === true ? "" : String(value));
      });
    }
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) {
        node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
      }
    });
    return node;
  }

  // Inline SVG icons (24x24 paths): no icon font, no request, and no glyph the reader's
  // fonts may lack.
  var ICONS = {
    prev: "M6 6h2v12H6zM20 6v12l-10-6z",
    play: "M8 5v14l11-7z",
    pause: "M6 5h4v14H6zM14 5h4v14h-4z",
    next: "M16 6h2v12h-2zM4 6v12l10-6z"
  };

  function icon(path) {
    var ns = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("class", "gr-icon");
    var shape = document.createElementNS(ns, "path");
    shape.setAttribute("d", path);
    svg.appendChild(shape);
    return svg;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  /* The shortest decimal text that reads back as the same float32: what data-value holds. */
  function exactText(v, dtype) {
    if (Number.isNaN(v)) return "NaN";
    if (v === Infinity) return "Infinity";
    if (v === -Infinity) return "-Infinity";
    if (dtype === "int32") return String(v);
    for (var p = 1; p <= 9; p++) {
      var s = v.toPrecision(p);
      if (Math.fround(Number(s)) === v) return String(Number(s));
    }
    return String(v);
  }

  /* Cell text: three significant digits; non-finite values spelled as the site does. */
  function shortText(v, dtype) {
    if (Number.isNaN(v)) return "NaN";
    if (v === Infinity) return "+∞";
    if (v === -Infinity) return "−∞";
    if (dtype === "int32" || v === 0) return String(v);
    var a = Math.abs(v);
    if (a >= 1e4 || a < 1e-3) return v.toExponential(1);
    return String(Number(v.toPrecision(3)));
  }

  function tokenText(b) {
    if (b === 32) return "␣";
    if (b === 10) return "⏎";
    if (b > 32 && b < 127) return String.fromCharCode(b);
    return "\\x" + (b < 16 ? "0" : "") + b.toString(16);
  }

  /* One chip per byte token: the random-weight model often produces bytes that are not
     valid UTF-8 on their own, and the chips show exactly what was produced. */
  function chips(tokens, nextToken, nextTitle) {
    var box = el("span", { className: "gr-sequence" }, tokens.map(function (b) {
      return el("span", { className: "gr-token", text: tokenText(b) });
    }));
    if (nextToken !== undefined) {
      box.appendChild(el("span", { className: "gr-token gr-token--next", title: nextTitle, text: tokenText(nextToken) }));
    }
    return box;
  }

  function utf8(tokens) {
    try {
      return new TextDecoder("utf-8").decode(new Uint8Array(tokens));
    } catch (e) {
      return tokens.map(tokenText).join("");
    }
  }

  function base64Bytes(text) {
    var bin = atob(text);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes;
  }

  function product(shape) {
    return shape.reduce(function (a, b) { return a * b; }, 1);
  }

  // ---------------------------------------------------------------------------------------
  // recordings

  function RecordingError(reason, vars) {
    this.reason = reason;
    this.vars = vars || {};
  }

  function isIndex(v) { return typeof v === "number" && Number.isInteger(v) && v >= 0; }

  /* Check a parsed document and wrap it; throws RecordingError with a translatable reason. */
  function openRecording(doc) {
    if (!doc || typeof doc !== "object" || doc.format !== FORMAT) {
      throw new RecordingError("reasonFormat");
    }
    if (!Number.isInteger(doc.version)) throw new RecordingError("reasonBroken", { detail: "version" });
    if (doc.version > VERSION) throw new RecordingError("reasonVersion", { version: doc.version });
    if (doc.kind !== "generation" && doc.kind !== "loss") {
      throw new RecordingError("reasonBroken", { detail: "kind" });
    }
    var cfg = doc.config || {};
    ["n_layers", "n_heads", "n_kv_heads", "vocab_size"].forEach(function (key) {
      if (!isIndex(cfg[key]) || cfg[key] < 1) throw new RecordingError("reasonBroken", { detail: "config." + key });
    });
    var prompt = doc.prompt && doc.prompt.tokens;
    if (!Array.isArray(prompt)) throw new RecordingError("reasonBroken", { detail: "prompt" });
    var generated = doc.kind === "generation" ? doc.generated && doc.generated.tokens : [];
    if (!Array.isArray(generated)) throw new RecordingError("reasonBroken", { detail: "generated" });
    var events = doc.events;
    if (!Array.isArray(events) || !events.length) throw new RecordingError("reasonBroken", { detail: "events" });
    var steps = doc.steps || {};
    events.forEach(function (e, i) {
      var where = "events[" + i + "]";
      if (!e || typeof e.step !== "string" || !steps[e.step]) throw new RecordingError("reasonBroken", { detail: where + ".step" });
      if (!Array.isArray(e.shape) || !e.shape.every(isIndex)) throw new RecordingError("reasonBroken", { detail: where + ".shape" });
      if (e.dtype !== "float32" && e.dtype !== "int32") throw new RecordingError("reasonBroken", { detail: where + ".dtype" });
      if (typeof e.data !== "string" || e.data.length !== 4 * Math.ceil(product(e.shape) * 4 / 3)) {
        throw new RecordingError("reasonBroken", { detail: where + ".data" });
      }
      if (e.layer !== null && e.layer !== undefined && !isIndex(e.layer)) throw new RecordingError("reasonBroken", { detail: where + ".layer" });
      if (doc.kind === "generation" && !(isIndex(e.gen) && e.gen < generated.length)) {
        throw new RecordingError("reasonBroken", { detail: where + ".gen" });
      }
    });
    var perPass = 18 * cfg.n_layers + 5;
    var passes = doc.kind === "generation" ? generated.length : 1;
    if (events.length !== perPass * passes) {
      throw new RecordingError("reasonBroken", { detail: events.length + " events, expected " + perPass * passes });
    }
    return {
      doc: doc, kind: doc.kind, config: cfg, steps: steps, events: events,
      prompt: prompt, generated: generated,
      targets: doc.kind === "loss" && doc.targets ? doc.targets.tokens || [] : [],
      stepIds: events.reduce(function (ids, e) {
        if (ids.indexOf(e.step) < 0) ids.push(e.step);
        return ids;
      }, []),
      cache: new Map()
    };
  }

  /* The event's values as a Float64 array (lazily decoded, cached per event). */
  function values(rec, index) {
    var hit = rec.cache.get(index);
    if (hit) return hit;
    var e = rec.events[index];
    var bytes = base64Bytes(e.data);
    var view = new DataView(bytes.buffer);
    var n = product(e.shape);
    var out = new Float64Array(n);
    for (var i = 0; i < n; i++) {
      out[i] = e.dtype === "int32" ? view.getInt32(4 * i, true) : view.getFloat32(4 * i, true);
    }
    // bounded: a long run of the reader's own could otherwise hold every event decoded
    if (rec.cache.size >= CACHE_EVENTS) rec.cache.delete(rec.cache.keys().next().value);
    rec.cache.set(index, out);
    return out;
  }

  /* The tokens the model saw in an event's pass (the rows of its token axes). */
  function sequenceOf(rec, e) {
    if (rec.kind === "generation") return rec.prompt.concat(rec.generated.slice(0, e.gen));
    return rec.prompt;
  }

  // ---------------------------------------------------------------------------------------
  // the replay widget

  function Replay(mount, strings, site) {
    this.mount = mount;
    this.strings = strings;
    this.site = site || { labels: {}, pages: {}, sources: {} };
    this.lang = mount.getAttribute("data-lang") || document.documentElement.lang || "en";
    this.recordings = {};
    this.current = null;     // key of the shown recording
    this.index = 0;
    this.playing = false;
    this.timer = null;
    this.filters = { step: "", layer: "", head: "", gen: "" };
    this.picks = {};         // chosen index per leading axis name, kept across events
    this.offsets = { row: 0, col: 0 };
    this.focusCell = null;   // [row, col] of the grid cell that keeps the tab stop
    this.build();
  }

  Replay.prototype.t = function (key, vars) {
    var text = this.strings[key];
    if (typeof text !== "string") {
      console.error("glassllm replay: the page has no UI string '" + key + "'");
      return key;
    }
    return text.replace(/\{(\w+)\}/g, function (all, name) {
      return vars && name in vars ? String(vars[name]) : all;
    });
  };

  /* site.json's entry of a step for the page's language: "labels", "pages" or "sources". */
  Replay.prototype.siteEntry = function (kind, stepId) {
    var table = this.site[kind] && this.site[kind][this.lang];
    return table && table[stepId] ? table[stepId] : null;
  };

  Replay.prototype.label = function (stepId) {
    return this.siteEntry("labels", stepId) || "";
  };

  Replay.prototype.build = function () {
    var self = this;
    var t = this.t.bind(this);
    var root = el("div", { className: "gr" });

    // which recording
    this.switchBox = el("div", { className: "gr-switch", role: "radiogroup", "aria-label": t("recording") });
    this.fileInput = el("input", {
      type: "file", accept: ".json,application/json", className: "gr-file-input", id: "gr-file",
      onchange: function () { if (self.fileInput.files[0]) self.openFile(self.fileInput.files[0]); }
    });
    this.dropZone = el("div", { className: "gr-drop" }, [
      this.fileInput,
      el("label", { "for": "gr-file", className: "md-button gr-file-label", text: t("open") }),
      el("span", { className: "gr-drop-hint", text: t("dropHint") })
    ]);
    root.appendChild(el("div", { className: "gr-top" }, [
      el("span", { className: "gr-caption", text: t("recording") }), this.switchBox, this.dropZone
    ]));
    this.message = el("p", { className: "gr-message", role: "status", "aria-live": "polite" });
    root.appendChild(this.message);
    this.summary = el("div", { className: "gr-summary" });
    root.appendChild(this.summary);

    // transport
    function button(action, text) {
      return el("button", {
        type: "button", className: "md-button gr-button", "data-action": action, title: text,
        onclick: function () { self.act(action); }
      }, [icon(ICONS[action]), el("span", { className: "gr-button-text", text: text })]);
    }
    this.buttons = {
      prev: button("prev", t("prev")),
      play: button("play", t("play")),
      pause: button("pause", t("pause")),
      next: button("next", t("next"))
    };
    this.speed = el("input", {
      type: "range", min: 0, max: 100, step: 1, value: 35, id: "gr-speed",
      oninput: function () { self.showSpeed(); if (self.playing) self.schedule(); }
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
      oninput: function () { self.go(Number(self.timeline.value)); }
    });
    this.timelineOut = el("output", { "for": "gr-timeline", className: "gr-timeline-out" });
    root.appendChild(el("div", { className: "gr-timeline-row" }, [
      el("label", { "for": "gr-timeline", text: t("timeline") }), this.timeline, this.timelineOut
    ]));

    // filters
    this.selects = {};
    var filterRow = el("fieldset", { className: "gr-filters" }, [el("legend", { text: t("filters") })]);
    [["step", t("step")], ["layer", t("layer")], ["head", t("head")], ["gen", t("gen")]].forEach(function (pair) {
      var id = "gr-filter-" + pair[0];
      var select = el("select", {
        id: id, "data-filter": pair[0],
        onchange: function () { self.setFilter(pair[0], select.value); }
      });
      self.selects[pair[0]] = select;
      filterRow.appendChild(el("span", { className: "gr-filter gr-filter--" + pair[0] }, [
        el("label", { "for": id, text: pair[1] }), select
      ]));
    });
    this.clearButton = el("button", {
      type: "button", className: "md-button gr-button", "data-action": "clear-filters",
      text: t("clearFilters"), onclick: function () { self.clearFilters(); }
    });
    this.matchOut = el("span", { className: "gr-match", "aria-live": "polite" });
    filterRow.appendChild(this.clearButton);
    filterRow.appendChild(this.matchOut);
    root.appendChild(filterRow);
    root.appendChild(el("p", { className: "gr-keys", text: t("keys") }));

    // current event + inspector
    this.eventBox = el("section", { className: "gr-event", "aria-live": "polite", "aria-label": t("currentEvent") });
    root.appendChild(this.eventBox);
    this.inspector = el("section", { className: "gr-inspector", "aria-label": t("inspector") });
    root.appendChild(this.inspector);

    clear(this.mount);
    this.mount.appendChild(root);
    this.root = root;
    this.showSpeed();
    this.setBusy(true);

    // drag and drop anywhere on the widget
    ["dragenter", "dragover"].forEach(function (type) {
      root.addEventListener(type, function (ev) {
        if (!ev.dataTransfer || Array.prototype.indexOf.call(ev.dataTransfer.types, "Files") < 0) return;
        ev.preventDefault();
        ev.dataTransfer.dropEffect = "copy";
        root.classList.add("gr--dragging");
      });
    });
    root.addEventListener("dragleave", function (ev) {
      if (!root.contains(ev.relatedTarget)) root.classList.remove("gr--dragging");
    });
    root.addEventListener("drop", function (ev) {
      root.classList.remove("gr--dragging");
      if (!ev.dataTransfer || !ev.dataTransfer.files.length) return;
      ev.preventDefault();
      self.openFile(ev.dataTransfer.files[0]);
    });
    document.addEventListener("keydown", function (ev) { self.onKey(ev); });
  };

  Replay.prototype.setBusy = function (busy) {
    var self = this;
    ["prev", "play", "pause", "next"].forEach(function (name) { self.buttons[name].disabled = busy; });
    this.timeline.disabled = busy;
    Object.keys(this.selects).forEach(function (k) { self.selects[k].disabled = busy; });
    this.clearButton.disabled = busy;
  };

  Replay.prototype.say = function (text, isError) {
    this.message.textContent = text;
    this.message.setAttribute("role", isError ? "alert" : "status");
    this.message.classList.toggle("gr-message--error", !!isError);
  };

  // -- recordings --------------------------------------------------------------------------

  Replay.prototype.add = function (key, rec, title) {
    rec.title = title;
    this.recordings[key] = rec;
    this.renderSwitch();
  };

  Replay.prototype.renderSwitch = function () {
    var self = this;
    clear(this.switchBox);
    ["generation", "loss", "file"].filter(function (key) { return self.recordings[key]; }).forEach(function (key) {
      var id = "gr-rec-" + key;
      var input = el("input", {
        type: "radio", name: "gr-recording", id: id, value: key, "data-recording": key,
        checked: key === self.current,
        onchange: function () { if (input.checked) self.show(key); }
      });
      self.switchBox.appendChild(el("span", { className: "gr-switch-item" }, [
        input, el("label", { "for": id, text: self.recordings[key].title })
      ]));
    });
  };

  Replay.prototype.show = function (key) {
    this.pause();
    this.current = key;
    this.rec = this.recordings[key];
    this.index = 0;
    this.picks = {};
    this.offsets = { row: 0, col: 0 };
    this.filters = { step: "", layer: "", head: "", gen: "" };
    this.timeline.max = String(this.rec.events.length - 1);
    this.fillFilters();
    this.renderSwitch();
    this.renderSummary();
    this.setBusy(false);
    this.render();
  };

  Replay.prototype.openFile = function (file) {
    var self = this;
    var name = file.name || "file";
    file.text().then(function (text) {
      var doc;
      try {
        doc = JSON.parse(text);
      } catch (e) {
        throw new RecordingError("reasonJson");
      }
      var rec = openRecording(doc);
      self.add("file", rec, self.t("recFile", { name: name }));
      self.show("file");
      self.say(self.t("opened", { name: name, count: rec.events.length }));
    }).catch(function (err) {
      if (!(err instanceof RecordingError)) err = new RecordingError("reasonBroken", { detail: String(err && err.message || err) });
      self.say(self.t("notRecording", { name: name, reason: self.t(err.reason, err.vars) }), true);
    }).then(function () {
      self.fileInput.value = "";
    });
  };

  Replay.prototype.renderSummary = function () {
    var rec = this.rec;
    var t = this.t.bind(this);
    clear(this.summary);
    var rows = [[t(rec.kind === "generation" ? "prompt" : "inputs"), rec.prompt]];
    if (rec.kind === "generation") rows.push([t("generated"), rec.generated]);
    else rows.push([t("targets"), rec.targets]);
    var list = el("dl", { className: "gr-run" });
    rows.forEach(function (row) {
      list.appendChild(el("dt", { text: row[0] }));
      list.appendChild(el("dd", {}, [el("q", { text: utf8(row[1]) }), " ", chips(row[1])]));
    });
    var cfg = rec.config;
    list.appendChild(el("dt", { text: t("model") }));
    list.appendChild(el("dd", {
      text: t("modelValue", {
        layers: cfg.n_layers, d: cfg.d_model, heads: cfg.n_heads, kv: cfg.n_kv_heads,
        ff: cfg.d_ff, seed: cfg.seed
      })
    }));
    if (rec.kind === "loss" && typeof rec.doc.loss === "number") {
      list.appendChild(el("dt", { text: t("loss") }));
      list.appendChild(el("dd", { text: exactText(Math.fround(rec.doc.loss)) }));
    }
    this.summary.appendChild(list);
  };

  // -- filters -----------------------------------------------------------------------------

  Replay.prototype.fillFilters = function () {
    var self = this;
    var rec = this.rec;
    var t = this.t.bind(this);
    function fill(select, anyText, options) {
      clear(select);
      select.appendChild(el("option", { value: "", text: anyText }));
      options.forEach(function (o) { select.appendChild(el("option", { value: o[0], text: o[1] })); });
      select.value = "";
    }
    fill(this.selects.step, t("anyStep"), rec.stepIds.map(function (id) {
      var label = self.label(id);
      return [id, label ? id + " — " + label : id];
    }));
    var layers = [];
    for (var l = 0; l < rec.config.n_layers; l++) layers.push([String(l), String(l)]);
    fill(this.selects.layer, t("anyLayer"), layers);
    var heads = [];
    for (var h = 0; h < rec.config.n_heads; h++) heads.push([String(h), String(h)]);
    fill(this.selects.head, t("anyHead"), heads);
    var gens = rec.generated.map(function (tok, g) {
      return [String(g), t("genOption", { k: g + 1, token: tokenText(tok) })];
    });
    fill(this.selects.gen, t("anyGen"), gens);
    this.selects.gen.parentNode.hidden = rec.kind !== "generation";
  };

  Replay.prototype.matches = function (e) {
    var f = this.filters;
    if (f.step && e.step !== f.step) return false;
    if (f.layer !== "" && e.layer !== Number(f.layer)) return false;
    if (f.head !== "" && !this.rec.steps[e.step].heads) return false;
    if (f.gen !== "" && e.gen !== Number(f.gen)) return false;
    return true;
  };

  Replay.prototype.filtered = function () {
    var f = this.filters;
    return !!(f.step || f.layer !== "" || f.head !== "" || f.gen !== "");
  };

  /* The next matching event from `from` in direction `dir`, or -1. */
  Replay.prototype.find = function (from, dir) {
    var events = this.rec.events;
    for (var i = from; i >= 0 && i < events.length; i += dir) {
      if (this.matches(events[i])) return i;
    }
    return -1;
  };

  Replay.prototype.setFilter = function (name, value) {
    this.filters[name] = value;
    if (name === "head" && value !== "") this.picks.head = Number(value);
    // the nearest match at or after the current event, else the first one
    var target = this.find(this.index, 1);
    if (target < 0) target = this.find(0, 1);
    if (target < 0) {
      this.say(this.t("noMatch"), true);
    } else {
      this.say("");
      this.index = target;
    }
    this.render();
  };

  Replay.prototype.clearFilters = function () {
    var self = this;
    this.filters = { step: "", layer: "", head: "", gen: "" };
    Object.keys(this.selects).forEach(function (k) { self.selects[k].value = ""; });
    this.say("");
    this.render();
  };

  // -- transport ---------------------------------------------------------------------------

  Replay.prototype.speedValue = function () {
    var x = Number(this.speed.value) / 100;
    return SPEED_MIN * Math.pow(SPEED_MAX / SPEED_MIN, x);
  };

  Replay.prototype.showSpeed = function () {
    var s = this.speedValue();
    this.speedOut.textContent = this.t("speedValue", { speed: s < 10 ? s.toFixed(2).replace(/\.?0+$/, "") : Math.round(s) });
  };

  Replay.prototype.act = function (action) {
    if (!this.rec) return;
    if (action === "play") this.play();
    else if (action === "pause") this.pause();
    else if (action === "next") { this.pause(); this.step(1); }
    else if (action === "prev") { this.pause(); this.step(-1); }
  };

  Replay.prototype.step = function (dir) {
    var target = this.filtered() ? this.find(this.index + dir, dir)
      : Math.min(Math.max(this.index + dir, 0), this.rec.events.length - 1);
    if (target < 0 || target === this.index) return false;
    this.index = target;
    this.render();
    return true;
  };

  Replay.prototype.play = function () {
    if (this.playing) return;
    // at the end, play starts over from the first (matching) event
    var last = this.filtered() ? this.find(this.rec.events.length - 1, -1) : this.rec.events.length - 1;
    if (this.index >= last) {
      var first = this.filtered() ? this.find(0, 1) : 0;
      if (first >= 0) this.index = first;
    }
    this.playing = true;
    this.render();
    this.schedule();
  };

  Replay.prototype.schedule = function () {
    var self = this;
    clearTimeout(this.timer);
    this.timer = setTimeout(function () {
      if (!self.step(1)) self.pause();
      else self.schedule();
    }, 1000 / this.speedValue());
  };

  Replay.prototype.pause = function () {
    clearTimeout(this.timer);
    this.playing = false;
    this.updateButtons();
  };

  Replay.prototype.updateButtons = function () {
    var playing = this.playing;
    this.buttons.play.disabled = playing || !this.rec;
    this.buttons.pause.disabled = !playing;
    this.root.classList.toggle("gr--playing", playing);
    // keep keyboard focus on the transport when the focused button becomes disabled
    if (playing && document.activeElement === this.buttons.play) this.buttons.pause.focus();
    if (!playing && document.activeElement === this.buttons.pause) this.buttons.play.focus();
  };

  Replay.prototype.go = function (index) {
    this.pause();
    this.index = Math.min(Math.max(index, 0), this.rec.events.length - 1);
    this.render();
  };

  Replay.prototype.onKey = function (ev) {
    if (!this.rec || !document.body.contains(this.mount)) return;
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented) return;
    var target = ev.target;
    var tag = target && target.tagName;
    var type = tag === "INPUT" ? (target.type || "text") : "";
    var typing = tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable) ||
      (tag === "INPUT" && type !== "button" && type !== "checkbox" && type !== "radio" && type !== "file");
    if (typing) return;
    if (target && target.closest && target.closest(".gr-grid")) return; // grid arrows move the cell
    if (ev.key === " " || ev.key === "Spacebar") {
      // a focused button or radio reacts to space by itself
      if (tag === "BUTTON" || type === "radio" || type === "checkbox" || type === "file" || tag === "A") return;
      ev.preventDefault();
      if (this.playing) this.pause(); else this.play();
    } else if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
      if (type === "radio") return; // arrows move between the recordings
      ev.preventDefault();
      this.act(ev.key === "ArrowRight" ? "next" : "prev");
    }
  };

  // -- rendering ---------------------------------------------------------------------------

  Replay.prototype.render = function () {
    var rec = this.rec;
    var e = rec.events[this.index];
    if (e.step !== this.shownStep) this.panned = false; // a new step opens on its own window
    this.shownStep = e.step;
    this.timeline.value = String(this.index);
    this.timelineOut.textContent = this.t("eventOf", { i: this.index + 1, n: rec.events.length });
    if (this.filtered()) {
      var self = this;
      var count = rec.events.filter(function (x) { return self.matches(x); }).length;
      this.matchOut.textContent = this.t("matching", { count: count, total: rec.events.length });
    } else {
      this.matchOut.textContent = "";
    }
    this.updateButtons();
    this.renderEvent(e);
    this.renderInspector(e);
  };

  Replay.prototype.siteUrl = function (path) {
    // the replay files sit in <site>/assets/replay/, next to this script
    return new URL("../../" + path, SCRIPT_URL).href;
  };

  Replay.prototype.renderEvent = function (e) {
    var rec = this.rec;
    var t = this.t.bind(this);
    var info = rec.steps[e.step];
    var box = this.eventBox;
    clear(box);
    box.setAttribute("data-event-index", String(this.index));
    box.setAttribute("data-step-id", e.step);
    box.setAttribute("data-layer", e.layer === null || e.layer === undefined ? "" : String(e.layer));
    if (e.gen !== undefined) box.setAttribute("data-gen", String(e.gen));
    else box.removeAttribute("data-gen");

    var label = this.label(e.step);
    box.appendChild(el("h3", { className: "gr-event-title" }, [
      el("code", { className: "gr-step-id", text: e.step }), label ? " " : null,
      label ? el("span", { className: "gr-step-label", text: label }) : null
    ]));

    var facts = el("dl", { className: "gr-facts" });
    function fact(name, value) {
      facts.appendChild(el("dt", { text: name }));
      facts.appendChild(el("dd", {}, [value]));
    }
    fact(t("layer"), e.layer === null || e.layer === undefined ? t("noLayer")
      : t("layerOf", { layer: e.layer, count: rec.config.n_layers }));
    var axes = info.axes || [];
    if (axes[0] === "head") fact(t("heads"), t("headsQuery", { count: rec.config.n_heads }));
    else if (axes[0] === "kv_head") {
      fact(t("heads"), t("headsKv", { count: rec.config.n_kv_heads, group: rec.config.n_heads / rec.config.n_kv_heads }));
    } else fact(t("heads"), t("noHeads"));
    if (rec.kind === "generation") {
      var seq = sequenceOf(rec, e);
      var produced = rec.generated[e.gen];
      var tokenBox = chips(seq, produced, t("producing"));
      fact(t("gen"), el("span", {}, [
        t("genValue", { k: e.gen + 1, n: rec.generated.length, token: tokenText(produced) }), " ", tokenBox
      ]));
    } else {
      fact(t("pass"), t("lossPass", { n: rec.prompt.length }));
    }
    fact(t("shape"), el("span", {}, [
      el("code", { text: "(" + e.shape.join(", ") + (e.shape.length === 1 ? "," : "") + ")" }), " " + e.dtype
    ]));
    if (product(e.shape) > 1) fact(t("stats"), this.statsText(e));
    box.appendChild(facts);

    var eq = el("div", { className: "gr-equation", "aria-label": info.plain || "" });
    box.appendChild(eq);
    if (window.katex && info.latex) {
      try {
        window.katex.render(info.latex, eq, { displayMode: true, throwOnError: false });
      } catch (err) {
        eq.textContent = info.plain || info.latex;
      }
    } else {
      eq.textContent = info.plain || info.latex || "";
    }

    var links = el("p", { className: "gr-links" });
    // links follow the site's scheme (site.json, written with the step pages' own URLs)
    var page = this.siteEntry("pages", e.step);
    if (page) {
      links.appendChild(el("a", { href: this.siteUrl(page), text: t("stepPage", { id: e.step }) }));
    }
    var src = this.siteEntry("sources", e.step);
    var where = src || info.source;
    if (where) {
      if (links.firstChild) links.appendChild(document.createTextNode(" · "));
      var text = t("sourceLink", { file: where.file, line: where.line });
      links.appendChild(src ? el("a", { href: this.siteUrl(src.url), text: text }) : el("span", { text: text }));
    }
    box.appendChild(links);
  };

  Replay.prototype.statsText = function (e) {
    var v = values(this.rec, this.index);
    var min = Infinity, max = -Infinity, sum = 0, finite = 0;
    for (var i = 0; i < v.length; i++) {
      var x = v[i];
      if (Number.isFinite(x)) {
        finite++;
        sum += x;
        if (x < min) min = x;
        if (x > max) max = x;
      }
    }
    var text = finite ? this.t("statsValue", {
      min: shortText(min, e.dtype), max: shortText(max, e.dtype), mean: shortText(sum / finite)
    }) : "";
    if (finite < v.length) {
      text += (text ? " · " : "") + this.t("nonFinite", { count: v.length - finite });
    }
    return text;
  };

  /* Leading axes get selectors; the last two (or one) form the slice. */
  Replay.prototype.renderInspector = function (e) {
    var self = this;
    var rec = this.rec;
    var t = this.t.bind(this);
    var info = rec.steps[e.step];
    var axes = info.axes && info.axes.length === e.shape.length ? info.axes
      : e.shape.map(function (_, i) { return "axis" + i; });
    var box = this.inspector;
    clear(box);
    box.appendChild(el("h3", { text: t("inspector") }));
    var data = values(rec, this.index);

    if (e.shape.length === 0) {
      var raw = exactText(data[0], e.dtype);
      var scalarText = e.step === "sample" ? raw + " (" + tokenText(data[0]) + ")" : raw;
      box.appendChild(el("p", { className: "gr-scalar" }, [
        el("span", { className: "gr-scalar-name", text: t("scalar") + " " }),
        el("output", { className: "gr-cell gr-scalar-value", "data-value": raw, title: raw, text: scalarText })
      ]));
      return;
    }

    // selectors for the leading axes; the head axis follows the head filter / last pick
    var lead = Math.max(0, e.shape.length - 2);
    var offset = 0;
    var stride = product(e.shape.slice(lead));
    var selectors = el("div", { className: "gr-axes" });
    for (var a = 0; a < lead; a++) {
      var name = axes[a];
      var size = e.shape[a];
      var pick = this.pickFor(name, size);
      var id = "gr-axis-" + a;
      var select = el("select", { id: id, "data-axis": name, className: "gr-axis-select" });
      for (var i = 0; i < size; i++) {
        select.appendChild(el("option", { value: String(i), text: this.axisLabel(name, i, e) }));
      }
      select.value = String(pick);
      (function (axisName, sel) {
        sel.addEventListener("change", function () {
          self.setPick(axisName, Number(sel.value));
          self.renderInspector(e);
          var again = self.inspector.querySelector('select[data-axis="' + CSS.escape(axisName) + '"]');
          if (again) again.focus();
        });
      })(name, select);
      selectors.appendChild(el("span", { className: "gr-axis" }, [
        el("label", { "for": id, text: this.axisName(name) }), select
      ]));
      offset += pick * product(e.shape.slice(a + 1));
    }
    if (lead) box.appendChild(selectors);

    var rows = e.shape.length >= 2 ? e.shape[e.shape.length - 2] : 1;
    var cols = e.shape[e.shape.length - 1];
    var rowAxis = e.shape.length >= 2 ? axes[e.shape.length - 2] : null;
    var colAxis = axes[e.shape.length - 1];
    var slice = data.subarray(offset, offset + stride);
    this.renderGrid(box, e, slice, rows, cols, rowAxis, colAxis);
  };

  Replay.prototype.pickFor = function (name, size) {
    var pick = this.picks[name];
    if (name === "kv_head" && this.picks.head !== undefined) {
      // show the KV head that serves the chosen query head (grouped-query attention)
      pick = Math.floor(this.picks.head / (this.rec.config.n_heads / this.rec.config.n_kv_heads));
    }
    if (pick === undefined || pick >= size) pick = 0;
    return pick;
  };

  Replay.prototype.setPick = function (name, value) {
    if (name === "kv_head") {
      var group = this.rec.config.n_heads / this.rec.config.n_kv_heads;
      this.picks.head = value * group;
    } else {
      this.picks[name] = value;
    }
  };

  Replay.prototype.axisName = function (name) {
    var key = "axis_" + name;
    return typeof this.strings[key] === "string" ? this.t(key) : name;
  };

  Replay.prototype.axisLabel = function (name, i, e) {
    if (name === "kv_head") {
      var group = this.rec.config.n_heads / this.rec.config.n_kv_heads;
      return this.t("kvHeadOption", { kv: i, from: i * group, to: (i + 1) * group - 1 });
    }
    if (TOKEN_AXES[name]) {
      var seq = sequenceOf(this.rec, e);
      return i + " " + tokenText(seq[i]);
    }
    if (name === "vocab") return i + " " + tokenText(i);
    return String(i);
  };

  /* The vocabulary column of the token this row leads to: the sampled token for the last
     position of a generation step, the target of each position in the loss run. */
  Replay.prototype.chosen = function (e, row, rows, colAxis) {
    if (colAxis !== "vocab") return -1;
    var rec = this.rec;
    if (rec.kind === "generation") return row === rows - 1 ? rec.generated[e.gen] : -1;
    return rec.targets[row] === undefined ? -1 : rec.targets[row];
  };

  /* The largest entries of a 1-D vocabulary slice (probs), most likely first. */
  Replay.prototype.topList = function (e, slice) {
    var order = Array.from({ length: slice.length }, function (_, i) { return i; });
    order.sort(function (a, b) { return slice[b] - slice[a]; });
    var chosen = this.chosen(e, 0, 1, "vocab");
    var list = el("p", { className: "gr-top-list" }, [this.t("top") + " "]);
    order.slice(0, 5).forEach(function (i) {
      list.appendChild(el("span", { className: "gr-token" + (i === chosen ? " gr-token--next" : ""), text: tokenText(i) }));
      list.appendChild(document.createTextNode(" " + shortText(slice[i]) + "  "));
    });
    return list;
  };

  Replay.prototype.renderGrid = function (box, e, slice, rows, cols, rowAxis, colAxis) {
    var self = this;
    var rec = this.rec;
    var t = this.t.bind(this);
    // colour scale over the whole slice, so panning keeps colours comparable
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < slice.length; i++) {
      var x = slice[i];
      if (Number.isFinite(x)) { if (x < lo) lo = x; if (x > hi) hi = x; }
    }
    var diverging = lo < 0;
    var scale = diverging ? Math.max(Math.abs(lo), Math.abs(hi)) : hi;
    if (!(scale > 0)) scale = 1;

    // until the reader pans, a vocabulary axis opens on the produced (or target) token
    var focusCol = this.chosen(e, rec.kind === "generation" ? rows - 1 : 0, rows, colAxis);
    if (!this.panned && focusCol >= 0) this.offsets.col = Math.floor(focusCol / WINDOW_COLS) * WINDOW_COLS;
    var r0 = Math.min(this.offsets.row, Math.max(0, rows - WINDOW_ROWS));
    var c0 = Math.min(this.offsets.col, Math.max(0, cols - WINDOW_COLS));
    var r1 = Math.min(rows, r0 + WINDOW_ROWS);
    var c1 = Math.min(cols, c0 + WINDOW_COLS);

    // panning controls when the slice is larger than the window
    function pan(kind, delta, text, glyph) {
      return el("button", {
        type: "button", className: "md-button gr-button gr-pan", "data-action": "pan-" + kind + (delta < 0 ? "-back" : "-forward"),
        "aria-label": text, title: text,
        onclick: function () {
          var size = kind === "row" ? WINDOW_ROWS : WINDOW_COLS;
          self.offsets[kind] = Math.max(0, (kind === "row" ? r0 : c0) + delta * size);
          self.panned = true;
          self.renderInspector(e);
        }
      }, [glyph]);
    }
    var windowInfo = el("div", { className: "gr-window" });
    var rowText = t("windowRows", { from: r0 + 1, to: r1, count: rows });
    var colText = t("windowCols", { from: c0 + 1, to: c1, count: cols });
    if (rows > WINDOW_ROWS) {
      var rowPan = el("span", { className: "gr-pan-group" }, [pan("row", -1, t("panUp"), "▲"), pan("row", 1, t("panDown"), "▼")]);
      rowPan.firstChild.disabled = r0 === 0;
      rowPan.lastChild.disabled = r1 >= rows;
      windowInfo.appendChild(el("span", {}, [rowText, " ", rowPan]));
    } else if (rowAxis) {
      windowInfo.appendChild(el("span", { text: rowText }));
    }
    if (cols > WINDOW_COLS) {
      var colPan = el("span", { className: "gr-pan-group" }, [pan("col", -1, t("panLeft"), "◀"), pan("col", 1, t("panRight"), "▶")]);
      colPan.firstChild.disabled = c0 === 0;
      colPan.lastChild.disabled = c1 >= cols;
      windowInfo.appendChild(el("span", {}, [colText, " ", colPan]));
    } else {
      windowInfo.appendChild(el("span", { text: colText }));
    }
    box.appendChild(windowInfo);
    if (rows === 1 && colAxis === "vocab") box.appendChild(this.topList(e, slice));

    var readout = el("p", { className: "gr-readout", "aria-live": "polite" });
    var table = el("table", { className: "gr-grid", role: "grid", "aria-label": t("slice") });
    var head = el("tr", {}, [el("th", {
      className: "gr-corner", scope: "col",
      text: (rowAxis ? this.axisName(rowAxis) + " \\ " : "") + this.axisName(colAxis)
    })]);
    for (var c = c0; c < c1; c++) {
      head.appendChild(el("th", { scope: "col", text: this.axisLabel(colAxis, c, e) }));
    }
    table.appendChild(el("thead", {}, [head]));
    var body = el("tbody");
    var focus = this.focusCell && this.focusCell[0] >= r0 && this.focusCell[0] < r1 &&
      this.focusCell[1] >= c0 && this.focusCell[1] < c1 ? this.focusCell : [r0, c0];
    for (var r = r0; r < r1; r++) {
      var tr = el("tr", {}, [el("th", { scope: "row", text: rowAxis ? this.axisLabel(rowAxis, r, e) : "" })]);
      for (c = c0; c < c1; c++) {
        var v = slice[r * cols + c];
        var raw = exactText(v, e.dtype);
        var where = (rowAxis ? this.axisName(rowAxis) + " " + this.axisLabel(rowAxis, r, e) + ", " : "") +
          this.axisName(colAxis) + " " + this.axisLabel(colAxis, c, e);
        var cell = el("td", {
          className: "gr-cell", "data-value": raw, "data-row": r, "data-col": c,
          title: where + ": " + raw, "aria-label": where + ": " + raw,
          tabindex: r === focus[0] && c === focus[1] ? 0 : -1, role: "gridcell",
          text: shortText(v, e.dtype)
        });
        if (c === this.chosen(e, r, rows, colAxis)) {
          cell.classList.add("gr-cell--chosen");
          cell.title += " · " + t(rec.kind === "generation" ? "chosenToken" : "targetToken");
        }
        if (v === -Infinity) cell.classList.add("gr-cell--masked");
        else if (v === Infinity) cell.classList.add("gr-cell--posinf");
        else if (Number.isNaN(v)) cell.classList.add("gr-cell--nan");
        else {
          var k = Math.min(1, Math.abs(v) / scale);
          var rgb = !diverging ? "var(--gr-seq)" : v < 0 ? "var(--gr-neg)" : "var(--gr-pos)";
          cell.style.setProperty("--gr-alpha", (k * 0.85).toFixed(3));
          cell.style.setProperty("--gr-rgb", rgb);
          if (rows === 1) cell.style.setProperty("--gr-bar", (k * 100).toFixed(1) + "%");
        }
        tr.appendChild(cell);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    if (rows === 1) table.classList.add("gr-grid--bars");
    var scroller = el("div", { className: "gr-scroll" }, [table]);
    box.appendChild(scroller);
    box.appendChild(readout);
    box.appendChild(this.legend(lo, hi, diverging, e.dtype));

    // roving tab stop: arrows move between cells, the readout says the exact value
    function show(cell) {
      readout.textContent = cell.getAttribute("aria-label");
    }
    table.addEventListener("focusin", function (ev) {
      if (ev.target.classList.contains("gr-cell")) show(ev.target);
    });
    table.addEventListener("mouseover", function (ev) {
      if (ev.target.classList && ev.target.classList.contains("gr-cell")) show(ev.target);
    });
    table.addEventListener("keydown", function (ev) {
      var cell = ev.target;
      if (!cell.classList.contains("gr-cell")) return;
      var dr = { ArrowUp: -1, ArrowDown: 1 }[ev.key] || 0;
      var dc = { ArrowLeft: -1, ArrowRight: 1 }[ev.key] || 0;
      if (!dr && !dc) return;
      ev.preventDefault();
      var r = Number(cell.getAttribute("data-row")) + dr;
      var c = Number(cell.getAttribute("data-col")) + dc;
      var next = table.querySelector('td[data-row="' + r + '"][data-col="' + c + '"]');
      if (!next) return;
      cell.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
      self.focusCell = [r, c];
    });
  };

  Replay.prototype.legend = function (lo, hi, diverging, dtype) {
    var t = this.t.bind(this);
    var legend = el("div", { className: "gr-legend" });
    if (lo <= hi) {
      legend.appendChild(el("span", { text: t("colourScale") }));
      legend.appendChild(el("span", { text: shortText(diverging ? -Math.max(-lo, hi) : 0, dtype) }));
      legend.appendChild(el("span", {
        className: "gr-legend-bar" + (diverging ? " gr-legend-bar--diverging" : ""), "aria-hidden": "true"
      }));
      legend.appendChild(el("span", { text: shortText(diverging ? Math.max(-lo, hi) : hi, dtype) }));
    }
    legend.appendChild(el("span", { className: "gr-cell gr-cell--masked gr-legend-swatch", text: "−∞" }));
    legend.appendChild(el("span", { text: t("maskedCell") }));
    return legend;
  };

  // ---------------------------------------------------------------------------------------
  // start: after first paint, fetch the site's recordings that sit next to this script

  function fetchJson(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw new Error(response.status + " " + response.statusText);
      return response.json();
    });
  }

  function start(mount) {
    var stringsNode = mount.querySelector("script.glassllm-replay-strings");
    var strings;
    try {
      strings = JSON.parse(stringsNode.textContent);
    } catch (e) {
      console.error("glassllm replay: the mount element needs a <script class=\"glassllm-replay-strings\"> with its UI strings as JSON");
      return;
    }
    var base = new URL(".", SCRIPT_URL);
    var sources = {
      generation: mount.getAttribute("data-generation") || "run.json",
      loss: mount.getAttribute("data-loss") || "loss.json"
    };
    var replay;
    fetchJson(new URL("site.json", base).href).catch(function () {
      return null; // labels and links are extras: the recordings still play without them
    }).then(function (site) {
      replay = new Replay(mount, strings, site);
      replay.say(replay.t("loading"));
      return Promise.all(["generation", "loss"].map(function (key) {
        var url = new URL(sources[key], base).href;
        return fetchJson(url).then(function (doc) {
          replay.add(key, openRecording(doc), replay.t(key === "generation" ? "recGeneration" : "recLoss"));
        }).catch(function (err) {
          var why = err instanceof RecordingError ? replay.t(err.reason, err.vars) : String(err.message || err);
          replay.say(replay.t("loadFailed", { url: url, error: why }), true);
          throw err;
        });
      }));
    }).then(function () {
      replay.say("");
      replay.show("generation");
    }).catch(function () {
      if (replay && replay.recordings.generation && !replay.rec) replay.show("generation");
    });
    mount.glassllmReplay = function () { return replay; };
  }

  function boot() {
    var mounts = document.querySelectorAll(".glassllm-replay");
    if (!mounts.length) return;
    // let the page paint before fetching and decoding the recording
    requestAnimationFrame(function () {
      setTimeout(function () {
        Array.prototype.forEach.call(mounts, start);
      }, 0);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
