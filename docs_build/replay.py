"""The replay page's data: recordings of the example run plus what the page needs around them.

Plain functions (no MkDocs) that the plugin calls after its example run. ``replay_files``
returns ``{site path: bytes}`` for files the plugin adds as generated files:

- ``assets/replay/run.json``: a generation recording (``glassllm.recording``) with the
  example's settings and at least ``REPLAY_TOKENS`` generated tokens;
- ``assets/replay/loss.json``: the example's traced loss run;
- ``assets/replay/site.json``: per language, the step labels (from ``docs/_texts``) and
  the site-relative URLs of each step's page and source line;
- ``assets/replay/replay.js`` and ``replay.css``: the player (``docs_build/assets``).

The page script fetches the JSON files next to itself, so the page never needs to know the
site's root.
"""

from __future__ import annotations

import json
from importlib import resources

from glassllm import encode
from glassllm.recording import Recording, dumps, record_generation, record_loss

from .texts import load_step_texts

REPLAY_DIR = "assets/replay"
ASSETS = ("replay.js", "replay.css")
REPLAY_TOKENS = 6  # the step pages trace one token; the replay shows several
SIZE_BUDGET = 2_000_000  # bytes for run.json of the default example


def replay_recordings(settings) -> tuple[Recording, Recording]:
    """The generation and the loss recording of the example ``settings``.

    ``settings`` is a ``docs_build.example.ExampleSettings``. Generation uses
    the same model, prompt and sampling as the step pages, with ``REPLAY_TOKENS`` tokens (or
    more if the example asks for more, fewer only if ``max_len`` leaves no room): the sampler
    draws in the same order, so the first tokens are the step pages' tokens.
    """
    model = settings.load_model()
    generation = _record_example_generation(model, settings)
    loss = record_loss(model, encode(settings.loss_text))
    return generation, loss


def _record_example_generation(model, settings) -> Recording:
    prompt = encode(settings.prompt)
    room = settings.max_len - len(prompt)
    tokens = max(1, min(max(settings.tokens, REPLAY_TOKENS), room))
    return record_generation(model, prompt, tokens, greedy=settings.greedy,
                             temperature=settings.temperature, top_k=settings.top_k,
                             seed=settings.sampling_seed)


def before_training_recording(settings) -> Recording:
    """The example's generation by the untrained model: random weights for ``settings.seed``
    in the example model's shape, same prompt, token count and sampling, so any snapshot of
    the replay can be compared with the same one before training."""
    return _record_example_generation(settings.untrained_model(), settings)


def site_index(docs_dir, steps, use_directory_urls: bool = True) -> dict:
    """What the player shows around a recording, per language code: step labels (from
    ``docs/_texts``), step-page URLs and source links, all site-relative.

    The URLs come from the same functions the step pages use (``render.step_page_uri``,
    ``source.source_page_uri`` with a ``#L<line>`` anchor), so both link alike.
    ``steps`` are ``catalog.Step`` objects (``id``, ``file``, ``line``).
    """
    from .i18n import LANGUAGES
    from .render import Links, step_page_uri
    from .source import source_page_uri

    links = Links(use_directory_urls)
    ids = [step.id for step in steps]
    index = {"labels": {}, "pages": {}, "sources": {}}
    for lang in LANGUAGES:
        texts = load_step_texts(docs_dir, lang.code, ids)
        index["labels"][lang.code] = {step_id: texts[step_id].label for step_id in ids}
        index["pages"][lang.code] = {step.id: links.url(step_page_uri(step.id, lang))
                                     for step in steps}
        index["sources"][lang.code] = {
            step.id: {"file": step.file, "line": step.line,
                      "url": f"{links.url(source_page_uri(step.file, lang.prefix))}#L{step.line}"}
            for step in steps}
    return index


def asset_bytes(name: str) -> bytes:
    """The player's own JS or CSS, shipped in ``docs_build/assets`` (package data)."""
    return resources.files("docs_build").joinpath("assets", name).read_bytes()


def replay_files(settings, docs_dir, steps, use_directory_urls: bool = True,
                 recordings: tuple[Recording, Recording] | None = None,
                 before: Recording | None = None) -> dict[str, bytes]:
    """Every file of the replay page as ``{site path: bytes}``; the same inputs give the
    same bytes (reproducible builds). ``before`` (``before_training_recording``) adds
    ``before.json``."""
    generation, loss = recordings or replay_recordings(settings)
    site = site_index(docs_dir, steps, use_directory_urls)
    files = {
        f"{REPLAY_DIR}/run.json": dumps(generation).encode("utf-8"),
        f"{REPLAY_DIR}/loss.json": dumps(loss).encode("utf-8"),
        f"{REPLAY_DIR}/site.json": json.dumps(site, ensure_ascii=False, sort_keys=True,
                                              separators=(",", ":")).encode("utf-8"),
    }
    if before is not None:
        files[f"{REPLAY_DIR}/before.json"] = dumps(before).encode("utf-8")
    for name in ASSETS:
        files[f"{REPLAY_DIR}/{name}"] = asset_bytes(name)
    return files
