/* glassllm replay: the page's keys — Space plays or pauses, ← and → move one event — and
 * when a key belongs to something else. Pure module: it reads a keydown event's fields.
 */

/* What a keydown does to the replay: "toggle" (play or pause), "next", "prev", or null
   when the key is not the replay's (a modifier held, typing in a field, a focused control
   that reacts to the key itself, arrows inside the inspector's grid). */
export function keyAction(ev) {
  if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented) return null;
  const target = ev.target;
  const tag = target && target.tagName;
  const type = tag === "INPUT" ? (target.type || "text") : "";
  const typing = tag === "TEXTAREA" || tag === "SELECT" || Boolean(target && target.isContentEditable) ||
    (tag === "INPUT" && type !== "button" && type !== "checkbox" && type !== "radio" && type !== "file");
  if (typing) return null;
  if (target && target.closest && target.closest(".gr-grid")) return null; // grid arrows move the cell
  if (ev.key === " " || ev.key === "Spacebar") {
    // a focused button or radio reacts to space by itself
    if (tag === "BUTTON" || type === "radio" || type === "checkbox" || type === "file" || tag === "A") return null;
    return "toggle";
  }
  if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
    if (type === "radio") return null; // arrows move between the recordings
    return ev.key === "ArrowRight" ? "next" : "prev";
  }
  return null;
}
