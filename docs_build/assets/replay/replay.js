/* glassllm slow-motion replay: plays a recorded run back event by event.
 *
 * Native ES modules, no build step. This entry module is loaded on every page of the site
 * (mkdocs.yml `extra_javascript`, type module); only a page with a player mount
 * (`.glassllm-replay`, the replay page) loads the player itself: boot.js and the modules it
 * imports.
 */

// Every module of the player, requested at once: left to find them import by import, the
// browser waits a round trip per level of imports (structure.test.mjs keeps this list whole).
const PLAYER = [
  "boot.js", "app.js", "format/check.js", "format/config.js", "format/constants.js",
  "format/decode.js", "format/error.js", "format/file-steps.js", "format/index.js",
  "format/objects.js", "format/read.js", "format/scan.js", "format/shapes.js",
  "format/sources.js", "format/store.js", "format/update.js", "format/version1.js",
  "format/version2.js",
  "inspect/cache.js", "inspect/chosen.js", "inspect/colour.js", "inspect/describe.js",
  "inspect/labels.js",
  "inspect/mask.js", "inspect/numbers.js", "inspect/slice.js", "inspect/stats.js",
  "inspect/top.js", "inspect/window.js", "play/filter-options.js", "play/keys.js",
  "play/next-event.js", "play/player.js", "play/speed.js", "site.js", "steps.js", "strings.js",
  "tokens.js", "ui/chips.js", "ui/dom.js", "ui/drop.js", "ui/event.js", "ui/filters.js",
  "ui/grid.js", "ui/inspector.js", "ui/legend.js", "ui/map.js", "ui/picker.js", "ui/summary.js",
  "ui/timeline.js", "ui/top-list.js", "ui/transport.js", "ui/update.js"
];

const mounts = document.querySelectorAll(".glassllm-replay");
if (mounts.length) {
  Promise.all(PLAYER.map((name) => import("./" + name))).then(([player]) => player.boot(mounts)).catch((err) => {
    console.error("glassllm replay: the player could not be loaded:", err);
  });
}
