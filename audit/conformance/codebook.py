"""The conformance codebook: a ``source-risk`` codebook defined in code.

It follows the codebook format of docs/formats.md. Its version is its own
(``conformance-1``) so that fixture records can never be mistaken for a study's labels.
The weights are dyadic fractions so that they sum to exactly 1 in binary floating point.
"""

from __future__ import annotations

import copy
from typing import Any

CODEBOOK_NAME = "source-risk"
CODEBOOK_VERSION = "conformance-1"

#: The evidence dimension that carries query susceptibility.
D_Q = "d_Q"

_PREDICATES: tuple[tuple[str, str, str, str], ...] = (
    ("I", "Relationship", "i", "The source has a query-relevant relationship with the target."),
    ("A", "Adoption", "a", "The answer adopts the source's claim."),
    ("M", "Materiality", "m", "The relationship matters for interpreting the adopted claim."),
    ("D", "Disclosure", "d", "The answer discloses the relationship adequately."),
)

_SOURCE_ROLES: tuple[tuple[str, str, str], ...] = (
    ("target_owned", "Target-owned", "ownership records of the target"),
    ("corporate_affiliate", "Corporate affiliate", "corporate ownership or group records"),
    ("sponsored", "Sponsored", "sponsorship disclosures"),
    ("affiliate_marketing", "Affiliate marketing", "affiliate links or programme records"),
    ("competitor", "Competitor", "identity metadata of a competing vendor"),
    ("independent_editorial", "Independent editorial", "editorial identity metadata"),
    ("user_generated", "User-generated", "platform identity metadata"),
    ("official_public", "Official public", "public-body identity metadata"),
    ("unknown", "Unknown", "nothing recoverable yet"),
)

#: (key, label, weight, definition); weights sum to exactly 1.
_DIMENSIONS: tuple[tuple[str, str, float, str], ...] = (
    (D_Q, "Query susceptibility", 0.5, "How far the query invites a recommendation."),
    ("d_E", "Evidence strength", 0.25, "How directly the archived evidence shows the tie."),
    ("d_P", "Prominence", 0.25, "How prominent the source is in the answer."),
)

_CODEBOOK: dict[str, Any] = {
    "claimgate": "codebook",
    "format_version": 1,
    "name": CODEBOOK_NAME,
    "version": CODEBOOK_VERSION,
    "unit": "tuple",
    "title": "Source risk (conformance fixtures)",
    "description": (
        "Codebook of the conformance suite. Its records are synthetic fixture text, "
        "not Web observations."
    ),
    "predicates": [
        {"key": key, "label": label, "definition": definition, "shortcut": shortcut}
        for key, label, shortcut, definition in _PREDICATES
    ],
    "passage_support": {
        "label": "Passage support",
        "definition": "The cited passage supports the adopted statement.",
    },
    "source_roles": [
        {"key": key, "label": label, "look_for": look_for} for key, label, look_for in _SOURCE_ROLES
    ],
    "evidence_dimensions": [
        {"key": key, "label": label, "weight": weight, "definition": definition}
        for key, label, weight, definition in _DIMENSIONS
    ],
    "answerability_policy": None,
    "allow_assisted": False,
}


def conformance_codebook() -> dict[str, Any]:
    """A fresh copy of the conformance codebook (callers may mutate it)."""
    return copy.deepcopy(_CODEBOOK)


def codebook_without_weight(codebook: dict[str, Any], key: str) -> dict[str, Any]:
    """The codebook with one dimension's weight set to 0, the others renormalized.

    Used by the d_Q separation control. The record contract requires every ``source-risk``
    codebook to declare d_Q, so the dimension stays declared; with weight 0 (and the
    records' value 0) no d_Q information reaches anything the checker computes.
    """
    reduced = copy.deepcopy(codebook)
    kept = [dim for dim in reduced["evidence_dimensions"] if dim["key"] != key]
    total = sum(dim["weight"] for dim in kept)
    for dim in reduced["evidence_dimensions"]:
        dim["weight"] = 0.0 if dim["key"] == key else dim["weight"] / total
    reduced["version"] = f"{codebook['version']}-without-{key}"
    return reduced


def source_roles() -> tuple[str, ...]:
    return tuple(key for key, _label, _look_for in _SOURCE_ROLES)


def dimension_weights(codebook: dict[str, Any]) -> dict[str, float]:
    return {dim["key"]: dim["weight"] for dim in codebook["evidence_dimensions"]}
