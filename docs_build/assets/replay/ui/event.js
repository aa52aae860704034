/* glassllm replay: the current event — its step, layer, heads and token, its shape and
 * values, the equation, and links to the step's page and source line.
 */

import { fileStepInfo } from "../format/file-steps.js";
import { cacheOf, cacheText } from "../inspect/cache.js";
import { shapeText, statsText } from "../inspect/describe.js";
import { axesOf, headGroup, sequenceOf } from "../inspect/slice.js";
import { siteUrl } from "../site.js";
import { tokenLabel } from "../tokens.js";
import { chips } from "./chips.js";
import { clear, el } from "./dom.js";

/* Event `e`, the `index`-th of the recording, in `box`. `ctx`: `t`, `labels`, `rec` and
   `entry(kind, stepId)` (site.json's label, page or source of a step in this language). */
export function drawEvent(box, e, index, ctx) {
  const rec = ctx.rec;
  const t = ctx.t;
  const info = fileStepInfo(rec, e.step);
  clear(box);
  box.setAttribute("data-event-index", String(index));
  box.setAttribute("data-step-id", e.step);
  box.setAttribute("data-layer", e.layer === null ? "" : String(e.layer));
  if (e.gen !== null) box.setAttribute("data-gen", String(e.gen));
  else box.removeAttribute("data-gen");

  const label = ctx.entry("labels", e.step) || "";
  // a training step's backward: the event is ∂ℒ/∂(the value), its rule the step's backward one
  const grad = Boolean(e.grad);
  if (rec.kind === "training") {
    box.setAttribute("data-phase", grad ? "backward" : "forward");
    box.appendChild(el("p", { className: "gr-phase", text: t(grad ? "phaseBackward" : "phaseForward") }));
  } else {
    box.removeAttribute("data-phase");
  }
  box.appendChild(el("h3", { className: "gr-event-title" }, [
    grad ? el("span", { className: "gr-grad-of", text: "∂ℒ/∂ " }) : null,
    el("code", { className: "gr-step-id", text: e.step }), label ? " " : null,
    label ? el("span", { className: "gr-step-label", text: grad ? t("gradOf", { label: label }) : label }) : null
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
      t("genValue", { k: e.gen, n: rec.generated.length, token: tokenLabel(ctx.labels, produced) }), " ",
      chips(ctx.labels, sequenceOf(rec, e), produced, t("producing"))
    ]));
    const cache = cacheOf(rec, e);
    fact(t("kvCache"), cache ? cacheText(t, cache) : t("noCache"));
  } else if (grad) {
    fact(t("pass"), t("backwardPass", { k: e.order + 1, n: (rec.events.length - rec.update.params.length) / 2 }));
  } else {
    fact(t("pass"), t("lossPass", { n: rec.prompt.length }));
  }
  fact(t("shape"), el("span", {}, [el("code", { text: shapeText(e.shape) }), " " + e.dtype]));
  if (e.values.length > 1) fact(t("stats"), statsText(t, e));
  box.appendChild(facts);

  const latex = grad ? info.gradLatex : info.latex;
  const plain = grad ? info.gradPlain : info.plain;
  const eq = el("div", { className: "gr-equation", "aria-label": plain });
  box.appendChild(eq);
  if (window.katex && latex) {
    try {
      window.katex.render(latex, eq, { displayMode: true, throwOnError: false });
    } catch (err) {
      eq.textContent = plain || latex;
    }
  } else {
    eq.textContent = plain || latex;
  }
  if (grad && plain) box.appendChild(el("p", { className: "gr-grad-rule" }, [t("gradRule") + " ", el("code", { text: plain })]));

  const links = el("p", { className: "gr-links" });
  // links follow the site's scheme (site.json, written with the step pages' own URLs)
  const page = ctx.entry("pages", e.step);
  if (page) links.appendChild(el("a", { href: siteUrl(page), text: t("stepPage", { id: e.step }) }));
  const src = ctx.entry("sources", e.step);
  const where = src || info.source;
  if (where) {
    if (links.firstChild) links.appendChild(document.createTextNode(" · "));
    const text = t("sourceLink", { file: where.file, line: where.line });
    links.appendChild(src ? el("a", { href: siteUrl(src.url), text: text }) : el("span", { text: text }));
  }
  box.appendChild(links);
}
