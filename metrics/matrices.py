"""Coder × unit matrices and claim alignment for the reliability report: pure, no Django.

The selector (metrics.selectors) fetches each annotator's latest independent revision per
unit into :class:`Head` values; everything here works on those plain values.

Values are categories as strings ("0", "1", "true", "false", a source role); an
unresolved judgment (JSON null) is :data:`U`. Each matrix exists in two treatments:

* ``u_category`` (headline): U is a category of its own;
* ``u_missing`` (sensitivity): U counts as missing, like a unit the coder never labelled.

**Claim alignment.** Annotators split answers into claims differently, so claims are
paired before their verdicts are compared. For every pair of annotators who labelled the
same answer, each claim of one is a candidate partner of each claim of the other whose
answer span overlaps it by at least half of the *shorter* span, in code points
(``overlap >= 0.5 * min(len_a, len_b)`` and ``overlap > 0``). Candidates are taken
greedily, largest overlap first (ties: earlier start in the first annotator's claims, then
in the second's); a claim takes at most one partner per other annotator. Each matched pair
is one unit of the claim-level matrices (two coders present, the others missing). A claim
that found no partner with any other annotator counts as unmatched for its annotator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

U = "U"
#: Answer-claims: the claim verdicts compared on matched claims.
CLAIM_ITEMS = (("supported", "Claim supported"), ("accurate", "Claim accurate"))
MIN_OVERLAP = 0.5


def category(value: Any) -> str | None:
    """A judgment as a category string; None (unresolved) becomes U."""
    if value is None or value == "null":  # "null": a JSON null read as text (SQLite)
        return U
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class ClaimSpan:
    start: int
    end: int
    values: tuple[str | None, ...]  # in CLAIM_ITEMS order, as categories


@dataclass(frozen=True)
class Head:
    """One annotator's latest independent revision on one unit."""

    unit_id: int
    coder: str  # the annotator's pseudonym: never a username
    record_digest: str
    codebook_digest: str
    assisted: bool
    values: tuple[str | None, ...]  # one category per item of the codebook, U for null
    claims: tuple[ClaimSpan, ...] = ()


@dataclass(frozen=True)
class Matrix:
    coders: tuple[str, ...]
    units: tuple[int, ...]
    clusters: tuple[str, ...]
    data: list[list[str | None]]  # U as its own category; None: not labelled

    def u_missing(self) -> list[list[str | None]]:
        return [[None if value == U else value for value in row] for row in self.data]


def matrices(
    heads: Sequence[Head], n_items: int, domain_of: dict[int, str]
) -> tuple[tuple[str, ...], tuple[int, ...], list[Matrix]]:
    """One coder × unit matrix per item over the units the heads cover (sorted by id),
    coders sorted by pseudonym; clusters are the units' query domains."""
    coders = tuple(sorted({head.coder for head in heads}))
    units = tuple(sorted({head.unit_id for head in heads}))
    coder_index = {coder: index for index, coder in enumerate(coders)}
    unit_index = {unit: index for index, unit in enumerate(units)}
    clusters = tuple(domain_of.get(unit, "") for unit in units)
    grids = [[[None] * len(units) for _ in coders] for _ in range(n_items)]
    for head in heads:
        row, column = coder_index[head.coder], unit_index[head.unit_id]
        for item, value in enumerate(head.values):
            grids[item][row][column] = value
    return coders, units, [Matrix(coders, units, clusters, grid) for grid in grids]


def overlap(a: ClaimSpan, b: ClaimSpan) -> int:
    return max(0, min(a.end, b.end) - max(a.start, b.start))


def claims_match(a: Sequence[ClaimSpan], b: Sequence[ClaimSpan]) -> list[tuple[int, int]]:
    """Greedy matching of two annotators' claims on one answer (module docstring)."""
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


@dataclass
class ClaimAlignment:
    coders: tuple[str, ...]
    claims: dict[str, int] = field(default_factory=dict)  # per coder: claims split
    unmatched: dict[str, int] = field(default_factory=dict)  # per coder
    matched_pairs: int = 0
    matrices: list[Matrix] = field(default_factory=list)  # one per CLAIM_ITEMS entry


def claims_align(heads: Sequence[Head], domain_of: dict[int, str]) -> ClaimAlignment:
    """Pair claims per answer and annotator pair; matrices over the matched pairs."""
    coders = tuple(sorted({head.coder for head in heads}))
    coder_index = {coder: index for index, coder in enumerate(coders)}
    by_unit: dict[int, list[Head]] = {}
    for head in heads:
        by_unit.setdefault(head.unit_id, []).append(head)
    alignment = ClaimAlignment(coders=coders)
    alignment.claims = {coder: 0 for coder in coders}
    alignment.unmatched = {coder: 0 for coder in coders}
    grids: list[list[list[str | None]]] = [[[] for _ in coders] for _ in CLAIM_ITEMS]
    units: list[int] = []
    for unit_id in sorted(by_unit):
        unit_heads = sorted(by_unit[unit_id], key=lambda head: head.coder)
        matched: dict[str, set[int]] = {head.coder: set() for head in unit_heads}
        for head in unit_heads:
            alignment.claims[head.coder] += len(head.claims)
        for first, second in combinations(unit_heads, 2):
            for i, j in claims_match(first.claims, second.claims):
                matched[first.coder].add(i)
                matched[second.coder].add(j)
                alignment.matched_pairs += 1
                units.append(unit_id)
                for item, grid in enumerate(grids):
                    for row in grid:
                        row.append(None)
                    grid[coder_index[first.coder]][-1] = first.claims[i].values[item]
                    grid[coder_index[second.coder]][-1] = second.claims[j].values[item]
        for head in unit_heads:
            alignment.unmatched[head.coder] += len(head.claims) - len(matched[head.coder])
    clusters = tuple(domain_of.get(unit, "") for unit in units)
    alignment.matrices = [Matrix(coders, tuple(units), clusters, grid) for grid in grids]
    return alignment


def pooled_pairs(
    data: Sequence[Sequence[str | None]],
) -> tuple[list[str | None], list[str | None]]:
    """Two vectors listing, for every pair of coders (first in pseudonym order) and every
    unit both labelled, the first coder's value and the second's: the input of a confusion
    matrix pooled over annotator pairs."""
    first: list[str | None] = []
    second: list[str | None] = []
    for a, b in combinations(range(len(data)), 2):
        for x, y in zip(data[a], data[b], strict=True):
            if x is not None and y is not None:
                first.append(x)
                second.append(y)
    return first, second


def labels_digest_input(digests: Iterable[str]) -> list[str]:
    """What ``labels_digest`` hashes: the sorted record digests of the labels used."""
    return sorted(digests)
