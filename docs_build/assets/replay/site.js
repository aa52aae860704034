/* glassllm replay: the site around the player — site.json (docs_build/pages/replay.py writes it
 * next to these modules: the recordings offered, and per language each step's label, page
 * and source line) and the site's URLs, all relative to this folder, so the page never
 * needs to know the site's root. Pure module (no DOM).
 */

// the folder of the replay's files, <site>/assets/replay/
export const REPLAY_DIR = new URL(".", import.meta.url);

/* The URL of a file next to the player (site.json, steps.json, a recording). */
export function replayUrl(name) {
  return new URL(String(name), REPLAY_DIR).href;
}

/* The URL of a site-relative path (a step page, a source line), as site.json gives it. */
export function siteUrl(path) {
  return new URL("../../" + path, REPLAY_DIR).href;
}

/* site.json's entry of a step for language `lang`: `kind` is "labels", "pages" or
   "sources"; null when the site has none. */
export function siteEntry(site, lang, kind, stepId) {
  const table = site[kind] && site[kind][lang];
  return table && Object.prototype.hasOwnProperty.call(table, stepId) ? table[stepId] : null;
}

/* The title of one of site.json's recordings in language `lang` (its ID if it has none). */
export function recordingTitle(entry, lang) {
  const label = entry && entry.label;
  return label && typeof label[lang] === "string" ? label[lang] : String(entry.id);
}

/* The recording a link asks the page to open first: `?recording=<id>` in the page's query
   string `search` (the training-step page links to `?recording=training`), if `ids` (the
   recordings loaded) has it; else the first of `ids`. */
export function firstRecording(search, ids) {
  const asked = new URLSearchParams(search || "").get("recording");
  return asked !== null && ids.indexOf(asked) >= 0 ? asked : ids.length ? ids[0] : null;
}
