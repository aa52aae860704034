"""The replay page's data: recordings of the example run plus what the page needs around them.

Plain functions (no MkDocs) that the plugin calls after its example run. ``replay_files``
returns ``{site path: bytes}`` for files the plugin adds as generated files:

- one ``glassllm.recording`` file per recording the child wrote (``ExampleData.replay``, see
  ``docs_build/example_child.py: record_replay``), copied as they are, in the binary format
  (version 2, ``SITE_SUFFIX``) that the page reads event by event: ``run.glrec``, a
  generation with the example's settings and at least ``REPLAY_TOKENS`` generated tokens,
  and ``loss.glrec``, the example's traced loss run, both float32 (the step pages' values
  exactly), and ``before.glrec``, the untrained model's generation, in float16
  (``SITE_DTYPES``) so that all three stay within ``SIZE_BUDGET``;
- ``assets/replay/site.json``: the recordings the page offers, in order, with their file
  and label per language (``recordings``); per language, the step labels (from
  ``docs/_texts``) and the site-relative URLs of each step's page and source line;
- ``assets/replay/steps.json``: the step table the player reads instead of copying it
  (``steps_json``);
- the player, every file of ``docs_build/assets/replay`` in the same folders
  (``player_assets``): ``replay.js``, the entry module every page loads, the modules it
  imports, and ``replay.css``.

The page script fetches the files next to itself, so the page never needs to know the
site's root.
"""

from __future__ import annotations

import json
import re
from importlib import resources

from .catalog import DocsBuildError
from .texts import load_step_texts

REPLAY_DIR = "assets/replay"
PLAYER_SUFFIXES = (".js", ".css")  # what docs_build/assets/replay ships of its files
# A recording the page offers: (id, key of its label in docs/_texts/<lang>/ui.yml, the name
# the child wrote it under, its bytes)
ReplayRecording = tuple[str, str, str, bytes]
# The format of the site's recordings: glassllm.recording.BINARY_SUFFIX, the binary format the
# page reads lazily (spelled out: the site's side does not import glassllm); the child writes
# <id><SITE_SUFFIX> with glassllm.recording.write_recording
SITE_SUFFIX = ".glrec"
# How each recording stores its floats (write_recording's dtype; float32 if not listed): the
# comparison run in float16 halves its size and keeps the replay data within SIZE_BUDGET
SITE_DTYPES = {"before": "float16"}
FILE_NAMES = {"generation": "run" + SITE_SUFFIX}  # README's record command's name; else <id><suffix>
REPLAY_TOKENS = 6  # the step pages trace one token; the replay shows several
SIZE_BUDGET = 2_000_000  # bytes of the default example's replay data: recordings + site.json


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


def _player_dir():
    return resources.files("docs_build").joinpath("assets", "replay")  # package data


def player_assets() -> list[str]:
    """The player's own JS and CSS (``docs_build/assets/replay``, package data), as paths
    relative to that folder ("replay.js", "format/read.js", ...), sorted."""
    def walk(folder, prefix):
        for item in folder.iterdir():
            if item.is_dir():
                yield from walk(item, f"{prefix}{item.name}/")
            elif item.name.endswith(PLAYER_SUFFIXES):
                yield prefix + item.name
    return sorted(walk(_player_dir(), ""))


def asset_bytes(name: str) -> bytes:
    """One of ``player_assets()``."""
    return _player_dir().joinpath(*name.split("/")).read_bytes()


def recording_list(docs_dir, recordings: list[ReplayRecording]) -> list[dict]:
    """site.json's ``recordings``: id, file and label per language of each, in order."""
    from .i18n import LANGUAGES, load_ui

    ui = {lang.code: load_ui(docs_dir, lang) for lang in LANGUAGES}
    out = []
    for rec_id, label_key, _, _ in recordings:
        # the id names the file and the page's radio button; "file" is the reader's own
        if not re.fullmatch(r"[a-z0-9_-]+", rec_id) or rec_id == "file":
            raise DocsBuildError(f"replay recording id {rec_id!r}: use lower-case letters, "
                                 f"digits, '-' or '_' (and not 'file', the reader's own)")
        if any(entry["id"] == rec_id for entry in out):
            raise DocsBuildError(f"replay recording id {rec_id!r} is listed twice")
        if label_key not in ui[LANGUAGES[0].code]:
            raise DocsBuildError(f"replay recording {rec_id!r}: its label {label_key!r} is not "
                                 f"a UI key; add it to UI_KEYS in docs_build/i18n.py and to "
                                 f"docs/_texts/<lang>/ui.yml in every language")
        out.append({"id": rec_id, "file": FILE_NAMES.get(rec_id, rec_id + SITE_SUFFIX),
                    "label": {code: strings[label_key] for code, strings in ui.items()}})
    return out


def steps_json(step_table: dict) -> bytes:
    """The bytes of ``assets/replay/steps.json``: ``{"steps": glassllm.steps.step_table(),
    "token_labels": [glassllm.tokenizer.token_label(b) for b in range(256)]}``, which the
    engine's child computes (``example_child.viewer_table``: this side does not import
    glassllm). The player loads it once at boot, before it reads any recording."""
    return json.dumps(step_table, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def replay_files(docs_dir, steps, recordings: list[ReplayRecording], step_table: dict,
                 use_directory_urls: bool = True) -> dict[str, bytes]:
    """Every file of the replay page as ``{site path: bytes}``; the same inputs give the
    same bytes (reproducible builds). ``step_table``: steps.json's content (``steps_json``)."""
    site = site_index(docs_dir, steps, use_directory_urls)
    site["recordings"] = recording_list(docs_dir, recordings)
    files = {f"{REPLAY_DIR}/{entry['file']}": data
             for entry, (_, _, _, data) in zip(site["recordings"], recordings)}
    files[f"{REPLAY_DIR}/site.json"] = json.dumps(site, ensure_ascii=False, sort_keys=True,
                                                  separators=(",", ":")).encode("utf-8")
    files[f"{REPLAY_DIR}/steps.json"] = steps_json(step_table)
    for name in player_assets():
        files[f"{REPLAY_DIR}/{name}"] = asset_bytes(name)
    return files
