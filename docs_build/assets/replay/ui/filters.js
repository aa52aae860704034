/* glassllm replay: the filters — step, layer, head, generation step — and their clear button. */

import { clear, el } from "./dom.js";

export const FILTERS = ["step", "layer", "head", "gen"];

/* The filters' fieldset: `onChange(name, value)` when a select changes, `onClear()` for the
   clear button; `matchOut` says how many events match. */
export function filterControls(t, onChange, onClear) {
  const selects = {};
  const row = el("fieldset", { className: "gr-filters" }, [el("legend", { text: t("filters") })]);
  for (const [name, text] of [["step", t("step")], ["layer", t("layer")], ["head", t("head")], ["gen", t("gen")]]) {
    const id = "gr-filter-" + name;
    const select = el("select", {
      id: id, "data-filter": name, onchange: () => onChange(name, select.value)
    });
    selects[name] = select;
    row.appendChild(el("span", { className: "gr-filter gr-filter--" + name }, [
      el("label", { "for": id, text: text }), select
    ]));
  }
  const clearButton = el("button", {
    type: "button", className: "md-button gr-button", "data-action": "clear-filters",
    text: t("clearFilters"), onclick: () => onClear()
  });
  const matchOut = el("span", { className: "gr-match", "aria-live": "polite" });
  row.appendChild(clearButton);
  row.appendChild(matchOut);
  return { row: row, selects: selects, clearButton: clearButton, matchOut: matchOut };
}

/* Each select filled with "any" and `options[name]` ([value, text] pairs, from
   play/filter-options.js) and set to `values[name]`; the generation filter only shows for
   a generation (`generation`). */
export function fillFilters(controls, t, options, values, generation) {
  const any = { step: t("anyStep"), layer: t("anyLayer"), head: t("anyHead"), gen: t("anyGen") };
  for (const name of FILTERS) {
    const select = controls.selects[name];
    clear(select);
    select.appendChild(el("option", { value: "", text: any[name] }));
    for (const [value, text] of options[name]) select.appendChild(el("option", { value: value, text: text }));
  }
  controls.selects.gen.parentNode.hidden = !generation;
  for (const name of FILTERS) controls.selects[name].value = values[name];
}
