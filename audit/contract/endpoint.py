"""The endpoint, its short-circuit sensitivity, policy actions and review priority.

Pure functions over plain values. A predicate value is ``1``, ``0`` or ``None`` (U); the
callers have already refused every other type, so these functions do not re-check them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Value = int | None

PASS = "PASS"  # noqa: S105 (a policy action, not a password)
CONTEXTUALIZE = "CONTEXTUALIZE"
REVIEW = "REVIEW"
ABSTAIN = "ABSTAIN"
ABSTAIN_WHEN_UNRESOLVED = "abstain_when_unresolved"
#: The answer-level verdicts of format 1's answer codebook, in the order records, tables and
#: releases list them (DESIGN.md, "Claims and answer-level verdicts").
VERDICTS = ("cited", "supported", "accurate", "timely", "relevant", "complete")


def resolve_complete_case(i: Value, a: Value, m: Value, d: Value) -> Value:
    """Complete-case endpoint R_O: U (``None``) if any predicate is U; otherwise 1 exactly
    for (I, A, M, D) = (1, 1, 1, 0), else 0. Missing evidence never resolves it."""
    if i is None or a is None or m is None or d is None:
        return None
    return 1 if i == 1 and a == 1 and m == 1 and d == 0 else 0


def resolve_short_circuit(i: Value, a: Value, m: Value, d: Value) -> Value:
    """Short-circuit sensitivity: 0 as soon as I=0, A=0, M=0 or D=1 is observed, whatever
    the other predicates are; otherwise the complete-case endpoint. Reported beside R_O,
    never substituted for it."""
    if i == 0 or a == 0 or m == 0 or d == 1:
        return 0
    return resolve_complete_case(i, a, m, d)


def policy_action(endpoint: Value, answerability_policy: str | None = None) -> str:
    """PASS for R_O = 0, CONTEXTUALIZE for 1; for U, REVIEW, or ABSTAIN only when the
    codebook configures ``abstain_when_unresolved``."""
    if endpoint == 0:
        return PASS
    if endpoint == 1:
        return CONTEXTUALIZE
    return ABSTAIN if answerability_policy == ABSTAIN_WHEN_UNRESOLVED else REVIEW


def priority(evidence: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Review priority: the weighted sum of the dimension values, in [0, 1].

    ``evidence`` maps each dimension of ``weights`` to its value. The weights sum to 1
    only within 1e-9, so the sum is clamped to stay inside [0, 1]. Priority orders review
    queues; it never changes an endpoint.
    """
    total = 0.0
    for key, weight in weights.items():
        total += evidence[key] * weight
    return min(max(total, 0.0), 1.0)


def summarize_supported(claims: Iterable[Mapping[str, Any]]) -> bool | None:
    """Answer-level ``supported`` implied by the claims: ``False`` if any verifiable claim
    is unsupported, ``True`` only if there is at least one verifiable claim and all are
    supported, otherwise ``None``. Claims of kind ``not_truth_apt`` do not count."""
    seen = False
    unresolved = False
    for claim in claims:
        if claim.get("kind") != "verifiable":
            continue
        value = claim.get("supported")
        if value is False:
            return False
        seen = True
        if value is not True:
            unresolved = True
    if not seen or unresolved:
        return None
    return True
