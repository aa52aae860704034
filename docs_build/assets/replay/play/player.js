/* glassllm replay: the player's state — which event is shown, the filters, play and pause,
 * and the speed. Pure module (no DOM, no timers of its own): the page calls `tick()` on its
 * timer every `delay()` milliseconds while `playing`.
 */

import { speedOf } from "./speed.js";

export function noFilters() {
  return { step: "", layer: "", head: "", gen: "" };
}

export class Player {
  constructor(rec) {
    this.rec = rec;
    this.index = 0;
    this.filters = noFilters();
    this.playing = false;
    this.speed = speedOf(35);
  }

  get event() {
    return this.rec.events[this.index];
  }

  get last() {
    return this.rec.events.length - 1;
  }

  /* The head filter keeps the events whose step has a head axis (the head is picked in the
     inspector); the others compare the event's own field. */
  matches(e) {
    const f = this.filters;
    if (f.step && e.step !== f.step) return false;
    if (f.layer !== "" && e.layer !== Number(f.layer)) return false;
    if (f.head !== "" && !e.facts.headAxis) return false;
    if (f.gen !== "" && e.gen !== Number(f.gen)) return false;
    return true;
  }

  filtered() {
    const f = this.filters;
    return Boolean(f.step || f.layer !== "" || f.head !== "" || f.gen !== "");
  }

  matchCount() {
    return this.rec.events.filter((e) => this.matches(e)).length;
  }

  /* The next matching event from `from` in direction `dir` (+1 or -1), or -1. */
  find(from, dir) {
    const events = this.rec.events;
    for (let i = from; i >= 0 && i < events.length; i += dir) {
      if (this.matches(events[i])) return i;
    }
    return -1;
  }

  /* Set one filter and move to the nearest match at or after the current event, else the
     first one; false (and the event kept) when nothing matches. */
  setFilter(name, value) {
    this.filters[name] = value;
    let target = this.find(this.index, 1);
    if (target < 0) target = this.find(0, 1);
    if (target < 0) return false;
    this.index = target;
    return true;
  }

  clearFilters() {
    this.filters = noFilters();
  }

  /* One event on (dir +1) or back (-1), to the next match while filtered; false at an end. */
  step(dir) {
    const target = this.filtered() ? this.find(this.index + dir, dir)
      : Math.min(Math.max(this.index + dir, 0), this.last);
    if (target < 0 || target === this.index) return false;
    this.index = target;
    return true;
  }

  go(index) {
    this.playing = false;
    this.index = Math.min(Math.max(Math.round(Number(index)) || 0, 0), this.last);
  }

  /* At the end, play starts over from the first (matching) event. */
  play() {
    const last = this.filtered() ? this.find(this.last, -1) : this.last;
    if (this.index >= last) {
      const first = this.filtered() ? this.find(0, 1) : 0;
      if (first >= 0) this.index = first;
    }
    this.playing = true;
  }

  pause() {
    this.playing = false;
  }

  /* One timer beat while playing: the next event, or a pause at the end. */
  tick() {
    if (!this.playing) return false;
    if (!this.step(1)) this.playing = false;
    return this.playing;
  }

  delay() {
    return 1000 / this.speed;
  }

  /* Everything a switch of recording may have to put back. */
  snapshot() {
    return { index: this.index, filters: Object.assign({}, this.filters), speed: this.speed };
  }

  restore(state) {
    this.index = state.index;
    this.filters = Object.assign({}, state.filters);
    this.speed = state.speed;
    this.playing = false;
  }
}
