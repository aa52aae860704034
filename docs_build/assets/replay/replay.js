/* glassllm slow-motion replay: plays a recorded run back event by event.
 *
 * Native ES modules, no build step. This entry module is loaded on every page of the site
 * (mkdocs.yml `extra_javascript`, type module); only a page with a player mount
 * (`.glassllm-replay`, the replay page) loads the player itself (boot.js and what it imports).
 */

const mounts = document.querySelectorAll(".glassllm-replay");
if (mounts.length) {
  import("./boot.js").then((player) => player.boot(mounts)).catch((err) => {
    console.error("glassllm replay: the player could not be loaded:", err);
  });
}
