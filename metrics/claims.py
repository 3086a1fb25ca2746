"""Answer-level verdict rates and claim-level metrics of format 1's answer codebook.

Pure Python: no Django, DRF or Celery (STYLE.md, the pure tier). A selector fetches the
assessments once into plain dicts (or :class:`Assessment` values); everything here computes
on those and returns plain JSON-serializable values. DESIGN.md, "Claims and answer-level
verdicts"; seed 003 (verdict rates, denominators, unknowns, execution failures, grouping)
and seed 001 (FActScore support precision, VeriScore, position buckets).

Two units, never combined under one name (seed 003: "ALCE's citation evaluation and
practical answer-level summary metrics use different units; do not combine them under one
score name"):

* **Answer level** (:func:`evaluate`, :func:`grouped`). One verdict per completed answer.
  ``numerator`` counts ``true``, ``denominator`` counts ``true`` and ``false`` (the answers
  *assessed* for that verdict) and ``unknown`` counts ``null``. Seed 003: "Do not classify
  unknowns as right or wrong; display them beside the assessable denominator." Failed
  attempts (execution failures) count in ``attempts`` and ``failed`` only.
* **Claim level** (:func:`claim_counts`, :func:`support_precision`, :func:`veriscore`,
  :func:`support_by_position`). Verifiable claims of completed answers; ``not_truth_apt``
  claims (opinion, advice) are counted apart and never enter a rate. A claim whose
  ``supported`` is ``null`` is *unresolved*: it stays in the denominator and is reported as
  ``unknown``, apart from ``unsupported`` (``false``). Seed 001: "Distinguish a
  non-truth-apt opinion from a truth-apt claim for which search finds no evidence. Dropping
  the latter as 'unverifiable' would artificially raise precision."

A *response* is one completed answer; failed attempts have no response and are left out
of every claim-level result. Per-response entries carry the answer's identity
(``question_id``, ``question_version``, ``question_type``, ``service``, ``mode``, ``model``,
``raw_path``) in input order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from audit.contract import codes
from audit.contract.endpoint import VERDICTS, summarize_supported

#: The six answer-level verdicts, in the codebook's order.
STATUSES = ("complete", "failed")
CLAIM_KINDS = ("verifiable", "not_truth_apt")
#: Fields an assessment can be grouped by.
GROUP_FIELDS = ("question_id", "question_version", "question_type", "service", "mode", "model")
DEFAULT_GROUP_BY = ("question_id", "question_version", "service", "mode", "model")

#: Reason code of a count that is negative, not an integer or above its denominator.
INVALID_COUNT = "invalid_count"
#: Reason code of a failed attempt that carries verdicts, reasons or claims.
FAILED_WITH_VERDICTS = "failed_with_verdicts"

_IDENTITY = (*GROUP_FIELDS, "raw_path")
_CLAIM_KEYS = ("text", "source_url", "quote", "supported", "accurate", "kind", "reason")


class ClaimsInputError(ValueError):
    """Invalid input to a claim metric: ``code`` is a reason code, ``field`` the path of the
    offending value (``rows[2].claims[0].quote``); the message names both."""

    def __init__(self, code: str, field: str, message: str) -> None:
        super().__init__(f"{field}: {message} [{code}]")
        self.code = code
        self.field = field
        self.detail = message


@dataclass(frozen=True)
class Claim:
    """One core claim of an answer. ``position`` is the claim's start offset in the answer
    and ``answer_length`` the answer's length, both in code points (optional together)."""

    text: str
    source_url: str | None
    quote: str | None
    supported: bool | None
    accurate: bool | None
    kind: str
    reason: str | None
    position: int | None = None
    answer_length: int | None = None


@dataclass(frozen=True)
class Assessment:
    """One answer assessment (one attempt). A failed attempt has ``failure`` set, every
    verdict ``None``, no reasons and no claims."""

    question_id: str
    question_version: str
    service: str
    mode: str
    model: str | None
    status: str
    failure: str | None
    raw_path: str | None
    cited: bool | None
    supported: bool | None
    accurate: bool | None
    timely: bool | None
    relevant: bool | None
    complete: bool | None
    reasons: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    claims: tuple[Claim, ...] = ()
    question_type: str | None = None
    domain: str | None = None  # the query's domain: VeriScore's cohort K is per domain

    def verdict(self, name: str) -> bool | None:
        if name not in VERDICTS:
            raise KeyError(name)
        return getattr(self, name)


