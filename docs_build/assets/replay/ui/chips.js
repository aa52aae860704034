/* glassllm replay: a sequence of tokens as chips. */

import { tokenLabel } from "../tokens.js";
import { el } from "./dom.js";

/* One chip per token, labelled as on the step pages (`labels`: the step table's): the
   random-weight model often produces bytes that are not valid UTF-8 on their own, and the
   chips show exactly what was produced; `nextToken`, if given, is marked as the one being
   produced (`nextTitle`). */
export function chips(labels, tokens, nextToken, nextTitle) {
  const box = el("span", { className: "gr-sequence" },
    tokens.map((b) => el("span", { className: "gr-token", text: tokenLabel(labels, b) })));
  if (nextToken !== undefined) {
    box.appendChild(el("span", { className: "gr-token gr-token--next", title: nextTitle, text: tokenLabel(labels, nextToken) }));
  }
  return box;
}
