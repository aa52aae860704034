/* glassllm replay: an event of a training step's update — one parameter's AdamW step: its
 * settings and rule, and the sampled weights before, their gradient, moments and after.
 */

import { adamwByHand } from "../format/update.js";
import { exactText, written } from "../inspect/numbers.js";
import { clear, el } from "./dom.js";

// AdamW as glassllm.optim.AdamW computes it (torch's order of operations)
const ADAMW_LATEX = String.raw`\begin{aligned} m_t &= \beta_1 m_{t-1} + (1-\beta_1)\,g_t,\quad v_t = \beta_2 v_{t-1} + (1-\beta_2)\,g_t^2 \\ w_t &= w_{t-1}(1-\eta\lambda) - \eta\,\frac{m_t/(1-\beta_1^t)}{\sqrt{v_t/(1-\beta_2^t)}+\epsilon}\end{aligned}`;
const ADAMW_PLAIN = "m_t = β₁ m_(t−1) + (1−β₁) g_t; v_t = β₂ v_(t−1) + (1−β₂) g_t²; " +
  "w_t = w_(t−1) (1 − η λ) − η (m_t/(1−β₁^t)) / (√(v_t/(1−β₂^t)) + ε)";

const num = (t, v) => written(exactText(Math.fround(v)), t("decimal"));

/* The update event `e` (`e.param`: the parameter's name, shape, decay, norms and sampled
   entries) in the event `box`. `ctx`: `t` and `rec` (its `update`: lr, betas, eps, step). */
export function drawUpdate(box, e, index, ctx) {
  const t = ctx.t;
  const u = ctx.rec.update;
  const p = e.param;
  clear(box);
  box.setAttribute("data-event-index", String(index));
  box.setAttribute("data-step-id", "update");
  box.setAttribute("data-phase", "update");
  box.setAttribute("data-layer", e.layer === null ? "" : String(e.layer));
  box.removeAttribute("data-gen");
  box.appendChild(el("p", { className: "gr-phase", text: t("phaseUpdate") }));
  box.appendChild(el("h3", { className: "gr-event-title" }, [
    el("code", { className: "gr-step-id", text: p.name }), " ",
    el("span", { className: "gr-step-label", text: t("updateOf", { k: e.order + 1, n: u.params.length }) })
  ]));
  const facts = el("dl", { className: "gr-facts" });
  const fact = (name, value) => {
    facts.appendChild(el("dt", { text: name }));
    facts.appendChild(el("dd", {}, [value]));
  };
  fact(t("shape"), el("code", { text: "(" + p.shape.join(", ") + (p.shape.length === 1 ? "," : "") + ")" }));
  fact(t("updateSettings"), t("updateSettingsValue", {
    lr: num(t, u.lr), beta1: num(t, u.beta1), beta2: num(t, u.beta2), eps: num(t, u.eps),
    decay: num(t, p.weight_decay), step: u.step
  }));
  fact(t("updateNorms"), t("updateNormsValue", { grad: num(t, p.grad_norm), change: num(t, p.change_norm) }));
  box.appendChild(facts);
  const eq = el("div", { className: "gr-equation", "aria-label": ADAMW_PLAIN });
  box.appendChild(eq);
  if (window.katex) {
    try {
      window.katex.render(ADAMW_LATEX, eq, { displayMode: true, throwOnError: false });
    } catch (err) {
      eq.textContent = ADAMW_PLAIN;
    }
  } else {
    eq.textContent = ADAMW_PLAIN;
  }
}

/* The sampled weights of the update event `e` as a table in the inspector `box`: index,
   weight before, gradient, the moments m and v after the step, the weight after, and the
   same step redone here from the settings (format/update.js adamwByHand). */
export function drawUpdateInspector(box, e, ctx) {
  const t = ctx.t;
  const u = ctx.rec.update;
  clear(box);
  box.appendChild(el("h3", { text: t("inspector") }));
  box.appendChild(el("p", { text: t("updateEntries", { count: e.param.entries.length }) }));
  const head = ["updateIndex", "updateBefore", "updateGrad", "updateM", "updateV", "updateAfter", "updateByHand"];
  const rows = e.param.entries.map((entry) => {
    const hand = adamwByHand(u, e.param, entry);
    const cells = [entry.before, entry.grad, entry.m, entry.v, entry.after].map((v) =>
      el("td", { className: "gr-cell", "data-value": exactText(Math.fround(v)), text: num(t, v) }));
    return el("tr", {}, [el("th", { scope: "row", text: "[" + entry.index.join(", ") + "]" })].concat(cells,
      [el("td", { className: "gr-cell", "data-value": String(hand.after), text: written(String(Number(hand.after.toPrecision(9))), t("decimal")) })]));
  });
  box.appendChild(el("table", { className: "gr-update" }, [
    el("thead", {}, [el("tr", {}, head.map((key) => el("th", { scope: "col", text: t(key) })))]),
    el("tbody", {}, rows)
  ]));
}
