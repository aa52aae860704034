// The site around the player: URLs relative to the player's folder, site.json's entries.
import { test } from "node:test";
import assert from "node:assert/strict";

import { firstRecording, recordingTitle, replayUrl, siteEntry, siteUrl } from "../../../docs_build/assets/replay/site.js";

test("files next to the player, and site paths from the site's root two folders up", () => {
  const folder = new URL("../../../docs_build/assets/replay/", import.meta.url).href;
  assert.equal(replayUrl("steps.json"), folder + "steps.json");
  assert.equal(siteUrl("pt/steps/attn.mask/"), new URL("../../pt/steps/attn.mask/", folder).href);
});

test("site.json's entries of a step per language, and nothing for what it lacks", () => {
  const site = { labels: { en: { embed: "Token embedding" } }, pages: { en: { embed: "steps/embed/" } } };
  assert.equal(siteEntry(site, "en", "labels", "embed"), "Token embedding");
  assert.equal(siteEntry(site, "pt", "labels", "embed"), null);
  assert.equal(siteEntry(site, "en", "sources", "embed"), null);
  assert.equal(siteEntry(site, "en", "labels", "constructor"), null);
  assert.equal(recordingTitle({ id: "loss", label: { en: "Loss", pt: "Perda" } }, "pt"), "Perda");
  assert.equal(recordingTitle({ id: "loss" }, "en"), "loss");
});

test("a link can ask for the recording the page opens first", () => {
  const ids = ["generation", "loss", "before", "training"];
  assert.equal(firstRecording("?recording=training", ids), "training");
  assert.equal(firstRecording("", ids), "generation");
  assert.equal(firstRecording("?recording=nope", ids), "generation");
  assert.equal(firstRecording("?recording=constructor", ids), "generation");
  assert.equal(firstRecording("?recording=training", []), null);
});
