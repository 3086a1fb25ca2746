"""The refusal every write of people's work raises (labelling, adjudication, memberships):
one base class, so that every page and API answer shows a refusal the same way."""

from __future__ import annotations


class AnnotationError(Exception):
    """A refused annotation request; ``code`` is machine-readable, the text is for people."""

    code = "annotation_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
