// The run panel: where a page has <div class="glassllm-run">, a text box and a button that
// runs the documented model on the reader's text through window.glassllm (glassllm.js).
// With data-mode="record" (the replay page) it generates data-tokens tokens after the text
// instead, records them (glassllm.record) and hands the recording to the page: a
// "glassllm:recording" event on the document, detail {bytes, text, events}. With
// data-mode="step" and data-step (a step page) the page's snapshot switches to the step's
// records of the reader's run after it, and back (stepview.js).
// The button says how much the first run downloads (measured by the build); while the
// runtime loads a progress bar shows how far, and Cancel stops it (the worker ends). Errors
// of the engine show as the engine's own message. Strings: build.js's ui, in the page's
// language (docs/_texts/<lang>/ui.yml, keys runtime.*).

import { fill, nextTokens } from "./records.js";
import { chipText } from "../replay/tokens.js";

const SPLIT_STEP = "embed"; // the page that shows how the text became tokens (pages/tokenization.py)

const NEXT_SHOWN = 5;
const COLLAPSES = 0.25; // glassllm.circuits.COLLAPSES: kept = edited / clean at most this

export function collapsed(clean, edited) {
  return clean !== 0 && edited / clean <= COLLAPSES;
}

// 4 significant digits, as the pages write numbers, with the page language's decimal mark
// (the Portuguese pages' 0,8865; assets/heatmap.js: DECIMAL_MARKS, which this folder cannot import)
export function formatNumber(v) {
  if (v === 0) return "0";
  const precise = Number(v).toPrecision(4);
  const text = precise.includes("e") ? precise : String(Number(precise));
  const portuguese = typeof document !== "undefined" && String(document.documentElement.lang).startsWith("pt");
  return portuguese ? text.replace(".", ",") : text;
}
let panelCount = 0;

let katexLoading = null;
// window.katex from the site's copy of npm's KaTeX: a classic script with subresource
// integrity, so the browser refuses other bytes
export function loadKatex(src, integrity) {
  if (globalThis.katex) return Promise.resolve(globalThis.katex);
  if (!katexLoading) {
    katexLoading = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.integrity = integrity;
      script.onload = () => resolve(globalThis.katex);
      script.onerror = () => {
        katexLoading = null;
        reject(new Error(`${src} did not load with the sha256 this page's build.js lists; rebuild the site`));
      };
      document.head.append(script);
    });
  }
  return katexLoading;
}

