"""The replay page's files: the recordings of the example run and what the page needs around
them, as ``{site path: bytes}`` (``replay_files``):

- one ``glassllm.recording`` file per recording the engine's child wrote, copied as they are,
  in the binary format (version 2) that the page reads event by event: ``run.glrec``, a
  generation with the example's settings and at least ``engine.runner.REPLAY_TOKENS``
  generated tokens, ``loss.glrec``, the example's traced loss run, and ``before.glrec``, the
  untrained model's generation; the generations recorded with the KV cache, as ``generate``
  runs them, so all three hold the tracer's float32 values exactly within ``SIZE_BUDGET``
  (``engine.runner.REPLAY_DTYPES`` could store one in float16);
- ``assets/replay/site.json``: the recordings the page offers, in order, with their file
  and label per language (``recordings``); per language, the step labels (from
  ``docs/_texts``) and the site-relative URLs of each step's page and source line;
- ``assets/replay/steps.json``: every step's facts (``glassllm.steps.step_table()``), the
  label of every token ID of the model's vocabulary (its tokenizer's ``labels``: ``␣the``)
  and each token's bytes as hex, as the engine's child reported them, so the player's
  JavaScript copies no table of its own (one file for every recording: the top-token lists
  name any token of the vocabulary);
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

from ..engine.runner import REPLAY_SUFFIX
from ..engine.schema import ReplayFile, Step
from ..errors import DocsBuildError
from ..text.languages import LANGUAGES
from ..text.tokens import TokenLabels
from ..text.step_texts import load_step_texts
from ..text.ui import load_ui
from .urls import Links, source_page_uri, step_page_uri

REPLAY_DIR = "assets/replay"
PLAYER_SUFFIXES = (".js", ".css")  # what docs_build/assets/replay ships of its files
# the generation's file as the replay page's own record command names it; else <id><suffix>
FILE_NAMES = {"generation": "run" + REPLAY_SUFFIX}
# the columns of glassllm.steps.step_table(), as the child reported them in each Step
STEP_TABLE = ("id", "latex", "plain", "axes", "where", "head_axis", "kinds", "causal",
              "vocabulary")
SIZE_BUDGET = 2_000_000  # bytes of the default example's replay data: recordings + site.json


def site_index(docs_dir, steps, use_directory_urls: bool = True) -> dict:
    """What the player shows around a recording, per language code: step labels (from
    ``docs/_texts``), step-page URLs and source links, all site-relative.

    The URLs come from the site's one URL scheme (``pages/urls.py``), as the step pages'
    own links do.
    """
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


def recording_list(docs_dir, recordings: list[tuple[ReplayFile, bytes]]) -> list[dict]:
    """site.json's ``recordings``: id, file and label per language of each, in order."""
    ui = {lang.code: load_ui(docs_dir, lang) for lang in LANGUAGES}
    out = []
    for listed, _ in recordings:
        rec_id, label_key = listed.id, listed.label_key
        # the id names the file and the page's radio button; "file" is the reader's own
        if not re.fullmatch(r"[a-z0-9_-]+", rec_id) or rec_id == "file":
            raise DocsBuildError(f"replay recording id {rec_id!r}: use lower-case letters, "
                                 f"digits, '-' or '_' (and not 'file', the reader's own)")
        if any(entry["id"] == rec_id for entry in out):
            raise DocsBuildError(f"replay recording id {rec_id!r} is listed twice")
        if label_key not in ui[LANGUAGES[0].code]:
            raise DocsBuildError(f"replay recording {rec_id!r}: its label {label_key!r} is not "
                                 f"a UI key; add it to UI_KEYS in docs_build/text/ui.py and to "
                                 f"docs/_texts/<lang>/ui.yml in every language")
        out.append({"id": rec_id, "file": FILE_NAMES.get(rec_id, rec_id + REPLAY_SUFFIX),
                    "label": {code: strings[label_key] for code, strings in ui.items()}})
    return out


def steps_json(steps: tuple[Step, ...], labels: TokenLabels) -> bytes:
    """``steps.json``: ``{"steps": glassllm.steps.step_table(), "token_labels": [the label of
    each token ID], "token_bytes": [its bytes as hex]}``, from the child's report (the
    build's side does not import glassllm)."""
    table = [{name: list(value) if isinstance(value := getattr(step, name), tuple) else value
              for name in STEP_TABLE} for step in steps]
    token_bytes = [labels.data([t]).hex() for t in range(len(labels.labels))]
    return json.dumps({"steps": table, "token_labels": list(labels.labels),
                       "token_bytes": token_bytes}, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")


def replay_files(docs_dir, steps: tuple[Step, ...], token_labels: TokenLabels,
                 recordings: list[tuple[ReplayFile, bytes]],
                 use_directory_urls: bool = True) -> dict[str, bytes]:
    """Every file of the replay page as ``{site path: bytes}``; the same inputs give the
    same bytes (reproducible builds)."""
    site = site_index(docs_dir, steps, use_directory_urls)
    site["recordings"] = recording_list(docs_dir, recordings)
    files = {f"{REPLAY_DIR}/{entry['file']}": data
             for entry, (_, data) in zip(site["recordings"], recordings)}
    files[f"{REPLAY_DIR}/site.json"] = json.dumps(site, ensure_ascii=False, sort_keys=True,
                                                  separators=(",", ":")).encode("utf-8")
    files[f"{REPLAY_DIR}/steps.json"] = steps_json(steps, token_labels)
    for name in player_assets():
        files[f"{REPLAY_DIR}/{name}"] = asset_bytes(name)
    return files
