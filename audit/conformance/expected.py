"""The conformance suite's expected numbers (seed §IV), written down once.

The suite computes every number by running the checker and the resolver; this constant is
only what they are compared with.
"""

from __future__ import annotations

from typing import Any

SUITE_VERSION = "1.0.0"

EXPECTED: dict[str, Any] = {
    "states": {"total": 81, "positive": 1, "negative": 15, "unresolved": 65},
    "oracle_agreement": {"matched": 81, "total": 81},
    "baselines": {
        "support_only": {
            "unguarded": {"resolved_mismatches": 1, "incomplete_resolved": 65},
            "guarded": {"resolved_mismatches": 1, "incomplete_resolved": 0},
        },
        "relationship_only": {
            "unguarded": {"resolved_mismatches": 7, "incomplete_resolved": 38},
            "guarded": {"resolved_mismatches": 7, "incomplete_resolved": 0},
        },
        "disclosure_only": {
            "unguarded": {"resolved_mismatches": 7, "incomplete_resolved": 38},
            "guarded": {"resolved_mismatches": 7, "incomplete_resolved": 0},
        },
    },
    "ablations": {
        "drop_I": {"extra_positives": 1},
        "drop_A": {"extra_positives": 1},
        "drop_M": {"extra_positives": 1},
        "drop_D": {"extra_positives": 1},
        "drop_dQ": {"changed": 0},
    },
    "coverage": {"complete_case_resolved": 16, "short_circuit_resolved": 66},
    "transitions": {
        "evidence_removal": {"total": 216, "to_unresolved": 216},
        "support_toggle": {"total": 81, "unchanged": 81},
        "dq_sweep": {"total": 891, "unchanged": 891},
        "binary_flips": {"total": 32, "as_registered": 32},
    },
    "serialization": {"round_trip": 81, "lineage_ok": 81},
    "mutations": {"types": 12, "total": 192, "rejected": 192, "reason_matched": 192},
}


def compare(actual: Any, expected: Any = EXPECTED) -> list[str]:
    """Every difference between ``actual`` and ``expected``, one readable line each;
    empty when they agree in shape, types and numbers."""
    return _differences(actual, expected, "")


def _differences(actual: Any, expected: Any, path: str) -> list[str]:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path or '<summary>'}: expected an object, got {actual!r}"]
        lines: list[str] = []
        for key in expected:
            where = f"{path}.{key}" if path else key
            if key in actual:
                lines.extend(_differences(actual[key], expected[key], where))
            else:
                lines.append(f"{where}: missing (expected {expected[key]!r})")
        for key in actual:
            if key not in expected:
                lines.append(f"{path}.{key}: unexpected" if path else f"{key}: unexpected")
        return lines
    # bool is an int subclass: True must not pass for 1.
    if type(actual) is not type(expected) or actual != expected:
        return [f"{path}: got {actual!r}, expected {expected!r}"]
    return []
