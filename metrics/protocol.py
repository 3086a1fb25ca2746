"""Seed 002's evaluation protocol: NetGain (pairwise side by side), PassR (answer rubric),
Acc_qd, e(q), Usable_q and HighQ_q (query–document grades).

Pure tier: no Django, DRF or Celery. DESIGN.md, "Seed 002's evaluation protocol (three
codebooks)"; seed 002 §VII-B (metrics) and §IV (Content Trustworthiness, which decides when
a document fails trust). A selector fetches the labels into plain values or the dataclasses
below; everything here computes on those and returns small frozen dataclasses of plain
values: counts, a ``value`` (a float, ``None`` when undefined, with a ``reason`` code) and,
where asked, an interval.

Inputs and U
------------
* **Pairwise** (:func:`net_gain`, :func:`net_gain_bootstrap`): counts, or one judgment
  ``"G"``/``"S"``/``"B"`` per answer pair for the *evaluated* system (the server has already
  mapped left/right back).
* **Answer rubric** (:func:`answer_pass`, :func:`pass_rate`): one answer's grades 0/1/2
  per dimension, ``None`` for U. A decided fail wins over a U; otherwise a U leaves the
  pass unknown, and unknowns are counted beside the rate, never in it.
* **Query–document grades** (:class:`Document`, :func:`document_trust`,
  :func:`document_grade`, :func:`revised_grades`, :func:`query_grade`, :func:`accuracy_qd`,
  :func:`usability`): per document a grade a ∈ {0, 1, 2} (``None`` for U) and the trust
  dimensions. Grades are evaluated three-valued as for answers: a result that every
  resolution of the U grades agrees on is reported, otherwise it is unknown.

Errors
------
Invalid input raises :class:`ProtocolInputError` (a ``ValueError``; the same ``code``,
``field`` and message as :class:`metrics.estimates.EstimateInputError`), whose ``field`` is
the path of the offending value (``queries[1][3]``, ``documents[2].authority``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from statistics import NormalDist
from typing import Any

import numpy as np

from audit.contract import codes
from metrics.estimates import (
    LENGTH_MISMATCH,
    EstimateInputError,
    cluster_bootstrap_totals,
    percentile_interval,
)

__all__ = [
    "AUTHORITY_LEVELS",
    "CONTRADICTED",
    "DOMAIN_ALIGNMENTS",
    "DUPLICATE_DOCUMENT",
    "FAILED_TRUST",
    "GRADES",
    "JUDGMENTS",
    "LENGTH_MISMATCH",
    "NO_DECIDED_ANSWERS",
    "NO_GRADED_QUERIES",
    "NO_JUDGMENTS",
    "REDUNDANT",
    "UNKNOWN_DOCUMENT",
    "Contradiction",
    "Document",
    "NetGain",
    "PassRate",
    "ProtocolInputError",
    "QueryAccuracy",
    "Rate",
    "RedundancyGroup",
    "RevisedGrades",
    "Trust",
    "Usability",
    "accuracy_qd",
    "answer_pass",
    "document_grade",
    "document_trust",
    "higher_trust",
    "net_gain",
    "net_gain_bootstrap",
    "pass_rate",
    "query_grade",
    "revised_grades",
    "usability",
]

#: Rubric and document grades: 0 clear failure, 1 basically satisfied, 2 strong.
GRADES = (0, 1, 2)
#: Pairwise judgments for the evaluated system: Good, Same, Bad.
JUDGMENTS = ("G", "S", "B")
#: Authority levels of the source taxonomy (seed 002 §IV-C).
AUTHORITY_LEVELS = {3: "government", 2: "enterprise", 1: "verified individual", 0: "individual"}
#: Domain alignment between the query's domain and the source's.
DOMAIN_ALIGNMENTS = ("full", "partial", "absent")

#: Reason of an undefined NetGain: no pair was judged (N = 0).
NO_JUDGMENTS = "no_judgments"
#: Reason of an undefined PassR: no answer has a decided pass.
NO_DECIDED_ANSWERS = "no_decided_answers"
#: Reason of an undefined Acc_qd, Usable_q or HighQ_q: no query has a decided value.
NO_GRADED_QUERIES = "no_graded_queries"

#: Input error: two documents of one query share an id.
DUPLICATE_DOCUMENT = "duplicate_document"
#: Input error: a contradiction or redundancy group names a document the query lacks.
UNKNOWN_DOCUMENT = "unknown_document"

#: Why a revised grade a′ is 0 although a was not (see :func:`revised_grades`).
FAILED_TRUST = "failed_trust"
CONTRADICTED = "contradicted"
REDUNDANT = "redundant"


class ProtocolInputError(EstimateInputError):
    """Invalid input to a protocol metric: ``code`` is a reason code, ``field`` the path of
    the offending value (``documents[2].authority``); the message names both."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _invalid(path: str, expected: str, value: Any) -> ProtocolInputError:
    return ProtocolInputError(codes.INVALID_FIELD, path, f"is {_show(value)}; expected {expected}")


