"""Coder × unit matrices and claim alignment for the reliability report: pure, no Django.

The selector (metrics.selectors) fetches the independent label rows; :func:`heads_from_rows`
keeps each annotator's latest revision per unit as columns (:class:`Heads`: NumPy arrays,
no object per label), and each item's matrix is an array of category codes, which
``reliability.summarize`` takes as it is (a numeric array, NaN for missing).

Values are categories as strings ("0", "1", "true", "false", a source role); an
unresolved judgment (JSON null) is :data:`U`. Each matrix exists in two treatments:

* ``u_category`` (headline): U is a category of its own;
* ``u_missing`` (sensitivity): U counts as missing, like a unit the coder never labelled.

**Claim alignment.** Annotators split answers into claims differently, so claims are
paired before their verdicts are compared, by the rule the adjudication state uses too
(audit.contract.claim_alignment: answer spans overlapping by at least half of the shorter
one, greedily, largest overlap first, one partner per other annotator). Each matched pair
is one unit of the claim-level matrices (two coders present, the others missing). A claim
that found no partner with any other annotator counts as unmatched for its annotator.

**Per-document fields** (``placement: document`` in a query_documents codebook) are items
whose units are the (unit, document) pairs: each document of each unit is one column of
the field's matrix, the coders who labelled that unit its rows (:func:`document_matrices`).
Their bootstrap resamples documents, clustered by their query's domain as units are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from audit.contract.canonical import encode_string
from audit.contract.claim_alignment import claims_match

U = "U"
#: The claim verdicts (a claims field's default ``claim_verdicts``) compared on matched claims.
CLAIM_ITEMS = (("supported", "Claim supported"), ("accurate", "Claim accurate"))


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
class Heads:
    """Each annotator's latest independent revision per unit, column by column: entry i of
    every array is one label, in (unit id, coder) order. Iterating gives :class:`Head`
    values (for inspection and tests; the report works on the columns)."""

    unit_ids: np.ndarray  # int64
    coders: tuple[str, ...]  # pseudonyms, sorted
    coder: np.ndarray  # int64 index into ``coders``
    codebooks: tuple[str, ...]  # codebook digests, sorted
    codebook: np.ndarray  # int64 index into ``codebooks``
    assisted: np.ndarray  # bool
    categories: tuple[tuple[str, ...], ...]  # per item: its categories, sorted (U included)
    codes: np.ndarray  # items x labels: int32 index into ``categories[item]``
    record_digests: np.ndarray  # object array of str
    claims: np.ndarray | None = None  # object array of tuple[ClaimSpan, ...] (answers)
    #: query_documents codebooks: per label, one tuple of categories per document (in the
    #: order of the per-document items; None: not answered), object array.
    documents: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.unit_ids)

    def __iter__(self) -> Iterator[Head]:
        for i in range(len(self)):
            yield self.head(i)

    def head(self, i: int) -> Head:
        return Head(
            unit_id=int(self.unit_ids[i]),
            coder=self.coders[self.coder[i]],
            record_digest=self.record_digests[i],
            codebook_digest=self.codebooks[self.codebook[i]],
            assisted=bool(self.assisted[i]),
            values=tuple(
                names[code] for names, code in zip(self.categories, self.codes[:, i], strict=True)
            ),
            claims=() if self.claims is None else self.claims[i],
        )


def _categorical(column: Sequence[Any]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Codes (int32) and sorted categories of one item's raw values (see :func:`category`)."""
    distinct = dict.fromkeys(column)
    if not all(value is None or type(value) is str for value in distinct):
        # 1 == True == 1.0 as dict keys, yet they are different categories: map first.
        column = list(map(category, column))
        distinct = dict.fromkeys(column)
    names = tuple(sorted({category(value) for value in distinct}))
    index = {name: i for i, name in enumerate(names)}
    lookup = {value: index[category(value)] for value in distinct}
    codes = np.fromiter(map(lookup.__getitem__, column), dtype=np.int32, count=len(column))
    return codes, names


