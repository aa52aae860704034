/* glassllm replay: the transport — previous, play, pause, next — and the speed slider. */

import { el, icon } from "./dom.js";

const ICONS = {
  prev: "M6 6h2v12H6zM20 6v12l-10-6z",
  play: "M8 5v14l11-7z",
  pause: "M6 5h4v14H6zM14 5h4v14h-4z",
  next: "M16 6h2v12h-2zM4 6v12l10-6z"
};
export const ACTIONS = ["prev", "play", "pause", "next"];

/* The row of buttons and the speed slider: `onAction(name)` for a button, `onSpeed()` when
   the slider moves. */
export function transport(t, onAction, onSpeed) {
  const button = (action, text) => el("button", {
    type: "button", className: "md-button gr-button", "data-action": action, title: text,
    onclick: () => onAction(action)
  }, [icon(ICONS[action]), el("span", { className: "gr-button-text", text: text })]);
  const buttons = {
    prev: button("prev", t("prev")),
    play: button("play", t("play")),
    pause: button("pause", t("pause")),
    next: button("next", t("next"))
  };
  const speed = el("input", {
    type: "range", min: 0, max: 100, step: 1, value: 35, id: "gr-speed", oninput: () => onSpeed()
  });
  const speedOut = el("output", { "for": "gr-speed", className: "gr-speed-out" });
  const row = el("div", { className: "gr-controls" }, [
    ...ACTIONS.map((name) => buttons[name]),
    el("label", { "for": "gr-speed", className: "gr-speed-label", text: t("speed") }),
    speed, speedOut
  ]);
  return { row: row, buttons: buttons, speed: speed, speedOut: speedOut };
}

/* Play or pause enabled as the player is `playing` (`ready`: there is a recording), the
   player's `root` marked while playing; keyboard focus stays on the transport when the
   focused button becomes disabled. */
export function showPlaying(controls, root, playing, ready) {
  const { play, pause } = controls.buttons;
  play.disabled = playing || !ready;
  pause.disabled = !playing;
  root.classList.toggle("gr--playing", playing);
  if (playing && document.activeElement === play) pause.focus();
  if (!playing && document.activeElement === pause) play.focus();
}
