"""The build's two error types: each message says what the person building the site must do."""

from __future__ import annotations


class DocsBuildError(ValueError):
    """A problem the person building the site must fix; the message says how."""


class TextError(DocsBuildError):
    """A step text is missing or malformed; the message says which file to write or fix."""
