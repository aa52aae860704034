"""Version 1: a recording as one JSON document, its arrays in base64 (small runs, ``.json``)."""

from __future__ import annotations

from ...config import Config
from .arrays import decode_array, encode_array
from .document import (JSON_VERSION, checked_document, document, event_place,
                       event_place_checked, json_text)
from .events import Event, Pass, Recording

def to_json(rec: Recording) -> dict:
    """The recording as a version 1 JSON-ready dict (see the module docstring)."""
    doc = document(rec, JSON_VERSION)
    doc["events"] = [{**event_place(e), **encode_array(e.value)} for e in rec.events]
    return doc


def dumps(rec: Recording) -> str:
    """Compact, deterministic version 1 JSON text (no bare NaN/Infinity)."""
    return json_text(to_json(rec))


def _event(item, at: str, kind: str, cfg: Config, passes: list[Pass], per_pass: int) -> Event:
    """One checked version 1 event, its base64 array decoded."""
    step, ints, _ = event_place_checked(item, at, kind, cfg, passes, per_pass)
    dtype = "int32" if step == "sample" else "float32"
    if item.get("dtype") != dtype:
        raise ValueError(f"{at}: 'dtype' of {step} must be {dtype}")
    return Event(step, ints["layer"], decode_array(item, at), ints["order"], ints["gen"],
                 ints["head"], item.get("grad") is True)


def from_json(doc, where: str = "recording") -> Recording:
    """Check a parsed version 1 JSON document and turn it back into a ``Recording``.

    Everything is checked against the model's Config before any array is decoded: each
    event's step, layer, head and generation step, and its shape against the shape that
    step has in that pass. Raises ``ValueError`` naming ``where`` and the field (or the
    event, ``events[i]``), with a hint on how to get a valid file. The replay page's reader
    (docs_build/assets/replay-format.js) accepts exactly the same files.
    """
    rec, passes, raw_events = checked_document(doc, where, JSON_VERSION)
    cfg, per_pass = Config(**rec.config), rec.events_per_pass()
    rec.events = [_event(item, f"{where}: events[{i}]", rec.kind, cfg, passes, per_pass)
                  for i, item in enumerate(raw_events)]
    return rec
