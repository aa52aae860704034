/* glassllm replay: the most likely next tokens above a distribution's grid. */

import { chosenColumn } from "../inspect/chosen.js";
import { shortText, written } from "../inspect/numbers.js";
import { topEntries } from "../inspect/top.js";
import { tokenLabel } from "../tokens.js";
import { el } from "./dom.js";

/* The five largest entries of a 1-D vocabulary slice (probs), most likely first, the
   token the step produced marked. `ctx`: `t`, `labels`, `rec`. */
export function topList(ctx, e, values) {
  const chosen = chosenColumn(ctx.rec, e, 0, 1, "vocab");
  const list = el("p", { className: "gr-top-list" }, [ctx.t("top") + " "]);
  for (const i of topEntries(values, 5)) {
    list.appendChild(el("span", { className: "gr-token" + (i === chosen ? " gr-token--next" : ""), text: tokenLabel(ctx.labels, i) }));
    list.appendChild(document.createTextNode(" " + written(shortText(values[i]), ctx.t("decimal")) + "  "));
  }
  return list;
}
