"""The one exception of the record contract: a reason code and a sentence; and the same
pair as a refused line of an uploaded file (:class:`LineProblem`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LineProblem:
    """A refused line of a file: its number (0 for the whole file), a reason code and a
    sentence (the import of observations, partitions and predictions)."""

    line: int
    reason: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason, "message": self.message}


class ContractError(Exception):
    """A record, line or codebook breaks the contract.

    ``code`` is one of the constants of :mod:`audit.contract.codes` (tests assert on it);
    ``message`` is a sentence for people that names the field path (``annotation.predicates.I``)
    and says what is wrong with it.
    """

    __slots__ = ("code", "message")

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def show(value: object, limit: int = 60) -> str:
    """A short, safe rendering of an offending value for an error message."""
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def type_name(value: object) -> str:
    """The JSON name of a value's type, as a person writing JSON would call it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