def _distinct(column: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    names = tuple(sorted(dict.fromkeys(column)))
    index = {name: i for i, name in enumerate(names)}
    codes = np.fromiter(map(index.__getitem__, column), dtype=np.int64, count=len(column))
    return codes, names


def _ints(column: Sequence[int | None], missing: int = -1) -> np.ndarray:
    if None in column:
        column = [missing if value is None else value for value in column]
    return np.fromiter(column, dtype=np.int64, count=len(column))


def heads_from_rows(
    chunks: Iterable[Sequence[tuple]],
    *,
    n_items: int,
    coder_of: Callable[[int | None], str],
    claims_of: Callable[[Any], tuple[ClaimSpan, ...]] | None = None,
    documents_of: Callable[[Any], tuple[tuple[str | None, ...], ...]] | None = None,
) -> Heads:
    """The latest revision of each (unit, annotator) among independent label rows.

    Each row is ``(id, unit_id, annotator_id, revision, record_digest, codebook_digest,
    assisted, value_1 .. value_n_items[, claims])``, in any order and in chunks of any size;
    the row with the highest (revision, id) of its (unit, annotator) wins. ``coder_of``
    names an annotator id; ``claims_of`` turns the last column into claim spans (answer
    codebooks; without it there is no claims column); ``documents_of`` turns the last
    column into the per-document values (query_documents codebooks).
    """
    width = 7 + n_items + (claims_of is not None) + (documents_of is not None)
    columns: list[list[Any]] = [[] for _ in range(width)]
    for chunk in chunks:
        for i, column in enumerate(columns):
            column.extend([row[i] for row in chunk])  # ten times zip(*chunk)'s speed
    ids, unit_ids, annotators, revisions = (_ints(column) for column in columns[:4])
    annotator_ids = dict.fromkeys(columns[2])  # None (a deleted account) stays apart
    # Latest of each (unit, annotator): sort by (unit, annotator, revision, id), keep the last.
    order = np.lexsort((ids, revisions, annotators, unit_ids))
    last = np.ones(len(order), dtype=bool)
    if len(order):
        last[:-1] = (np.diff(unit_ids[order]) != 0) | (np.diff(annotators[order]) != 0)
    keep = order[last]
    # Coders by pseudonym, then labels in (unit, coder) order.
    name_of = {key: coder_of(key) for key in annotator_ids}
    coders = tuple(sorted(set(name_of.values())))
    rank = {name: i for i, name in enumerate(coders)}
    coder_rank = {(-1 if key is None else key): rank[name] for key, name in name_of.items()}
    distinct = np.unique(annotators[keep])
    table = np.array([coder_rank[key] for key in distinct.tolist()], dtype=np.int64)
    keep = keep[np.lexsort((table[np.searchsorted(distinct, annotators[keep])], unit_ids[keep]))]
    coder = table[np.searchsorted(distinct, annotators[keep])]
    codebook, codebooks = _distinct(columns[5])
    value_codes = []
    categories = []
    for column in columns[7 : 7 + n_items]:
        codes, names = _categorical(column)
        value_codes.append(codes[keep])
        categories.append(names)
    digests = np.empty(len(columns[4]), dtype=object)
    digests[:] = columns[4]
    claims = None
    if claims_of is not None:
        raw = columns[7 + n_items]
        claims = np.empty(len(keep), dtype=object)
        claims[:] = [claims_of(raw[i]) for i in keep.tolist()]
    documents = None
    if documents_of is not None:
        raw = columns[-1]
        documents = np.empty(len(keep), dtype=object)
        documents[:] = [documents_of(raw[i]) for i in keep.tolist()]
    return Heads(
        unit_ids=unit_ids[keep],
        coders=coders,
        coder=coder,
        codebooks=codebooks,
        codebook=codebook[keep],
        assisted=np.fromiter(map(bool, columns[6]), dtype=bool, count=len(columns[6]))[keep],
        categories=tuple(categories),
        codes=np.array(value_codes, dtype=np.int32).reshape(n_items, len(keep)),
        record_digests=digests[keep],
        claims=claims,
        documents=documents,
    )


def document_categories(documents: Any, codes: Sequence[str]) -> tuple[tuple[str | None, ...], ...]:
    """An annotation's ``documents`` list as categories: per document, one per field of
    ``codes`` (U for null, None where the field is not answered)."""
    out = []
    for entry in documents if isinstance(documents, list) else ():
        values = entry.get("values") if isinstance(entry, dict) else None
        values = values if isinstance(values, dict) else {}
        out.append(tuple(category(values[code]) if code in values else None for code in codes))
    return tuple(out)


@dataclass(frozen=True)
class UnitDomains:
    """Each unit's query domain (the bootstrap's cluster): ``names[codes[i]]`` is the
    domain of unit ``unit_ids[i]`` (sorted); a unit not listed has the domain ""."""

    unit_ids: np.ndarray  # int64, sorted
    codes: np.ndarray  # int64 index into ``names``
    names: tuple[str, ...]

    @classmethod
    def of(cls, unit_ids: Sequence[int], domains: Sequence[str | None]) -> UnitDomains:
        names = dict.fromkeys(["", *(domain or "" for domain in dict.fromkeys(domains))])
        index = {name: i for i, name in enumerate(names)}
        codes = np.fromiter(
            (index[domain or ""] for domain in domains), dtype=np.int64, count=len(domains)
        )
        ids = np.fromiter(unit_ids, dtype=np.int64, count=len(unit_ids))
        order = np.argsort(ids, kind="stable")
        return cls(ids[order], codes[order], tuple(names))

    def clusters(self, units: np.ndarray) -> np.ndarray:
        """The units' domains, numbered in order of first appearance (as
        ``reliability.summarize`` numbers cluster labels given as a list)."""
        units = np.asarray(units, dtype=np.int64)
        if not len(units):
            return np.zeros(0, dtype=np.int64)
        at = np.searchsorted(self.unit_ids, units)
        at[at >= len(self.unit_ids)] = 0
        found = len(self.unit_ids) > 0
        known = self.unit_ids[at] == units if found else np.zeros(len(units), dtype=bool)
        codes = np.where(known, self.codes[at] if found else 0, 0)  # names[0] is ""
        distinct, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        rank = np.empty(len(distinct), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(distinct))
        return rank[inverse.ravel()]


@dataclass(frozen=True)
class Matrix:
    """One item's coder x unit codes: ``categories[codes[c, u]]``, -1 where coder c did not
    label unit u. ``categories`` are the item's (sorted, U among them when used)."""

    coders: tuple[str, ...]
    units: np.ndarray  # int64 unit id of each column
    clusters: np.ndarray  # int64 query domain of each column, numbered by first appearance
    codes: np.ndarray  # coders x units, int32
    categories: tuple[str, ...]

    @classmethod
    def of_values(
        cls,
        coders: tuple[str, ...],
        units: Sequence[int],
        clusters: np.ndarray,
        data: Sequence[Sequence[str | None]],
    ) -> Matrix:
        """From rows of categories (None: not labelled)."""
        names = tuple(sorted({value for row in data for value in row if value is not None}))
        index = {None: -1, **{name: i for i, name in enumerate(names)}}
        codes = np.array([[index[value] for value in row] for row in data], dtype=np.int32).reshape(
            len(coders), len(units)
        )
        return cls(coders, np.asarray(units, dtype=np.int64), clusters, codes, names)

    @property
    def data(self) -> list[list[str | None]]:
        """U as its own category; None: not labelled."""
        names = [*self.categories, None]  # code -1 picks the trailing None
        return [[names[code] for code in row] for row in self.codes.tolist()]

    def treatment(self, *, u_missing: bool) -> np.ndarray:
        """The codes as floats with NaN for missing (``reliability``'s numeric form);
        with ``u_missing``, U is missing too."""
        values = self.codes.astype(np.float64)
        values[self.codes < 0] = np.nan
        if u_missing and U in self.categories:
            values[self.codes == self.categories.index(U)] = np.nan
        return values


def matrices(
    heads: Heads, selected: np.ndarray, domains: UnitDomains
) -> tuple[tuple[str, ...], np.ndarray, list[Matrix]]:
    """One coder x unit matrix per item over the ``selected`` labels' units (sorted by id),
    coders sorted by pseudonym; clusters are the units' query domains."""
    rows = np.flatnonzero(selected)
    units, column = np.unique(heads.unit_ids[rows], return_inverse=True)
    present, row = np.unique(heads.coder[rows], return_inverse=True)
    coders = tuple(heads.coders[i] for i in present.tolist())
    clusters = domains.clusters(units)
    grids = []
    for item, names in enumerate(heads.categories):
        codes = np.full((len(coders), len(units)), -1, dtype=np.int32)
        codes[row.ravel(), column.ravel()] = heads.codes[item, rows]
        grids.append(Matrix(coders, units, clusters, codes, names))
    return coders, units, grids


def document_matrices(
    heads: Heads, selected: np.ndarray, domains: UnitDomains, n_items: int
) -> tuple[int, list[Matrix]]:
    """One coder x (unit, document) matrix per per-document item over the ``selected``
    labels (columns in unit id, then document order; coders sorted by pseudonym), and how
    many (unit, document) columns there are."""
    rows = np.flatnonzero(selected).tolist()
    coders = tuple(sorted({heads.coders[heads.coder[i]] for i in rows}))
    coder_index = {coder: index for index, coder in enumerate(coders)}
    cells: dict[tuple[int, int], dict[int, tuple[str | None, ...]]] = {}
    documents = heads.documents if heads.documents is not None else np.empty(0, dtype=object)
    for i in rows:
        coder = coder_index[heads.coders[heads.coder[i]]]
        unit_id = int(heads.unit_ids[i])
        for document, values in enumerate(documents[i] if i < len(documents) else ()):
            cells.setdefault((unit_id, document), {})[coder] = values
    columns = sorted(cells)
    units = np.asarray([unit for unit, _ in columns], dtype=np.int64)
    clusters = domains.clusters(units)
    grids = []
    for item in range(n_items):
        data = [
            [(cells[column][coder][item] if coder in cells[column] else None) for column in columns]
            for coder in range(len(coders))
        ]
        grids.append(Matrix.of_values(coders, units, clusters, data))
    return len(columns), grids


@dataclass
class ClaimAlignment:
    coders: tuple[str, ...]
    claims: dict[str, int] = field(default_factory=dict)  # per coder: claims split
    unmatched: dict[str, int] = field(default_factory=dict)  # per coder
    matched_pairs: int = 0
    matrices: list[Matrix] = field(default_factory=list)  # one per CLAIM_ITEMS entry


def claims_align(heads: Sequence[Head], domains: UnitDomains) -> ClaimAlignment:
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
    clusters = domains.clusters(np.asarray(units, dtype=np.int64))
    alignment.matrices = [Matrix.of_values(coders, units, clusters, grid) for grid in grids]
    return alignment


def pooled_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two vectors listing, for every pair of coders (first in pseudonym order) and every
    unit both labelled, the first coder's code and the second's: the input of a confusion
    matrix pooled over annotator pairs."""
    first, second = [], []
    for a, b in combinations(range(len(codes)), 2):
        both = (codes[a] >= 0) & (codes[b] >= 0)
        first.append(codes[a][both])
        second.append(codes[b][both])
    if not first:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    return np.concatenate(first), np.concatenate(second)


def labels_digest_input(digests: Iterable[str]) -> list[str]:
    """What ``labels_digest`` hashes: the sorted record digests of the labels used."""
    return sorted(digests)


def labels_digest_of(digests: Iterable[str]) -> str:
    """``canonical_digest(labels_digest_input(digests))``, without building the canonical
    text of a million-item list through the general encoder: the same bytes, hashed."""
    text = ",".join(map(encode_string, labels_digest_input(digests)))
    return hashlib.sha256(f"[{text}]".encode()).hexdigest()