# --- validation -----------------------------------------------------------------------------


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _missing(path: str) -> ClaimsInputError:
    return ClaimsInputError(codes.MISSING_FIELD, path, "is missing")


def _invalid(path: str, expected: str, value: Any) -> ClaimsInputError:
    return ClaimsInputError(codes.INVALID_FIELD, path, f"is {_show(value)}; expected {expected}")


def _text(d: Mapping[str, Any], key: str, path: str, *, optional: bool = False) -> str | None:
    if key not in d:
        if optional:
            return None
        raise _missing(path)
    value = d[key]
    if value is None and optional:
        return None
    if type(value) is not str or not value:
        raise _invalid(path, "a non-empty string" + (" or null" if optional else ""), value)
    return value


def _verdict(value: Any, path: str) -> bool | None:
    if value is not None and type(value) is not bool:
        raise _invalid(path, "true, false or null", value)
    return value


def _count(value: Any, path: str, *, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise ClaimsInputError(
            INVALID_COUNT, path, f"is {_show(value)}; expected an integer >= {minimum}"
        )
    return value


def _claim_from_dict(d: Any, path: str) -> Claim:
    if not isinstance(d, Mapping):
        raise _invalid(path, "an object", d)
    for key in _CLAIM_KEYS:
        if key not in d:
            raise _missing(f"{path}.{key}")
    text = _text(d, "text", f"{path}.text")
    source_url = _text(d, "source_url", f"{path}.source_url", optional=True)
    quote = d["quote"]
    if quote is not None and type(quote) is not str:
        raise _invalid(f"{path}.quote", "a string or null", quote)
    supported = _verdict(d["supported"], f"{path}.supported")
    accurate = _verdict(d["accurate"], f"{path}.accurate")
    kind = d["kind"]
    if kind not in CLAIM_KINDS:
        raise _invalid(f"{path}.kind", " or ".join(CLAIM_KINDS), kind)
    reason = d["reason"]
    if reason is not None and type(reason) is not str:
        raise _invalid(f"{path}.reason", "a string or null", reason)
    if quote is not None and source_url is None:
        raise ClaimsInputError(
            codes.SPAN_MALFORMED, f"{path}.source_url", "is null, but the claim quotes a source"
        )
    if supported is not None and quote is None:
        raise ClaimsInputError(
            codes.SPAN_MISSING,
            f"{path}.quote",
            f"is null, but supported is resolved ({str(supported).lower()}); "
            "cite the source passage",
        )
    position = d.get("position")
    answer_length = d.get("answer_length")
    if answer_length is not None:
        answer_length = _count(answer_length, f"{path}.answer_length")
    if position is not None:
        position = _count(position, f"{path}.position")
        if answer_length is None:
            raise _missing(f"{path}.answer_length")
        if position >= answer_length:
            raise ClaimsInputError(
                INVALID_COUNT,
                f"{path}.position",
                f"is {position}; a start offset lies below answer_length ({answer_length})",
            )
    return Claim(
        text=text,  # type: ignore[arg-type]
        source_url=source_url,
        quote=quote,
        supported=supported,
        accurate=accurate,
        kind=kind,
        reason=reason,
        position=position,
        answer_length=answer_length,
    )


def assessment_from_dict(d: Mapping[str, Any]) -> Assessment:
    """Validate one assessment row and return it as an :class:`Assessment`.

    Raises :class:`ClaimsInputError` (a ``ValueError``) naming the field. Every row needs
    ``question_id``, ``question_version``, ``service``, ``mode`` (non-empty strings),
    ``model`` (a string, or null when the service does not disclose it) and ``status``.
    A completed row also needs ``raw_path``, the six verdicts (each true, false or null),
    ``reasons`` with an entry for every verdict (text, or null where none was recorded) and
    ``claims``; a claim that resolves ``supported`` must quote its source, and answer-level
    ``supported`` must equal the claims' summary (false if any verifiable claim is false,
    true only if there is at least one and all are true, otherwise null) or the row is
    refused as a summary mismatch. A failed row needs ``failure`` and carries no verdicts,
    reasons or claims. Keys not named here are ignored.
    """
    if not isinstance(d, Mapping):
        raise _invalid("row", "an object", d)
    status = d.get("status")
    if "status" not in d:
        raise _missing("status")
    if status not in STATUSES:
        raise _invalid("status", " or ".join(STATUSES), status)
    identity = {key: _text(d, key, key) for key in ("question_id", "question_version")}
    identity.update({key: _text(d, key, key) for key in ("service", "mode")})
    if "model" not in d:
        raise _missing("model")
    model = _text(d, "model", "model", optional=True)
    question_type = _text(d, "question_type", "question_type", optional=True)
    domain = _text(d, "domain", "domain", optional=True)

    if status == "failed":
        failure = _text(d, "failure", "failure")
        for key in VERDICTS:
            if d.get(key) is not None:
                raise ClaimsInputError(
                    FAILED_WITH_VERDICTS,
                    key,
                    f"is {_show(d[key])}; a failed attempt carries its failure and no verdicts",
                )
        for key in ("reasons", "claims"):
            if d.get(key):
                raise ClaimsInputError(
                    FAILED_WITH_VERDICTS, key, "is not empty; a failed attempt has no " + key
                )
        return Assessment(
            **identity,  # type: ignore[arg-type]
            model=model,
            status=status,
            failure=failure,
            raw_path=_text(d, "raw_path", "raw_path", optional=True),
            cited=None,
            supported=None,
            accurate=None,
            timely=None,
            relevant=None,
            complete=None,
            question_type=question_type,
            domain=domain,
        )

    if d.get("failure") is not None:
        raise _invalid("failure", "null for a completed answer", d["failure"])
    raw_path = _text(d, "raw_path", "raw_path")
    verdicts: dict[str, bool | None] = {}
    for key in VERDICTS:
        if key not in d:
            raise _missing(key)
        verdicts[key] = _verdict(d[key], key)
    if "reasons" not in d:
        raise _missing("reasons")
    reasons = d["reasons"]
    if not isinstance(reasons, Mapping):
        raise _invalid("reasons", "an object mapping each verdict to its reason", reasons)
    for key in reasons:
        if key not in VERDICTS:
            raise _invalid(f"reasons.{key}", "a key among " + ", ".join(VERDICTS), key)
    for key in VERDICTS:
        if key not in reasons:
            raise _missing(f"reasons.{key}")
        if reasons[key] is not None and type(reasons[key]) is not str:
            raise _invalid(f"reasons.{key}", "a string or null", reasons[key])
    if "claims" not in d:
        raise _missing("claims")
    raw_claims = d["claims"]
    if isinstance(raw_claims, (str, bytes, Mapping)) or not isinstance(raw_claims, Sequence):
        raise _invalid("claims", "a list of claims", raw_claims)
    claims = tuple(_claim_from_dict(c, f"claims[{i}]") for i, c in enumerate(raw_claims))
    lengths = {c.answer_length for c in claims if c.answer_length is not None}
    if len(lengths) > 1:
        raise ClaimsInputError(
            INVALID_COUNT,
            "claims[].answer_length",
            f"differs between claims of one answer ({sorted(lengths)})",
        )
    summary = summarize_supported({"kind": c.kind, "supported": c.supported} for c in claims)
    if verdicts["supported"] is not summary:
        raise ClaimsInputError(
            codes.SUMMARY_MISMATCH,
            "supported",
            f"is {_json(verdicts['supported'])}, but the verifiable claims summarize to "
            f"{_json(summary)} (summary mismatch: false if any is false, true only if all "
            "are true, otherwise null)",
        )
    return Assessment(
        **identity,  # type: ignore[arg-type]
        model=model,
        status=status,
        failure=None,
        raw_path=raw_path,
        **verdicts,
        reasons=MappingProxyType({key: reasons[key] for key in VERDICTS}),
        claims=claims,
        question_type=question_type,
        domain=domain,
    )


def _json(value: bool | None) -> str:
    return "null" if value is None else str(value).lower()


def assessments(rows: Iterable[Assessment | Mapping[str, Any]]) -> list[Assessment]:
    """Rows read once into :class:`Assessment` values: every function here takes them in
    place of the rows, so that several tables of the same rows read them only once."""
    return _assessments(rows)


def _assessments(rows: Iterable[Assessment | Mapping[str, Any]]) -> list[Assessment]:
    if isinstance(rows, (str, bytes, Mapping, Assessment)):
        raise _invalid("rows", "an iterable of assessment rows", rows)
    out = []
    for index, row in enumerate(rows):
        if isinstance(row, Assessment):
            out.append(row)
            continue
        try:
            out.append(assessment_from_dict(row))
        except ClaimsInputError as exc:
            raise ClaimsInputError(exc.code, f"rows[{index}].{exc.field}", exc.detail) from None
    return out


# --- counts and rates -----------------------------------------------------------------------


def _rate(numerator: int | Fraction, denominator: int | Fraction) -> float | None:
    return None if denominator == 0 else float(Fraction(numerator) / Fraction(denominator))


def ratio(numerator: int, denominator: int) -> dict[str, Any]:
    """``{"numerator", "denominator", "rate"}``; ``rate`` is ``None`` for a zero denominator.

    Counts must be integers with ``0 <= numerator <= denominator``; anything else (a
    negative count, a fraction, a numerator above its denominator) is refused.
    """
    _count(numerator, "numerator")
    _count(denominator, "denominator")
    if numerator > denominator:
        raise ClaimsInputError(
            INVALID_COUNT,
            "numerator",
            f"is {numerator}, above its denominator {denominator}",
        )
    return {
        "numerator": numerator,
        "denominator": denominator,
        "rate": _rate(numerator, denominator),
    }


def _verdict_count(values: Iterable[bool | None]) -> dict[str, Any]:
    values = list(values)
    result = ratio(values.count(True), values.count(True) + values.count(False))
    result["unknown"] = values.count(None)
    return result


def evaluate(rows: Iterable[Assessment | Mapping[str, Any]]) -> dict[str, Any]:
    """Attempts, completed, failed and the six verdict counts over completed answers.

    ``{"attempts", "completed", "failed", "cited": {...}, ..., "complete": {...}}`` where each
    verdict entry is ``{"numerator", "denominator", "rate", "unknown"}``:

    * numerator: completed answers judged ``true`` (e.g. "normal answers citing a relevant
      document"); denominator: completed answers judged ``true`` or ``false`` ("normal
      answers assessed for citation"); rate ``None`` when nothing was assessed;
    * unknown: completed answers judged ``null`` (seed 003: "Even normal answers with
      truncated or unchecked source areas remain unknown"; "Do not classify unknowns as
      right or wrong; display them beside the assessable denominator");
    * failed attempts ("service errors, restrictions, and response failures") are
      execution failures: counted in ``attempts`` and ``failed``, never in a denominator or
      in ``unknown`` (seed 003: "if two of twelve attempts fail and four of ten normal
      answers cite the document, report 4/10 together with two failures").

    ``complete`` the verdict (sufficient coverage) is separate from ``status: complete``.
    With small samples show the counts, not the rate alone.
    """
    assessments = _assessments(rows)
    completed = [a for a in assessments if a.status == "complete"]
    result: dict[str, Any] = {
        "attempts": len(assessments),
        "completed": len(completed),
        "failed": len(assessments) - len(completed),
    }
    for name in VERDICTS:
        result[name] = _verdict_count(a.verdict(name) for a in completed)
    return result


def grouped(
    rows: Iterable[Assessment | Mapping[str, Any]],
    by: Sequence[str] = DEFAULT_GROUP_BY,
) -> list[dict[str, Any]]:
    """One :func:`evaluate` result per group, as ``{"group": {field: value}, **evaluate}``.

    Groups appear in order of their first row. ``model`` is the disclosed model; rows whose
    model is undisclosed (``None``) form their own group rather than being guessed into
    another (seed 003: "Include confirmed models in the aggregation key so model changes
    are not mixed").

    Question types are never pooled: if any row carries a ``question_type``, the key always
    includes ``question_type`` even when ``by`` leaves it out (seed 003: natural-discovery,
    specified-source and specific-document questions have different conditions, "so
    calculate citation rates separately"). Rows without a type then form their own group.
    """
    if isinstance(by, str):
        raise _invalid("by", "a sequence of field names", by)
    keys = list(by)
    for key in keys:
        if key not in GROUP_FIELDS:
            raise _invalid("by", "field names among " + ", ".join(GROUP_FIELDS), key)
    if len(set(keys)) != len(keys):
        raise _invalid("by", "distinct field names", list(by))
    assessments = _assessments(rows)
    if "question_type" not in keys and any(a.question_type is not None for a in assessments):
        keys.append("question_type")
    groups: dict[tuple[Any, ...], list[Assessment]] = {}
    for a in assessments:
        groups.setdefault(tuple(getattr(a, key) for key in keys), []).append(a)
    return [
        {"group": dict(zip(keys, key, strict=True)), **evaluate(members)}
        for key, members in groups.items()
    ]


# --- claim level ----------------------------------------------------------------------------


def _identity(a: Assessment) -> dict[str, Any]:
    return {key: getattr(a, key) for key in _IDENTITY}


def _verifiable(a: Assessment) -> list[Claim]:
    return [c for c in a.claims if c.kind == "verifiable"]


def _tally(claims: Sequence[Claim]) -> dict[str, int]:
    values = [c.supported for c in claims]
    return {
        "supported": values.count(True),
        "unsupported": values.count(False),
        "unknown": values.count(None),
    }


def _responses(rows: Iterable[Assessment | Mapping[str, Any]]) -> list[Assessment]:
    return [a for a in _assessments(rows) if a.status == "complete"]


def claim_counts(rows: Iterable[Assessment | Mapping[str, Any]]) -> dict[str, Any]:
    """Claim counts of completed answers.

    ``{"total", "verifiable", "not_truth_apt", "responses", "empty_answers", "per_response"}``:
    ``total`` = verifiable + not_truth_apt; ``empty_answers`` counts completed answers with
    no verifiable claim (an abstention, or opinion only), reported rather than silently
    dropped. Each per-response entry has the answer's identity, ``total``, ``verifiable``,
    ``not_truth_apt``, ``supported``, ``unsupported``, ``unknown`` (verifiable claims by
    their ``supported`` value) and ``empty_answer``.
    """
    per_response = []
    for a in _responses(rows):
        verifiable = _verifiable(a)
        per_response.append(
            {
                **_identity(a),
                "total": len(a.claims),
                "verifiable": len(verifiable),
                "not_truth_apt": len(a.claims) - len(verifiable),
                **_tally(verifiable),
                "empty_answer": not verifiable,
            }
        )
    return {
        "total": sum(r["total"] for r in per_response),
        "verifiable": sum(r["verifiable"] for r in per_response),
        "not_truth_apt": sum(r["not_truth_apt"] for r in per_response),
        "responses": len(per_response),
        "empty_answers": sum(r["empty_answer"] for r in per_response),
        "per_response": per_response,
    }


def support_precision(rows: Iterable[Assessment | Mapping[str, Any]]) -> dict[str, Any]:
    """FActScore-style support precision: supported verifiable claims / verifiable claims.

    Two aggregations, labelled and both returned, because they differ (seed 001: counts one
    and nine with support counts one and zero give a response mean of 0.5 but a pooled
    precision of 1/10):

    * ``per_response``: one entry per completed answer with its identity, ``numerator``
      (supported), ``denominator`` (verifiable claims), ``rate``, ``unsupported``,
      ``unknown`` (unresolved, kept in the denominator) and ``empty_answer``;
      ``mean_per_response`` averages the rates of non-empty answers, each answer weighted
      equally (``None`` when there is none);
    * ``pooled``: claim counts summed over answers, each claim weighted equally.

    ``not_truth_apt`` claims are excluded. An answer without verifiable claims is an *empty
    answer*: its rate is ``None`` (the ratio is undefined, neither 0 nor 1), it is left out
    of the mean and counted in ``empty_answers``.
    """
    per_response = []
    for a in _responses(rows):
        verifiable = _verifiable(a)
        tally = _tally(verifiable)
        entry = {**_identity(a), **ratio(tally["supported"], len(verifiable))}
        entry.update(
            unsupported=tally["unsupported"],
            unknown=tally["unknown"],
            empty_answer=not verifiable,
        )
        per_response.append(entry)
    nonempty = [r for r in per_response if not r["empty_answer"]]
    mean = None
    if nonempty:
        total = sum(Fraction(r["numerator"], r["denominator"]) for r in nonempty)
        mean = float(total / len(nonempty))
    pooled = ratio(
        sum(r["numerator"] for r in per_response), sum(r["denominator"] for r in per_response)
    )
    pooled.update(
        unsupported=sum(r["unsupported"] for r in per_response),
        unknown=sum(r["unknown"] for r in per_response),
    )
    return {
        "per_response": per_response,
        "mean_per_response": mean,
        "pooled": pooled,
        "responses": len(per_response),
        "empty_answers": len(per_response) - len(nonempty),
    }


def _median(values: Sequence[int]) -> Fraction:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return Fraction(ordered[middle])
    return Fraction(ordered[middle - 1] + ordered[middle], 2)


def veriscore_cohort(rows: Iterable[Assessment | Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """VeriScore's reference K per domain: the median verifiable-claim count of the cohort's
    completed answers in that domain (rows without a ``domain`` form the domain ``""``).

    Pass the **whole cohort** (every assessed answer of the study, before any report filter)
    and keep the result with the report: :func:`veriscore` with ``cohort=`` then scores a
    filtered selection against the cohort's K, so filtering to one service never moves K
    (nor, therefore, an unchanged answer's score). ``{domain: {"K", "answers"}}``; ``K`` is
    ``None`` for a median of 0 (recall undefined)."""
    counts: dict[str, list[int]] = {}
    for a in _responses(rows):
        counts.setdefault(a.domain or "", []).append(len(_verifiable(a)))
    out = {}
    for domain in sorted(counts):
        median = _median(counts[domain])
        out[domain] = {"K": float(median) if median else None, "answers": len(counts[domain])}
    return out


def veriscore(
    rows: Iterable[Assessment | Mapping[str, Any]],
    *,
    K: float | None = None,
    cohort: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """VeriScore per completed answer and its mean over answers.

    For an answer with ``C`` verifiable claims of which ``s`` are supported:
    ``P = s/C``, ``R = min(s/K, 1)``, ``score = 2PR/(P+R)``, and ``score = 0`` when
    ``s = 0`` (also for an empty answer, whose ``P`` is ``None``). The recall term counts
    *supported* claims, so unsupported padding cannot raise it; unresolved claims count in
    ``C`` and are reported as ``unknown``.

    ``K`` defaults to the median ``C`` over the answers given: the **versioned comparison
    cohort**. The caller passes the cohort of one codebook version and one version of each
    question (the responses of the compared services/models in one domain); a different
    cohort changes the median and so the scores of unchanged answers, so freeze the cohort
    for a comparison, and report ``K`` with the scores. A ``K`` passed explicitly (a fixed
    reference, a local variant of the method) must be positive. A cohort whose median is 0
    has no defined recall: ``recall``, ``score`` and ``mean`` are then ``None``; pass ``K``
    to declare a policy.

    ``cohort`` (from :func:`veriscore_cohort` over the whole cohort) gives each answer the K
    of its domain instead: the reports pass it so that their filters never change K.
    ``K_source`` is then ``"cohort_by_domain"``, ``K`` the one K if every answer shares it
    (else ``None``) and ``K_by_domain`` the K of each domain scored; an answer of a domain
    without K has no score and ``mean`` is over the ``scored`` answers.

    Returns ``{"K", "K_source" ("cohort_median" | "given" | "cohort_by_domain"),
    "K_by_domain", "responses", "scored", "per_response", "mean"}``; each per-response entry has the
    answer's identity, its ``domain`` and ``K``, ``C``, ``s``, ``unknown``,
    ``not_truth_apt``, ``precision``, ``recall`` and ``score``. Computed in exact fractions;
    floats only in the result.
    """
    responses = _responses(rows)
    counts = [(len(v), _tally(v)) for v in (_verifiable(a) for a in responses)]
    if K is not None and cohort is not None:
        raise _invalid("K", "None when a cohort is given", K)
    references: list[Fraction | None]
    if cohort is not None:
        source = "cohort_by_domain"
        references = []
        for a in responses:
            entry = cohort.get(a.domain or "") or {}
            k = entry.get("K")
            references.append(Fraction(k) if k else None)
    elif K is None:
        source = "cohort_median"
        median = _median([c for c, _ in counts]) if counts else None
        references = [median] * len(responses)
    else:
        if type(K) not in (int, float) or not math.isfinite(K) or K <= 0:
            raise _invalid("K", "a positive finite number", K)
        source = "given"
        references = [Fraction(K)] * len(responses)
    per_response = []
    scores = []
    for a, (claims, tally), reference in zip(responses, counts, references, strict=True):
        s = tally["supported"]
        precision = Fraction(s, claims) if claims else None
        recall = min(Fraction(s) / reference, Fraction(1)) if reference else None
        if recall is None:
            score = None
        elif s == 0:
            score = Fraction(0)
        else:
            score = 2 * precision * recall / (precision + recall)  # type: ignore[operator]
        scores.append(score)
        per_response.append(
            {
                **_identity(a),
                "domain": a.domain,
                "K": None if reference is None else float(reference),
                "C": claims,
                "s": s,
                "unknown": tally["unknown"],
                "not_truth_apt": len(a.claims) - claims,
                "precision": None if precision is None else float(precision),
                "recall": None if recall is None else float(recall),
                "score": None if score is None else float(score),
            }
        )
    mean = None
    defined = [score for score in scores if score is not None]
    if cohort is not None:
        # Per-domain K: an answer of a domain without a K (no assessed answer there yet)
        # has no score; the mean is over the scored answers and the rest are counted.
        if defined:
            mean = float(sum(defined, Fraction(0)) / len(defined))
    elif scores and len(defined) == len(scores):
        mean = float(sum(defined, Fraction(0)) / len(defined))
    distinct = set(references)
    if cohort is None and K is None and not responses:
        k_value = None
    elif len(distinct) == 1:
        only = next(iter(distinct))
        k_value = None if only is None else float(only)
    else:
        k_value = None
    by_domain: dict[str, float | None] = {}
    for a, reference in zip(responses, references, strict=True):
        by_domain[a.domain or ""] = None if reference is None else float(reference)
    return {
        "K": k_value,
        "K_source": source,
        "K_by_domain": dict(sorted(by_domain.items())),
        "responses": len(per_response),
        "scored": len(defined),
        "per_response": per_response,
        "mean": mean,
    }


def support_by_position(
    rows: Iterable[Assessment | Mapping[str, Any]], bins: int = 5
) -> list[dict[str, Any]]:
    """Support of verifiable claims by where they start in the answer.

    A claim with ``position`` p in an answer of ``answer_length`` n falls in bin
    ``floor(p * bins / n)`` (exact integer arithmetic), i.e. fifths of the answer by
    default. One entry per bin, in order: ``{"bin", "start", "end", "numerator",
    "denominator", "rate", "unsupported", "unknown", "responses"}`` where ``start``/``end``
    bound the relative position, ``numerator`` counts supported claims, ``denominator`` all
    verifiable claims in the bin (unresolved ones included and also counted in ``unknown``)
    and ``responses`` the answers contributing a claim. Claims without a position are left
    out (compare with :func:`claim_counts`). Bins pool claims across answers, so a long
    answer weighs more; read the counts, not only the rate.
    """
    if type(bins) is not int or bins < 1:
        raise ClaimsInputError(INVALID_COUNT, "bins", f"is {_show(bins)}; expected an integer >= 1")
    claims: list[list[Claim]] = [[] for _ in range(bins)]
    responses: list[set[int]] = [set() for _ in range(bins)]
    for index, a in enumerate(_responses(rows)):
        for c in _verifiable(a):
            if c.position is None or c.answer_length is None:
                continue
            b = c.position * bins // c.answer_length
            claims[b].append(c)
            responses[b].add(index)
    result = []
    for b in range(bins):
        tally = _tally(claims[b])
        entry = {"bin": b, "start": b / bins, "end": (b + 1) / bins}
        entry.update(ratio(tally["supported"], len(claims[b])))
        entry.update(
            unsupported=tally["unsupported"], unknown=tally["unknown"], responses=len(responses[b])
        )
        result.append(entry)
    return result
