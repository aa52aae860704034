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
      t("genValue", { k: e.gen, n: rec.generated.length, token: tokenLabel(ctx.labels, produced) }), " ",
      chips(ctx.labels, sequenceOf(rec, e), produced, t("producing"))
    ]));
    const cache = cacheOf(rec, e);
    fact(t("kvCache"), cache ? cacheText(t, cache) : t("noCache"));
  } else {
    fact(t("pass"), t("lossPass", { n: rec.prompt.length }));
  }
  fact(t("shape"), el("span", {}, [el("code", { text: shapeText(e.shape) }), " " + e.dtype]));
  if (e.values.length > 1) fact(t("stats"), statsText(t, e));
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
