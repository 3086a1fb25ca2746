"""The suite's only door to the record checker (audit/contract).

Everything the suite knows about the checker's API is here, so a change of that API is a
change of this file alone. Results are turned into plain JSON values at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

import audit.contract as contract
from audit.conformance.states import State, Value

#: CheckResult fields copied into every prediction, in output order.
RESULT_FIELDS: tuple[str, ...] = (
    "ok",
    "reason",
    "message",
    "endpoint",
    "short_circuit",
    "priority",
    "action",
    "record_digest",
    "stage",
)


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    return value


class Checker:
    """The record checker bound to a set of codebooks (given as codebook JSON values)."""

    def __init__(self, codebooks: list[Mapping[str, Any]]) -> None:
        parsed = [contract.codebook_from_dict(dict(codebook)) for codebook in codebooks]
        self._codebooks = {(book.name, book.version): book for book in parsed}

    def check(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """check_record's result as a plain dict of RESULT_FIELDS."""
        result = contract.check_record(record, self._codebooks)
        return {field: _plain(getattr(result, field)) for field in RESULT_FIELDS}


def resolve_complete_case(state: State) -> Value:
    """The checker's complete-case resolver R_O on a bare state."""
    return _plain(contract.resolve_complete_case(*state))


def checker_version() -> str:
    return str(getattr(contract, "CHECKER_VERSION", "unknown"))
