/* glassllm replay: the page's UI strings (docs/replay.md and docs/pt/replay.md hold them as
 * JSON in the mount element). Pure module (no DOM).
 */

import { RecordingError } from "./format/error.js";

/* The string `key` with its {placeholders} filled from `vars`; a missing key is logged and
   shown as itself, so a page with an incomplete strings block still works. */
export function translate(strings, key, vars) {
  const text = strings[key];
  if (typeof text !== "string") {
    console.error("glassllm replay: the page has no UI string '" + key + "'");
    return key;
  }
  return text.replace(/\{(\w+)\}/g, (all, name) => (vars && name in vars ? String(vars[name]) : all));
}

/* Why a file was refused, in the page's words (`t`: translate bound to the page's strings). */
export function reasonText(t, err) {
  return err instanceof RecordingError ? t(err.reason, err.vars)
    : t("reasonBroken", { detail: String((err && err.message) || err) });
}
