/* glassllm replay: choosing the recording — the site's and the reader's own file, as radio
 * buttons — and opening a file with the file input.
 */

import { clear, el } from "./dom.js";

/* The top row: its caption, the radio group (filled by drawSwitch) and the file input
   with its drop hint; `onFile(file)` opens a chosen file. */
export function recordingPicker(t, onFile) {
  const switchBox = el("div", { className: "gr-switch", role: "radiogroup", "aria-label": t("recording") });
  const fileInput = el("input", {
    type: "file", accept: ".glrec,.json,application/json", className: "gr-file-input", id: "gr-file",
    onchange: () => { if (fileInput.files[0]) onFile(fileInput.files[0]); }
  });
  const row = el("div", { className: "gr-top" }, [
    el("span", { className: "gr-caption", text: t("recording") }), switchBox,
    el("div", { className: "gr-drop" }, [
      fileInput,
      el("label", { "for": "gr-file", className: "md-button gr-file-label", text: t("open") }),
      el("span", { className: "gr-drop-hint", text: t("dropHint") })
    ])
  ]);
  return { row: row, switchBox: switchBox, fileInput: fileInput };
}

/* One radio button per recording, `choices` [key, title] in the order offered, `current`
   checked; `onPick(key)` when the reader checks another. */
export function drawSwitch(switchBox, choices, current, onPick) {
  clear(switchBox);
  for (const [key, title] of choices) {
    const id = "gr-rec-" + key;
    const input = el("input", {
      type: "radio", name: "gr-recording", id: id, value: key, "data-recording": key,
      checked: key === current,
      onchange: () => { if (input.checked) onPick(key); }
    });
    switchBox.appendChild(el("span", { className: "gr-switch-item" }, [
      input, el("label", { "for": id, text: title })
    ]));
  }
}