def _sequence(value: Any, path: str, expected: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise _invalid(path, expected, value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value if isinstance(value, Sequence) else list(value)


def _count(value: Any, path: str) -> int:
    if type(value) is not int or value < 0:
        raise _invalid(path, "an integer >= 0", value)
    return value


def _grade(value: Any, path: str) -> int | None:
    if value is not None and (type(value) is not int or value not in GRADES):
        raise _invalid(path, "a grade 0, 1 or 2, or None for U", value)
    return value


def _check_confidence(confidence: Any) -> float:
    ok = isinstance(confidence, (int, float)) and not isinstance(confidence, bool)
    if not ok or not math.isfinite(confidence) or not 0.0 < confidence < 1.0:
        raise _invalid("confidence", "a number strictly between 0 and 1", confidence)
    return float(confidence)


@dataclass(frozen=True)
class Rate:
    """``numerator`` / ``denominator``; ``value`` is ``None`` (with ``reason``) when the
    denominator is 0."""

    numerator: int
    denominator: int
    value: float | None
    reason: str | None = None


def _rate(numerator: int, denominator: int, reason: str) -> Rate:
    if denominator == 0:
        return Rate(numerator, 0, None, reason)
    return Rate(numerator, denominator, numerator / denominator)


# --- pairwise side by side: NetGain ---------------------------------------------------------


@dataclass(frozen=True)
class NetGain:
    """NetGain = (N_G − N_B) / N × 100% for the evaluated system against its baseline.

    ``numerator`` is N_G − N_B, ``denominator`` N = N_G + N_S + N_B. ``value``, ``low`` and
    ``high`` are **in percent** (8.9 means +8.9%), like the seed's tables; ``None`` with
    ``reason`` :data:`NO_JUDGMENTS` when N = 0. ``method`` names the interval: ``"normal"``
    (:func:`net_gain`) or ``"cluster_bootstrap"`` (:func:`net_gain_bootstrap`, which also
    sets ``clusters``, the number of queries resampled, and ``n_boot``/``seed``).
    """

    good: int
    same: int
    bad: int
    numerator: int
    denominator: int
    value: float | None
    low: float | None
    high: float | None
    confidence: float
    method: str
    clusters: int | None = None
    n_boot: int | None = None
    seed: int | None = None
    reason: str | None = None


def net_gain(good: int, same: int, bad: int, confidence: float = 0.95) -> NetGain:
    """NetGain from the counts of Good, Same and Bad judgments, with a normal interval.

    The interval is p̂ ± z·√(v/N) on p̂ = p_G − p_B, where p_G = N_G/N, p_B = N_B/N,
    v = p_G + p_B − (p_G − p_B)² (the variance of one judgment scored +1/0/−1) and z the
    standard normal quantile at (1 + confidence)/2; it is clipped to [−100%, 100%], the
    range NetGain can take. G 189, S 711, B 100 gives +8.9% [5.61%, 12.19%].
    N = 0: ``value``, ``low`` and ``high`` are ``None`` with ``reason`` NO_JUDGMENTS.
    """
    g, s, b = _count(good, "good"), _count(same, "same"), _count(bad, "bad")
    level = _check_confidence(confidence)
    n = g + s + b
    if n == 0:
        return NetGain(g, s, b, 0, 0, None, None, None, level, "normal", reason=NO_JUDGMENTS)
    p_good, p_bad = g / n, b / n
    diff = (g - b) / n
    variance = max(p_good + p_bad - diff * diff, 0.0) / n
    half = NormalDist().inv_cdf(0.5 + level / 2.0) * math.sqrt(variance)
    return NetGain(
        g,
        s,
        b,
        g - b,
        n,
        100.0 * diff,
        100.0 * max(diff - half, -1.0),
        100.0 * min(diff + half, 1.0),
        level,
        "normal",
    )


def net_gain_bootstrap(
    judgments: Sequence[str],
    clusters: Sequence[Hashable] | None,
    seed: int,
    n_boot: int = 1000,
    *,
    confidence: float = 0.95,
) -> NetGain:
    """NetGain from per-pair judgments with a percentile interval from a bootstrap clustered
    by query.

    ``judgments``: ``"G"``, ``"S"`` or ``"B"`` per judged pair; ``clusters``: the query id
    of each pair (``None``: each pair its own cluster). A resample draws as many queries as
    there are, with replacement, keeping all their pairs, and recomputes NetGain; the
    interval (in percent) is its (1 ∓ confidence)/2 quantiles, reproducible for a ``seed``.
    The point value is :func:`net_gain`'s.
    """
    items = _sequence(judgments, "judgments", 'a sequence of "G", "S" or "B"')
    for i, judgment in enumerate(items):
        if not isinstance(judgment, str) or judgment not in JUDGMENTS:
            raise _invalid(f"judgments[{i}]", '"G", "S" or "B"', judgment)
    if clusters is not None and len(clusters) != len(items):
        raise ProtocolInputError(
            LENGTH_MISMATCH,
            "clusters",
            f"has {len(clusters)} entries for {len(items)} judgments; one query id per pair",
        )
    point = net_gain(items.count("G"), items.count("S"), items.count("B"), confidence)
    score = {"G": 1.0, "S": 0.0, "B": -1.0}
    columns = np.array([[score[j], 1.0] for j in items]).reshape(len(items), 2)
    try:
        totals = cluster_bootstrap_totals(columns, clusters, n_boot=n_boot, seed=seed)
    except EstimateInputError as exc:
        raise ProtocolInputError(exc.code, exc.field, exc.detail) from None
    n_clusters = len(set(clusters)) if clusters is not None else len(items)
    low = high = None
    if point.value is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            samples = 100.0 * totals[:, 0] / totals[:, 1]
        low, high = percentile_interval(samples, point.confidence)
    return NetGain(
        point.good,
        point.same,
        point.bad,
        point.numerator,
        point.denominator,
        point.value,
        low,
        high,
        point.confidence,
        "cluster_bootstrap",
        clusters=n_clusters,
        n_boot=n_boot,
        seed=seed,
        reason=point.reason,
    )


# --- answer rubric: pass and PassR ----------------------------------------------------------


def answer_pass(grades: Iterable[int | None], threshold: int = 1) -> bool | None:
    """Whether one answer passes the rubric: ``True``, ``False`` or ``None`` (unknown).

    ``grades``: the answer's grade per dimension (0, 1 or 2; ``None`` for U). The answer
    fails as soon as one decided grade is below ``threshold`` (1 or 2; the seed's rule is 1:
    the minimum must be ≥ 1), even beside a U — no resolution of the U could save it.
    Otherwise a U leaves the pass unknown (``None``); with every grade ≥ ``threshold`` it
    passes. No grade at all is unknown too.
    """
    if type(threshold) is not int or threshold not in (1, 2):
        raise _invalid("threshold", "1 or 2", threshold)
    values = _sequence(grades, "grades", "a sequence of grades")
    unknown = not values
    for i, grade in enumerate(values):
        if _grade(grade, f"grades[{i}]") is None:
            unknown = True
        elif grade < threshold:
            return False
    return None if unknown else True


@dataclass(frozen=True)
class PassRate:
    """PassR = passing answers / answers with a decided pass (``numerator`` /
    ``denominator``); ``unknown`` counts the answers whose pass is ``None``, beside the rate
    and never in it. ``value`` is ``None`` with ``reason`` NO_DECIDED_ANSWERS when no pass
    is decided."""

    numerator: int
    denominator: int
    unknown: int
    value: float | None
    reason: str | None = None


def pass_rate(answers: Iterable[bool | None]) -> PassRate:
    """PassR over answers given by their pass values (``True``, ``False`` or ``None``, as
    :func:`answer_pass` returns them)."""
    values = _sequence(answers, "answers", "a sequence of True, False or None")
    passed = failed = unknown = 0
    for i, value in enumerate(values):
        if value is None:
            unknown += 1
        elif value is True:
            passed += 1
        elif value is False:
            failed += 1
        else:
            raise _invalid(f"answers[{i}]", "True, False or None", value)
    rate = _rate(passed, passed + failed, NO_DECIDED_ANSWERS)
    return PassRate(rate.numerator, rate.denominator, unknown, rate.value, rate.reason)


# --- query–document grades: trust and a(q, d) -----------------------------------------------


@dataclass(frozen=True)
class Document:
    """One retrieved document of a query, as labelled in a ``query_documents`` unit.

    * ``id``: the document's identity within the query (hashable, unique per query).
    * ``grade``: the annotator's a(q, d) for its contribution to the answer — 0 none,
      1 valid but limited, 2 strong — or ``None`` for U. Trust is applied on top of it
      (:func:`document_grade`).
    * ``authority``: the source taxonomy level A(q, d) — 3 government, 2 enterprise,
      1 verified individual, 0 ordinary individual.
    * ``domain_alignment`` (``"full"``, ``"partial"``, ``"absent"``) and
      ``producer_profile`` (1 passes the reliability check, 0 does not): needed only for an
      individual source (authority 0 or 1); ``None`` when not recorded.
    * ``expiry_boundary``: the query's expiration boundary τ_exp, or ``None`` when the query
      is not sensitive to stale content (then W_temp does not apply); ``content_time``: the
      time the content describes, τ_cont. Both are ``datetime.date`` values.
    * ``info``: W_info — 1 when every externally verifiable claim the answer uses from the
      document is corroborated, 0 when one is contradicted or unresolved, ``None`` when it
      has no such claim (not applicable).
    """

    id: Hashable
    grade: int | None
    authority: int
    domain_alignment: str | None = None
    producer_profile: int | None = None
    content_time: date | None = None
    expiry_boundary: date | None = None
    info: int | None = None


@dataclass(frozen=True)
class Trust:
    """A document's trust dimensions, each 1 (satisfied) or 0, ``None`` where not applicable:
    ``source`` (W_src, always applicable), ``temporal`` (W_temp), ``info`` (W_info); and
    ``value``, the minimum of the applicable ones (seed 002 §IV: non-compensatory)."""

    source: int
    temporal: int | None
    info: int | None
    value: int

    @property
    def failed(self) -> bool:
        return self.value == 0


def _binary(value: Any, path: str) -> int | None:
    if value is not None and (type(value) is not int or value not in (0, 1)):
        raise _invalid(path, "0, 1 or None", value)
    return value


def _date(value: Any, path: str) -> date | None:
    if value is not None and (not isinstance(value, date) or isinstance(value, datetime)):
        raise _invalid(path, "a datetime.date or None", value)
    return value


def _check_document(document: Any, path: str) -> Document:
    if not isinstance(document, Document):
        raise _invalid(path, "a Document", document)
    if not isinstance(document.id, Hashable):
        raise _invalid(f"{path}.id", "a hashable id", document.id)
    _grade(document.grade, f"{path}.grade")
    if type(document.authority) is not int or document.authority not in AUTHORITY_LEVELS:
        raise _invalid(f"{path}.authority", "0, 1, 2 or 3", document.authority)
    alignment = document.domain_alignment
    if alignment is not None and alignment not in DOMAIN_ALIGNMENTS:
        raise _invalid(f"{path}.domain_alignment", '"full", "partial", "absent" or None', alignment)
    _binary(document.producer_profile, f"{path}.producer_profile")
    _date(document.content_time, f"{path}.content_time")
    _date(document.expiry_boundary, f"{path}.expiry_boundary")
    _binary(document.info, f"{path}.info")
    return document


def _trust(document: Document) -> Trust:
    if document.authority >= 2:
        source = 1
    else:
        aligned = document.domain_alignment == "full"
        source = int(aligned and document.producer_profile == 1)
    temporal = None
    if document.expiry_boundary is not None:
        content = document.content_time
        temporal = int(content is not None and content > document.expiry_boundary)
    applicable = [d for d in (source, temporal, document.info) if d is not None]
    return Trust(source, temporal, document.info, min(applicable))


def document_trust(document: Document) -> Trust:
    """The trust dimensions of one document and their minimum (seed 002 §IV-C).

    * W_src = 1 for a government or enterprise source (authority ≥ 2); an individual source
      (authority 0 or 1) needs full domain alignment *and* a producer profile of 1. A
      missing alignment or profile counts as not established (0), as the seed scores
      "insufficient evidence of a reliable producer".
    * W_temp applies only when the query has an expiry boundary: 1 when the content time
      lies strictly after it (τ_cont − τ_exp > 0), 0 when it does not or the content time
      is unknown. The seed leaves τ_cont = τ_exp open; here it does not pass.
    * W_info as recorded (``None``: not applicable).

    A document **fails trust** when the minimum of its applicable dimensions is 0, i.e. at
    least one applicable dimension is 0; it then has a = 0 (:func:`document_grade`). The
    seed's hard constraint for queries that demand an official source is not modelled.
    """
    return _trust(_check_document(document, "document"))


def document_grade(document: Document) -> int | None:
    """a(q, d) after trust: 0 when the document fails trust (even if its grade is U, as no
    contribution can rescue an untrusted source), otherwise its grade (``None`` for U)."""
    _check_document(document, "document")
    return 0 if _trust(document).failed else document.grade


def _levels(document: Document, trust: Trust) -> dict[str, tuple]:
    levels: dict[str, tuple] = {"source": (trust.source, document.authority)}
    if trust.temporal is not None:
        levels["temporal"] = (trust.temporal, document.content_time or date.min)
    if trust.info is not None:
        levels["info"] = (trust.info,)
    return levels


def higher_trust(a: Document, b: Document) -> bool:
    """Whether document ``a`` has higher trust than ``b`` (the contradiction rule).

    The aggregate trust is binary, so it cannot rank two documents that both pass; "higher
    source, temporal or factual trustworthiness" (seed 002 §VII-B1) is read per dimension,
    each on a graded level: source (W_src, then authority 3 > 2 > 1 > 0), temporal (W_temp,
    then the later content time) and information (W_info). ``a`` has higher trust when it
    passes trust itself, is at least as high as ``b`` on every dimension applicable to
    both, and strictly higher on at least one. This is a strict partial order: of two
    documents at most one is higher, and often neither is.
    """
    _check_document(a, "a")
    _check_document(b, "b")
    return _higher(a, _trust(a), b, _trust(b))


def _higher(a: Document, trust_a: Trust, b: Document, trust_b: Trust) -> bool:
    if trust_a.failed:
        return False
    levels_a, levels_b = _levels(a, trust_a), _levels(b, trust_b)
    shared = [name for name in levels_a if name in levels_b]
    pairs = [(levels_a[name], levels_b[name]) for name in shared]
    return all(x >= y for x, y in pairs) and any(x > y for x, y in pairs)


# --- set level: a′(q, d) --------------------------------------------------------------------


@dataclass(frozen=True)
class Contradiction:
    """Two documents of the query whose information contradicts each other (by id)."""

    first: Hashable
    second: Hashable


@dataclass(frozen=True)
class RedundancyGroup:
    """Documents (by id) that are highly redundant with each other; ``representative``,
    one of ``members``, keeps its grade."""

    representative: Hashable
    members: tuple[Hashable, ...]


@dataclass(frozen=True)
class RevisedGrades:
    """Revised grades of one query's documents, in input order.

    ``ids``; ``grades`` a(q, d) after trust; ``revised`` a′(q, d); ``reasons`` why a′ was
    set to 0 (:data:`FAILED_TRUST`, :data:`CONTRADICTED`, :data:`REDUNDANT`, the first that
    applies, or ``None``); ``undecided_contradictions``: contradictions where neither
    document has higher trust, so neither grade changed (an adjudicator's question).
    """

    ids: tuple[Hashable, ...]
    grades: tuple[int | None, ...]
    revised: tuple[int | None, ...]
    reasons: tuple[str | None, ...]
    undecided_contradictions: tuple[Contradiction, ...]


def _known(document_id: Any, positions: dict, path: str) -> int:
    try:
        return positions[document_id]
    except (KeyError, TypeError):
        raise ProtocolInputError(
            UNKNOWN_DOCUMENT, path, f"is {_show(document_id)}, not a document of this query"
        ) from None


def revised_grades(
    documents: Sequence[Document],
    contradictions: Iterable[Contradiction] = (),
    redundancy: Iterable[RedundancyGroup] = (),
) -> RevisedGrades:
    """The set-level grades a′(q, d) of one query's documents (seed 002 §VII-B1).

    a′ = 0 when the document fails trust (then a = 0 already); when it is in a
    :class:`Contradiction` with a document of higher trust (:func:`higher_trust`); or when
    it is a member but not the representative of a :class:`RedundancyGroup`. Otherwise
    a′ = a (``None`` stays U). A contradiction where neither document has higher trust
    changes nothing and is listed in ``undecided_contradictions``.
    """
    docs = _sequence(documents, "documents", "a sequence of Document")
    positions: dict[Hashable, int] = {}
    trusts = []
    for i, document in enumerate(docs):
        _check_document(document, f"documents[{i}]")
        if document.id in positions:
            raise ProtocolInputError(
                DUPLICATE_DOCUMENT,
                f"documents[{i}].id",
                f"is {_show(document.id)}, already the id of documents[{positions[document.id]}]",
            )
        positions[document.id] = i
        trusts.append(_trust(document))
    grades = [0 if t.failed else d.grade for d, t in zip(docs, trusts, strict=True)]
    reasons: list[str | None] = [FAILED_TRUST if t.failed else None for t in trusts]
    contradicted, redundant = set(), set()
    undecided = []
    items = _sequence(contradictions, "contradictions", "a sequence of Contradiction")
    for i, pair in enumerate(items):
        if not isinstance(pair, Contradiction):
            raise _invalid(f"contradictions[{i}]", "a Contradiction", pair)
        x = _known(pair.first, positions, f"contradictions[{i}].first")
        y = _known(pair.second, positions, f"contradictions[{i}].second")
        if x == y:
            raise _invalid(f"contradictions[{i}].second", "a document other than first", pair)
        if _higher(docs[x], trusts[x], docs[y], trusts[y]):
            contradicted.add(y)
        elif _higher(docs[y], trusts[y], docs[x], trusts[x]):
            contradicted.add(x)
        else:
            undecided.append(pair)
    groups = _sequence(redundancy, "redundancy", "a sequence of RedundancyGroup")
    for i, group in enumerate(groups):
        if not isinstance(group, RedundancyGroup):
            raise _invalid(f"redundancy[{i}]", "a RedundancyGroup", group)
        members = _sequence(group.members, f"redundancy[{i}].members", "a sequence of ids")
        indices = [
            _known(m, positions, f"redundancy[{i}].members[{j}]") for j, m in enumerate(members)
        ]
        keep = _known(group.representative, positions, f"redundancy[{i}].representative")
        if keep not in indices:
            raise _invalid(
                f"redundancy[{i}].representative",
                "one of the group's members",
                group.representative,
            )
        redundant.update(j for j in indices if j != keep)
    revised = list(grades)
    for j in range(len(docs)):
        if j in contradicted or j in redundant:
            revised[j] = 0
            if reasons[j] is None:
                reasons[j] = CONTRADICTED if j in contradicted else REDUNDANT
    return RevisedGrades(
        tuple(d.id for d in docs),
        tuple(grades),
        tuple(revised),
        tuple(reasons),
        tuple(undecided),
    )


# --- query level: e(q), Acc_qd, Usable_q, HighQ_q -------------------------------------------


def _e(grades: Sequence[int]) -> int:
    usable = sum(1 for a in grades if a >= 1)
    if min(grades) >= 1 and max(grades) == 2:
        return 2
    return 1 if 5 * usable >= 4 * len(grades) else 0  # share ≥ 0.8, in integers


def _query_grade(grades: Sequence[Any], path: str) -> int | None:
    values = [_grade(a, f"{path}[{i}]") for i, a in enumerate(grades)]
    if not values:
        return None
    # e is non-decreasing in every grade, so the U grades' extreme resolutions bound it.
    low = _e([0 if a is None else a for a in values])
    high = _e([2 if a is None else a for a in values])
    return low if low == high else None


def query_grade(revised_grades: Iterable[int | None]) -> int | None:
    """e(q) from one query's revised grades a′ (0, 1, 2, or ``None`` for U).

    e = 2 if min a′ ≥ 1 and max a′ = 2; else 1 if the share of a′ ≥ 1 is ≥ 0.8; else 0.
    ``None`` when the query has no document (e undefined), or when its U grades leave e
    open: e is reported only if every resolution of the U grades gives the same value (so
    {0, 0, 0, 0, U} is 0, {2, 2, 2, 2, U} unknown).
    """
    values = _sequence(revised_grades, "revised_grades", "a sequence of grades")
    return _query_grade(values, "revised_grades")


@dataclass(frozen=True)
class QueryAccuracy:
    """Acc_qd, the macro average over queries of the share of documents with a ≥ 1.

    ``numerator`` is the sum of the per-query shares, ``denominator`` the number of queries
    averaged; ``no_documents`` counts queries without a document and ``unknown_queries``
    those whose documents are all U, both apart; ``unknown_documents`` counts U documents,
    left out of their query's share. ``value`` is ``None`` (``reason`` NO_GRADED_QUERIES)
    when no query is averaged.
    """

    numerator: float
    denominator: int
    value: float | None
    no_documents: int
    unknown_queries: int
    unknown_documents: int
    reason: str | None = None


def _queries(queries: Any) -> list[Sequence[Any]]:
    out = []
    for i, grades in enumerate(_sequence(queries, "queries", "a sequence of queries")):
        out.append(_sequence(grades, f"queries[{i}]", "a sequence of grades"))
    return out


def accuracy_qd(queries: Iterable[Sequence[int | None]]) -> QueryAccuracy:
    """Acc_qd over ``queries``, each the grades a(q, d) of its documents after trust
    (:func:`document_grade`; ``None`` for U)."""
    total = 0.0
    averaged = no_documents = unknown_queries = unknown_documents = 0
    for i, grades in enumerate(_queries(queries)):
        decided = [a for j, a in enumerate(grades) if _grade(a, f"queries[{i}][{j}]") is not None]
        unknown_documents += len(grades) - len(decided)
        if not grades:
            no_documents += 1
        elif not decided:
            unknown_queries += 1
        else:
            total += sum(1 for a in decided if a >= 1) / len(decided)
            averaged += 1
    value = total / averaged if averaged else None
    return QueryAccuracy(
        total,
        averaged,
        value,
        no_documents,
        unknown_queries,
        unknown_documents,
        None if averaged else NO_GRADED_QUERIES,
    )


@dataclass(frozen=True)
class Usability:
    """Usable_q (share of queries with e ≥ 1) and HighQ_q (share with e = 2).

    ``grades`` is e(q) per query in input order (``None`` where undefined); both rates
    share the denominator of queries with a decided e. ``no_documents`` counts queries
    without a document and ``unknown`` those whose U grades leave e open, both apart.
    """

    usable: Rate
    high_quality: Rate
    grades: tuple[int | None, ...]
    no_documents: int
    unknown: int


def usability(queries: Iterable[Sequence[int | None]]) -> Usability:
    """Usable_q and HighQ_q over ``queries``, each the revised grades a′ of its documents
    (:func:`revised_grades`); e(q) as :func:`query_grade` computes it."""
    grades: list[int | None] = []
    no_documents = unknown = 0
    for i, revised in enumerate(_queries(queries)):
        e = _query_grade(revised, f"queries[{i}]")
        grades.append(e)
        if not revised:
            no_documents += 1
        elif e is None:
            unknown += 1
    decided = [e for e in grades if e is not None]
    return Usability(
        _rate(sum(1 for e in decided if e >= 1), len(decided), NO_GRADED_QUERIES),
        _rate(sum(1 for e in decided if e == 2), len(decided), NO_GRADED_QUERIES),
        tuple(grades),
        no_documents,
        unknown,
    )