export function mountAll(mounts, api, data) {
  return Array.prototype.map.call(mounts, (mount) => new RunPanel(mount, api, data));
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export class RunPanel {
  constructor(mount, api, data) {
    this.api = api;
    this.data = data;
    this.t = api.strings;
    this.locale = document.documentElement.lang || "en";
    this.mount = mount;
    const id = `glr-text-${++panelCount}`;
    const form = element("form", "glr");
    const label = element("label", "glr-label", this.t.text_label);
    label.htmlFor = id;
    this.text = element("textarea", "glr-text");
    this.text.id = id;
    this.text.rows = 2;
    this.text.spellcheck = false;
    this.text.value = mount.dataset.text || "The cat sat";
    // the model card's panel: heads to ablate instead of a text (data-layers, data-heads)
    this.ablateMode = mount.dataset.mode === "ablate";
    this.recordMode = mount.dataset.mode === "record";
    // a step page's panel: after a run, the page's snapshot shows the reader's run
    this.stepId = mount.dataset.mode === "step" ? mount.dataset.step : null;
    this.view = null;
    this.tokens = Number(mount.dataset.tokens) || 12;
    const actions = element("div", "glr-actions");
    this.button = element("button", "md-button md-button--primary glr-run");
    this.button.type = "submit";
    this.cancelButton = element("button", "md-button glr-cancel", this.t.cancel);
    this.cancelButton.type = "button";
    this.cancelButton.hidden = true;
    actions.append(this.button, this.cancelButton);
    this.bar = element("progress", "glr-progress");
    this.bar.max = 1;
    this.bar.value = 0;
    this.bar.hidden = true;
    this.status = element("p", "glr-status");
    this.status.setAttribute("role", "status");
    this.status.setAttribute("aria-live", "polite");
    this.version = element("p", "glr-version", this.versionText());
    this.result = element("div", "glr-result");
    this.result.hidden = true;
    if (this.ablateMode) {
      this.picks = this.headPicker(Number(mount.dataset.layers), Number(mount.dataset.heads));
      form.append(this.picks, actions, this.bar, this.status, this.result, this.version);
    } else {
      form.append(label, this.text, actions, this.bar, this.status, this.result, this.version);
    }
    this.bar.setAttribute("aria-label", this.t.progress_label);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    this.cancelButton.addEventListener("click", () => this.api.cancel());
    api.addEventListener("progress", (event) => this.progress(event.detail));
    api.addEventListener("state", (event) => this.state(event.detail));
    mount.replaceChildren(form);
    this.labelButton();
  }

  megabytes(bytes) {
    return new Intl.NumberFormat(this.locale, { minimumFractionDigits: 1, maximumFractionDigits: 1 })
      .format(bytes / 1e6);
  }

  versionText() {
    const build = this.api.build;
    if (!build.commit) return fill(this.t.version_unknown, { version: build.version });
    const key = build.modified ? "version_modified" : "version";
    return fill(this.t[key], { version: build.version, commit: build.commit.slice(0, 12) });
  }

  headPicker(layers, heads) {
    const box = element("fieldset", "glr-heads");
    box.append(element("legend", "", this.t.ablate_pick));
    for (let layer = 0; layer < layers; layer++) {
      const row = element("div", "glr-heads-row");
      for (let head = 0; head < heads; head++) {
        const pick = element("label", "glr-head");
        const input = document.createElement("input");
        input.type = "checkbox";
        input.value = `${layer},${head}`;
        pick.append(input, ` L${layer}H${head}`);
        row.append(pick);
      }
      box.append(row);
    }
    return box;
  }

  chosenHeads() {
    return Array.from(this.picks.querySelectorAll("input:checked"), (input) => input.value.split(",").map(Number));
  }

  labelButton() {
    const loaded = this.api.state === "ready" || this.api.state === "running";
    if (this.ablateMode) {
      this.button.textContent = loaded ? this.t.ablate
        : fill(this.t.ablate_button, { mb: this.megabytes(this.api.download.gzip) });
      return;
    }
    if (this.recordMode) {
      this.button.textContent = loaded ? fill(this.t.record, { n: this.tokens })
        : fill(this.t.record_button, { n: this.tokens, mb: this.megabytes(this.api.download.gzip) });
      return;
    }
    // a step page with worked numbers also fetches their code and KaTeX after its first run
    const extra = this.stepId && document.querySelector(".gl-worked") ? this.data.worked.download.gzip : 0;
    this.button.textContent = loaded ? this.t.run
      : fill(this.t.button, { mb: this.megabytes(this.api.download.gzip + extra) });
  }

  say(text, isError = false) {
    this.status.textContent = text;
    this.status.classList.toggle("glr-message--error", isError);
  }

  progress(detail) {
    this.bar.hidden = false;
    if (detail.total > 0) this.bar.value = Math.min(1, detail.loaded / detail.total);
    const percent = detail.total > 0 ? Math.floor(100 * detail.loaded / detail.total) : 100;
    const key = `stage_${detail.stage}`;
    if (this.t[key]) this.say(fill(this.t[key], { percent }));
  }

  state(detail) {
    const busy = detail.state === "loading" || detail.state === "running";
    this.cancelButton.hidden = !busy;
    // a load the reader's intent started (glassllm.js) leaves the button to click: the click
    // waits for the load and runs
    this.button.disabled = detail.state === "running" || (busy && this.submitting);
    if (detail.state !== "loading") this.bar.hidden = true;
    if (detail.state === "cancelled") this.say(this.t.cancelled);
    if (detail.state === "running") this.say(this.t.running);
    this.labelButton();
  }

  async submit() {
    this.result.hidden = true;
    const text = this.text.value;
    this.submitting = true;
    this.button.disabled = true;
    try {
      if (this.ablateMode) {
        const heads = this.chosenHeads();
        if (!heads.length) {
          this.say(this.t.ablate_none, true);
          return;
        }
        this.showAblation(await this.api.ablate(heads, "zero"));
        this.say("");
        return;
      }
      if (await this.tooLong(text, await this.api.load())) return;
      if (this.recordMode) {
        const recorded = await this.api.record(text, this.tokens, { greedy: true });
        document.dispatchEvent(new CustomEvent("glassllm:recording", {
          detail: { bytes: recorded.bytes, text, events: recorded.events },
        }));
        this.say(fill(this.t.recorded, { n: recorded.generated.length, count: recorded.events }));
        return;
      }
      const run = await this.api.run(text);
      const info = await this.api.load();
      this.show(run, info);
      if (this.stepId) {
        if (!this.view) {
          // beside the step pages' scripts, whose number format it shares
          const { StepView } = await import(new URL("../glassllm/stepview.js", import.meta.url).href);
          this.view = new StepView(this.mount, this.stepId, this.t);
        }
        this.view.draw(run, info.labels);
        if (this.stepId === SPLIT_STEP) this.showSplit(await this.api.tokenize(text), info.labels);
        if (this.view.exampleWorked) await this.drawWorked(text, info.labels, run.tokens);
      }
      this.say("");
    } catch (error) {
      if (error.kind === "cancelled") return; // the state event said so
      const refused = error.kind === "engine" || error.kind === "arguments";
      if (refused) this.say(fill(this.t.engine_error, { message: `${error.name}: ${error.message}` }), true);
      else this.say(fill(this.t.failed, { message: error.message }), true);
    } finally {
      this.submitting = false;
      this.button.disabled = this.api.state === "running";
    }
  }

  // A text longer than the model reads is said so in the reader's terms, how long it may be,
  // before the engine's "raise Config.max_len", which a reader of this page cannot do. The
  // length is in the demo's tokens; a text of no more bytes than that fits (a token holds
  // at least one byte), so only a longer one is sent to the tokenizer first.
  async tooLong(text, info) {
    const maxLen = info.config.max_len;
    const max = this.recordMode ? maxLen - this.tokens : maxLen;
    if (new TextEncoder().encode(text).length <= max) return false;
    const n = (await this.api.encode(text)).tokens.length;
    if (n <= max) return false;
    const key = this.recordMode ? "too_long_record" : "too_long";
    this.say(fill(this.t[key], { n, max, tokens: this.tokens, max_len: maxLen }), true);
    return true;
  }

  // The page's worked numbers redone on the reader's run in the worker (glassllm.worked),
  // their formulas typeset by the KaTeX the build uses, loaded once with its integrity
  async drawWorked(text, labels, tokens) {
    const worked = this.data.worked;
    const [result, katex] = await Promise.all([
      this.api.worked(text, this.stepId, { lang: this.api.language,
        layer: Number(this.mount.dataset.workedLayer), head: Number(this.mount.dataset.workedHead) }),
      loadKatex(new URL(worked.katex.file, import.meta.url).href, worked.katex.integrity),
    ]);
    this.view.drawWorked(result, katex, tokens.map((t) => labels[t]).join(""));
  }

  // The clean and the ablated scores of every head, and the copy ratio: a value that keeps
  // at most a quarter of its clean value (glassllm.circuits' COLLAPSES) in bold.
  showAblation(result) {
    const number = (v) => formatNumber(v);
    const table = element("table", "glr-ablation");
    const head = table.createTHead().insertRow();
    for (const key of ["ablate_col_head", "ablate_col_prev", "ablate_col_ind"]) head.append(element("th", "", this.t[key]));
    const body = table.createTBody();
    const { clean, edited } = result;
    clean.previous_token.forEach((row, layer) => row.forEach((_, h) => {
      const tr = body.insertRow();
      const ablated = result.heads.some(([l, r]) => l === layer && r === h);
      tr.append(element("th", ablated ? "glr-ablated" : "", `L${layer}H${h}`));
      for (const kind of ["previous_token", "induction"]) {
        const before = clean[kind][layer][h];
        const after = edited[kind][layer][h];
        const cell = element("td", collapsed(before, after) ? "glr-collapsed" : "", `${number(before)} → ${number(after)}`);
        tr.append(cell);
      }
    }));
    const copying = (m) => 1 - m.copy_ratio;
    const copy = element("p", "glr-copy", fill(this.t.ablate_copy, {
      clean: number(clean.copy_ratio), edited: number(edited.copy_ratio),
    }));
    if (collapsed(copying(clean), copying(edited))) copy.classList.add("glr-collapsed");
    const caption = element("p", "glr-caption", fill(this.t.ablate_caption, {
      heads: result.heads.map(([l, r]) => `L${l}H${r}`).join(", "),
    }));
    const wrap = element("div", "glr-ablation-wrap");
    wrap.append(table);
    this.result.replaceChildren(caption, wrap, copy);
    this.result.hidden = false;
  }

  // The embedding page: how the demo's tokenizer split the reader's text, word by word, with
  // the merges each word's bytes went through (as the page shows the example's)
  showSplit(split, labels) {
    if (!split.words) return;
    const merges = split.words.reduce((sum, w) => sum + w.merges.reduce((n, m) => n + m.count, 0), 0);
    const intro = element("p", "glr-caption", fill(this.t.split_intro, {
      words: split.words.length, merges, tokens: split.tokens.length,
    }));
    const table = element("table", "glr-split");
    const head = table.createTHead().insertRow();
    for (const key of ["split_word", "split_merges", "split_tokens"]) head.append(element("th", "", this.t[key]));
    const body = table.createTBody();
    const chip = (text) => element("code", "glr-token", text);
    for (const w of split.words) {
      const row = body.insertRow();
      row.insertCell().append(chip(chipText(w.word)));
      const applied = row.insertCell();
      if (!w.merges.length) applied.textContent = this.t.split_none;
      else {
        const list = element("ol");
        for (const m of w.merges) {
          const item = element("li");
          item.append(chip(m.left), " + ", chip(m.right), " → ", chip(m.joined), " ",
            element("span", "glr-caption", fill(this.t.split_rank, { rank: m.rank })));
          list.append(item);
        }
        applied.append(list);
      }
      const tokens = row.insertCell();
      for (const id of w.ids) tokens.append(chip(labels[id]), element("sub", "", String(id)), " ");
    }
    const wrap = element("div", "glr-split-wrap");
    wrap.append(element("h3", "", this.t.split_title), intro, table);
    this.result.append(wrap);
    this.result.hidden = false;
  }

  show(run, info) {
    const labels = info.labels;
    const tokens = element("p", "glr-tokens");
    tokens.append(element("span", "glr-caption", fill(this.t.result_tokens, { n: run.tokens.length })));
    for (const token of run.tokens) tokens.append(element("code", "glr-token", labels[token]));
    const next = element("p", "glr-next");
    next.append(element("span", "glr-caption", this.t.result_next));
    const percent = new Intl.NumberFormat(this.locale, { style: "percent", maximumFractionDigits: 2 });
    for (const guess of nextTokens(run.records, NEXT_SHOWN)) {
      const item = element("span", "glr-guess");
      item.append(element("code", "glr-token", labels[guess.token]), ` ${percent.format(guess.p)}`);
      next.append(item);
    }
    const ms = new Intl.NumberFormat(this.locale, { maximumFractionDigits: 1 })
      .format(run.timing.forward_ms);
    const summary = element("p", "glr-summary",
      fill(this.t.result_records, { count: run.records.length, ms }));
    this.result.replaceChildren(tokens, next, summary);
    this.result.hidden = false;
  }
}
