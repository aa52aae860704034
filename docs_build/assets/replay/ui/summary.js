/* glassllm replay: what the recording is — its text, tokens and model. */

import { exactText, written } from "../inspect/numbers.js";
import { tokensText } from "../tokens.js";
import { chips } from "./chips.js";
import { clear, el } from "./dom.js";

/* The run's summary in `box`: the prompt and generated tokens (or the loss run's inputs,
   targets and loss), as text and as chips, and the model's sizes. `ctx`: `t`, `labels`, `rec`. */
export function drawSummary(box, ctx) {
  const rec = ctx.rec;
  const t = ctx.t;
  clear(box);
  const rows = [[t(rec.kind === "generation" ? "prompt" : "inputs"), rec.prompt]];
  if (rec.kind === "generation") rows.push([t("generated"), rec.generated]);
  else rows.push([t("targets"), rec.targets]);
  const list = el("dl", { className: "gr-run" });
  for (const [name, tokens] of rows) {
    list.appendChild(el("dt", { text: name }));
    list.appendChild(el("dd", {}, [el("q", { text: tokensText(ctx.labels, tokens, ctx.tokenBytes) }), " ", chips(ctx.labels, tokens)]));
  }
  const cfg = rec.config;
  list.appendChild(el("dt", { text: t("model") }));
  list.appendChild(el("dd", {
    text: t("modelValue", {
      layers: cfg.n_layers, d: cfg.d_model, heads: cfg.n_heads, kv: cfg.n_kv_heads,
      ff: cfg.d_ff, seed: cfg.seed
    })
  }));
  if (rec.kind === "loss" || rec.kind === "training") {
    list.appendChild(el("dt", { text: t("loss") }));
    list.appendChild(el("dd", { text: written(exactText(Math.fround(rec.loss)), t("decimal")) }));
  }
  if (rec.kind === "training") {
    // the step's three parts, in the order the player plays them
    const perPass = (rec.events.length - rec.update.params.length) / 2;
    list.appendChild(el("dt", { text: t("lossAfter") }));
    list.appendChild(el("dd", { text: written(exactText(Math.fround(rec.update.loss_after)), t("decimal")) }));
    list.appendChild(el("dt", { text: t("trainingParts") }));
    list.appendChild(el("dd", { text: t("trainingPartsValue", { forward: perPass, backward: perPass, update: rec.update.params.length }) }));
  }
  box.appendChild(list);
}
