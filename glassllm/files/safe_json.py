"""JSON from files a user hands over, parsed only after a scan has bounded it.

Python's parser recurses once per level of nesting (``RecursionError`` near a thousand
levels) and refuses an integer of over 4300 digits with a message that names no place;
browsers read such a number as Infinity. ``check_text`` scans the text first, without
recursion, and refuses deeper nesting or longer numbers naming the place
(``events[3].shape``); ``loads`` then parses what passed, refusing bare ``NaN`` and
``Infinity``, which are not JSON.
"""

from __future__ import annotations

import json
import re

# JSON's strings, punctuation and numbers: all a nesting scan needs to see
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]|-?[0-9][0-9.eE+-]*')


def check_text(text: str, where: str, max_depth: int, max_number_chars: int,
               what: str = "such a file") -> None:
    """Refuse nesting deeper than ``max_depth`` and number literals longer than
    ``max_number_chars``, naming ``where`` and the place; ``what`` says in the message
    what the text should have been ("a recording")."""
    stack: list[list] = []  # per open container: [is_object, key or index, expecting a key]
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            if len(stack) == max_depth:
                raise ValueError(f"{where}: {_path_text([s[1] for s in stack])} is nested "
                                 f"more than {max_depth} levels deep; {what} never is")
            stack.append([first == "{", None if first == "{" else 0, first == "{"])
        elif first in "]}":
            if stack:
                stack.pop()
        elif first == ",":
            if stack:
                top = stack[-1]
                if top[0]:
                    top[2] = True
                else:
                    top[1] += 1
        elif first == ":":
            if stack:
                stack[-1][2] = False
        elif first == '"':
            if stack and stack[-1][0] and stack[-1][2]:
                stack[-1][1] = token[1:-1] if "\\" not in token else _json_string(token)
        elif len(token) > max_number_chars:
            place = _path_text([s[1] for s in stack]) or "the top level"
            raise ValueError(f"{where}: {place} holds a number of {len(token)} characters; "
                             f"{what} has none longer than {max_number_chars}")


def loads(text: str, where: str, max_depth: int, max_number_chars: int,
          what: str = "such a file", constants: bool = False):
    """``check_text``, then ``json.loads``, which reads bare NaN and Infinity only with
    ``constants`` (Python writes them; browsers' JSON.parse refuses them). A text that is
    not JSON is a ``NotJSON`` error whose message starts with ``"not valid JSON"``, for
    the caller to put in its own words; a refusal of ``check_text`` keeps its own message."""
    check_text(text, where, max_depth, max_number_chars, what)
    try:
        return json.loads(text, parse_constant=None if constants else _refuse_constant)
    except (ValueError, RecursionError) as err:
        raise NotJSON(f"not valid JSON ({err})") from None


class NotJSON(ValueError):
    """The text is not JSON at all (as opposed to JSON that ``check_text`` refused)."""


def _path_text(path: list) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[:3]).lstrip(".")
    return text + ("…" if len(path) > 3 else "")


def _json_string(token: str) -> str:
    try:
        return json.loads(token)
    except ValueError:
        return token


def _refuse_constant(name: str):
    raise ValueError(f"bare {name} is not JSON")
