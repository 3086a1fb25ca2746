"""Claims of several annotators on one answer, aligned by answer-span overlap: pure, no Django.

Annotators split an answer into claims differently, so claims are paired before they are
compared. Two claims of two annotators are candidates when their answer spans overlap by
at least half of the *shorter* span, in code points (``overlap >= 0.5 * min(len_a, len_b)``
and ``overlap > 0``). Candidates are taken greedily, largest overlap first (ties: earlier
start in the first annotator's claims, then in the second's); a claim takes at most one
partner per other annotator (:func:`claims_match`). The reliability report (metrics) and
the adjudication state (annotator) use this one rule.

Aligned rows (:func:`claims_aligned`) join the pairs of every two annotators into groups;
a row **differs** when an annotator has no claim in it (an unmatched claim), or two of its
claims differ in ``supported``, ``accurate`` or ``kind``. Sources, quotes, reasons and the
exact span boundaries may differ between agreeing claims, as evidence spans may between
agreeing predicates. A unit whose rows differ anywhere is disputed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Protocol

MIN_OVERLAP = 0.5
#: The claim fields whose difference makes aligned claims disagree.
CLAIM_VERDICT_FIELDS = ("supported", "accurate", "kind")


class Spanned(Protocol):
    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def overlap(a: Spanned, b: Spanned) -> int:
    return max(0, min(a.end, b.end) - max(a.start, b.start))


def claims_match(a: Sequence[Spanned], b: Sequence[Spanned]) -> list[tuple[int, int]]:
    """Greedy matching of two annotators' claims on one answer (module docstring):
    ``(index in a, index in b)`` pairs, sorted."""
    candidates = []
    for i, first in enumerate(a):
        for j, second in enumerate(b):
            shared = overlap(first, second)
            shorter = min(first.end - first.start, second.end - second.start)
            if shared > 0 and shared >= MIN_OVERLAP * shorter:
                candidates.append((-shared, first.start, second.start, i, j))
    candidates.sort()
    taken_a: set[int] = set()
    taken_b: set[int] = set()
    pairs = []
    for _, _, _, i, j in candidates:
        if i in taken_a or j in taken_b:
            continue
        taken_a.add(i)
        taken_b.add(j)
        pairs.append((i, j))
    return sorted(pairs)


def claim_span(claim: Mapping[str, Any]) -> Span:
    """The answer span of a stored claim (``{"span": {"start", "end", …}}``)."""
    span = claim.get("span") or {}
    return Span(int(span.get("start", 0)), int(span.get("end", 0)))


@dataclass(frozen=True)
class AlignedRow:
    """One group of aligned claims: for each annotator (in the order given) the indexes
    of their claims in the group (usually one; none when the annotator has no partner)."""

    members: tuple[tuple[int, ...], ...]
    differs: bool
    why: str | None  # "unmatched" or "verdicts" when it differs
    start: int  # the earliest answer start of its claims


def _verdicts(claim: Mapping[str, Any]) -> tuple:
    return tuple(claim.get(key) for key in CLAIM_VERDICT_FIELDS)


def claims_aligned(claim_lists: Sequence[Sequence[Mapping[str, Any]]]) -> list[AlignedRow]:
    """Group the claims of every annotator (one list per annotator) by pairwise matches;
    rows in answer order (earliest claim start first)."""
    spans = [[claim_span(c) for c in claims] for claims in claim_lists]
    parent: dict[tuple[int, int], tuple[int, int]] = {
        (who, i): (who, i) for who, claims in enumerate(claim_lists) for i in range(len(claims))
    }

    def root(node: tuple[int, int]) -> tuple[int, int]:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for first, second in combinations(range(len(claim_lists)), 2):
        for i, j in claims_match(spans[first], spans[second]):
            parent[root((second, j))] = root((first, i))
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for node in parent:
        groups.setdefault(root(node), []).append(node)
    rows = []
    for nodes in groups.values():
        members = tuple(
            tuple(sorted(i for who, i in nodes if who == annotator))
            for annotator in range(len(claim_lists))
        )
        start = min(spans[who][i].start for who, i in nodes)
        end = min(spans[who][i].end for who, i in nodes)
        why = None
        if any(len(indexes) != 1 for indexes in members):
            why = "unmatched"
        elif len({_verdicts(claim_lists[who][i]) for who, i in nodes}) > 1:
            why = "verdicts"
        row = AlignedRow(members=members, differs=why is not None, why=why, start=start)
        rows.append((start, end, min(nodes), row))
    rows.sort(key=lambda item: item[:3])
    return [row for *_, row in rows]


def claims_agree(claim_lists: Sequence[Sequence[Mapping[str, Any]]]) -> bool:
    """True when every claim has a partner in every other annotator's claims and aligned
    claims share their verdicts and kind: the claims do not dispute the unit."""
    return not any(row.differs for row in claims_aligned(claim_lists))


def _canonical(claim: Mapping[str, Any]) -> tuple:
    span = claim_span(claim)
    return (span.start, span.end, repr(sorted(claim.items())))


def claims_consensus(
    claim_lists: Sequence[Sequence[Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """The final claims of agreeing annotators: one per aligned row, the row's claim whose
    answer span comes first (start, then end, then its content) with every annotator's
    reason of the row joined in the same order, numbered ``c1``, ``c2`` … in answer order.
    Decided by the claims' content only, never by who submitted first."""
    final = []
    for number, row in enumerate(claims_aligned(claim_lists), start=1):
        claims = sorted(
            (claim_lists[who][i] for who, indexes in enumerate(row.members) for i in indexes),
            key=_canonical,
        )
        chosen = dict(claims[0])
        reasons = [c.get("reason") for c in claims if c.get("reason")]
        chosen["reason"] = " | ".join(reasons) if reasons else chosen.get("reason")
        chosen["id"] = f"c{number}"
        final.append(chosen)
    return final
