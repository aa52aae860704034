/* glassllm replay: starting the player in each mount element — its UI strings, then the
 * build's step table (steps.json) and the site's list of recordings (site.json), fetched
 * next to these modules, then each recording.
 */

import { loadEvent, openRecording, urlSource } from "./format/index.js";
import { Replay } from "./app.js";
import { firstRecording, recordingTitle, replayUrl } from "./site.js";
import { stepTable } from "./steps.js";

async function fetchJson(url) {
  const response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) throw new Error(response.status + " " + response.statusText);
  return response.json();
}

/* A file next to the player, or why it could not be had: { value } or { failure: [url, text] }. */
async function fetchNext(name) {
  const url = replayUrl(name);
  try {
    return { value: await fetchJson(url) };
  } catch (err) {
    return { failure: [url, String(err.message || err)] };
  }
}

/* A recording of the site: its index (the whole file for version 1, or when the server
   ignores Range) and its first event. */
async function fetchRecording(url, table) {
  const rec = await openRecording(await urlSource(url), table);
  await loadEvent(rec, rec.events[0]);
  return rec;
}

async function start(mount) {
  const stringsNode = mount.querySelector("script.glassllm-replay-strings");
  let strings;
  try {
    strings = JSON.parse(stringsNode.textContent);
  } catch (e) {
    console.error("glassllm replay: the mount element needs a <script class=\"glassllm-replay-strings\"> with its UI strings as JSON");
    return;
  }
  // the step table before any recording: the reader checks every file against it
  const [site, steps] = await Promise.all([fetchNext("site.json"), fetchNext("steps.json")]);
  let table = null;
  let failure = site.failure || steps.failure || null;
  if (!steps.failure) {
    try {
      table = stepTable(steps.value);
    } catch (err) {
      failure = failure || [replayUrl("steps.json"), err.message];
    }
  }
  const replay = new Replay(mount, strings, site.failure ? { recordings: [] } : site.value, table);
  mount.glassllmReplay = () => replay;
  if (failure) {
    // a browser that runs this module from disk still refuses to fetch next to it
    const text = location.protocol === "file:" ? replay.t("fileProtocol")
      : replay.t("loadFailed", { url: failure[0], error: failure[1] });
    if (!table) replay.unavailable = text;
    replay.say(text, true);
    return;
  }
  replay.say(replay.t("loading"));
  const list = Array.isArray(site.value.recordings) ? site.value.recordings : [];
  // fetched in parallel, offered in the order site.json lists them
  const loaded = await Promise.all(list.map(async (entry) => {
    const url = replayUrl(entry.file);
    try {
      return { entry: entry, rec: await fetchRecording(url, table) };
    } catch (err) {
      return { entry: entry, error: replay.t("loadFailed", { url: url, error: replay.reason(err) }) };
    }
  }));
  const errors = [];
  for (const item of loaded) {
    if (item.rec) replay.recordings.set(String(item.entry.id), { rec: item.rec, title: recordingTitle(item.entry, replay.lang) });
    else errors.push(item.error);
  }
  replay.say(errors.join(" "), errors.length > 0);
  const first = firstRecording(location.search, Array.from(replay.recordings.keys()));
  if (first !== null && !replay.player) replay.present(first, null);
  else replay.renderSwitch();
}

export function boot(mounts) {
  // let the page paint before fetching and decoding the recordings
  requestAnimationFrame(() => setTimeout(() => Array.prototype.forEach.call(mounts, start), 0));
}
