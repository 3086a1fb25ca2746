"""The record checker: validate one record and audit it (DESIGN.md, "Contract validation").

Fixed order, first failure decides the reason:

1. envelope (``claimgate``, ``format_version``, ``codebook``), codebook known, every other
   required field present and well-typed; snapshot digests (answer, then source(s)), the
   tuple digest (the unit digest for an answer codebook), the record digest;
2. predicate types and evidence spans (format 1's tuple codebook), or claims, their spans,
   verdict types and the ``supported`` summary (format 1's answer codebook);
3. evidence dimensions, values and weights against the codebook;
4. resolve R_O (and the short-circuit sensitivity); 5. priority; 6. the stage reached.

The codebook is resolved right after the envelope because it decides the record's shape
(a tuple or an answer unit). A malformed record is refused with a reason code and a
sentence, never turned into a label; a well-formed record with U (``null``) judgments is
accepted and yields ``endpoint=None``.

A tuple record of a format-1 codebook is first tried in one pass that accepts it only when
every rule holds (``_accepted_tuple``, "the fast path" below); any other record, and one
that pass does not accept, goes through the stages in the order above.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from dataclasses import fields as dc_fields
from datetime import date, datetime
from hashlib import sha256
from json.encoder import encode_basestring
from typing import Any

from audit.contract import codes
from audit.contract.canonical import (
    _ORJSON_OPTIONS,
    CanonicalError,
    _refuse,
    canonical_chunks_unchecked,
    canonical_json_unchecked,
    may_hold_small_float,
    orjson,
)
from audit.contract.codebook import Codebook
from audit.contract.digests import (
    answer_pair_digest,
    pipeline_identity_text,
    query_documents_digest,
    text_digest,
    tuple_digest_unchecked,
    unit_digest,
)
from audit.contract.endpoint import (
    policy_action,
    resolve_complete_case,
    resolve_short_circuit,
    summarize_supported,
)
from audit.contract.errors import ContractError, show, type_name
from audit.contract.fields import check_annotation, derive, derive_short_circuit
from audit.contract.structure import (
    CITATION_KINDS,
    QUESTION_TYPES,
    check_answer,
    check_pipeline,
    check_query,
    check_sampling,
    check_source,
    fields,
    invalid,
    snapshot_matches,
    snapshot_texts,
    string,
)

STAGE_STRUCTURAL = "structural"
ANNOTATION_KINDS = frozenset({"independent", "consensus", "adjudicated"})
PREDICATE_KEYS = ("I", "A", "M", "D")
PASSAGE_SUPPORT = "passage_support"
#: Judgments that may carry spans, in the order their spans are checked.
JUDGMENTS = (*PREDICATE_KEYS, PASSAGE_SUPPORT)
_JUDGMENT_SET = frozenset(JUDGMENTS)
_PREDICATE_SET = frozenset(PREDICATE_KEYS)
WEIGHT_TOLERANCE = 1e-9
_DIGEST = re.compile(r"[0-9a-f]{64}")

_ENVELOPE = ("claimgate", "format_version", "codebook")
_CODEBOOK_REF = ("name", "version")
_CODEBOOK_REF_SET = frozenset(_CODEBOOK_REF)
_TUPLE_TOP = (
    "claimgate",
    "format_version",
    "codebook",
    "query",
    "pipeline",
    "answer",
    "source",
    "tuple_digest",
    "annotation",
    "parents",
    "record_digest",
)
_ANSWER_TOP = (
    "claimgate",
    "format_version",
    "codebook",
    "query",
    "pipeline",
    "answer",
    "sources",
    "unit_digest",
    "annotation",
    "parents",
    "record_digest",
)
_TOP_OPTIONAL = frozenset({"sampling"})
_TUPLE_TOP_SET = frozenset(_TUPLE_TOP) | _TOP_OPTIONAL
_ANSWER_TOP_SET = frozenset(_ANSWER_TOP) | _TOP_OPTIONAL

_TUPLE_ANNOTATION = ("kind", "annotator", "predicates", "source_role", "spans", "evidence")
_TUPLE_ANNOTATION_OPTIONAL = frozenset({"passage_support", "rationale", "assisted"})
_TUPLE_ANNOTATION_SET = frozenset(_TUPLE_ANNOTATION) | _TUPLE_ANNOTATION_OPTIONAL
_ANSWER_ANNOTATION = ("kind", "annotator", "claims", "verdicts")
_ANSWER_ANNOTATION_OPTIONAL = frozenset({"rationale", "assisted"})
_ANSWER_ANNOTATION_SET = frozenset(_ANSWER_ANNOTATION) | _ANSWER_ANNOTATION_OPTIONAL
_ASSISTED = ("model",)
_ASSISTED_SET = frozenset(_ASSISTED)
_CLAIM = ("id", "span", "source_digest", "quote_span", "supported", "accurate", "kind", "reason")
_CLAIM_SET = frozenset(_CLAIM)
_VERDICT = ("value", "reason")
_VERDICT_SET = frozenset(_VERDICT)
_SPAN = ("snapshot", "start", "end", "quote")
_SPAN_SET = frozenset(_SPAN)
_DIMENSION = ("value", "weight")
_DIMENSION_SET = frozenset(_DIMENSION)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What the checker says about one record.

    On success ``stage`` is ``"structural"``; ``endpoint``/``short_circuit`` are ``0``, ``1``
    or ``None`` (U) and ``action`` is the proposed policy action. For a format-1 answer
    unit these four and ``priority`` are ``None`` (R_O is defined on tuples) and
    ``supported`` holds the claims' summary. On failure ``reason``/``message`` say why;
    ``record_digest`` (and the tuple or unit digest) are set whenever stage 1 passed, so a
    refused record can still be named.
    """

    ok: bool
    reason: str | None = None
    message: str | None = None
    endpoint: int | None = None
    short_circuit: int | None = None
    priority: float | None = None
    action: str | None = None
    record_digest: str | None = None
    stage: str | None = None
    unit: str | None = None
    tuple_digest: str | None = None
    unit_digest: str | None = None
    supported: bool | None = None
    codebook: tuple[str, str] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# The fast path's result, built as the dataclass's own __init__ does (each slot set past the
# frozen __setattr__) but with the slots' setters bound once: the generated __init__ takes
# about a tenth of a whole check.
_SET_RESULT = {
    field.name: CheckResult.__dict__[field.name].__set__ for field in dc_fields(CheckResult)
}
_set_ok = _SET_RESULT.pop("ok")
_set_reason = _SET_RESULT.pop("reason")
_set_message = _SET_RESULT.pop("message")
_set_endpoint = _SET_RESULT.pop("endpoint")
_set_short_circuit = _SET_RESULT.pop("short_circuit")
_set_priority = _SET_RESULT.pop("priority")
_set_action = _SET_RESULT.pop("action")
_set_record_digest = _SET_RESULT.pop("record_digest")
_set_stage = _SET_RESULT.pop("stage")
_set_unit = _SET_RESULT.pop("unit")
_set_tuple_digest = _SET_RESULT.pop("tuple_digest")
_set_unit_digest = _SET_RESULT.pop("unit_digest")
_set_supported = _SET_RESULT.pop("supported")
_set_codebook = _SET_RESULT.pop("codebook")
assert not _SET_RESULT, f"CheckResult fields the fast path does not set: {_SET_RESULT}"


def _accepted_tuple_result(
    endpoint: int | None,
    short_circuit: int | None,
    priority: float,
    action: str,
    record_digest: str,
    tuple_digest: str,
    codebook: tuple[str, str],
) -> CheckResult:
    """``CheckResult(ok=True, endpoint=..., ..., unit="tuple", codebook=...)``, faster."""
    result = object.__new__(CheckResult)
    _set_ok(result, True)
    _set_reason(result, None)
    _set_message(result, None)
    _set_endpoint(result, endpoint)
    _set_short_circuit(result, short_circuit)
    _set_priority(result, priority)
    _set_action(result, action)
    _set_record_digest(result, record_digest)
    _set_stage(result, STAGE_STRUCTURAL)
    _set_unit(result, "tuple")
    _set_tuple_digest(result, tuple_digest)
    _set_unit_digest(result, None)
    _set_supported(result, None)
    _set_codebook(result, codebook)
    return result


@dataclass(slots=True)
class _Identity:
    """What stage 1 established, kept for a result even when a later stage fails."""

    codebook: Codebook
    record_digest: str
    tuple_digest: str | None = None
    unit_digest: str | None = None


def check_record(obj: Any, codebooks: Mapping[tuple[str, str], Codebook]) -> CheckResult:
    """Validate and audit one record (a parsed JSON value) against known codebooks."""
    if type(obj) is dict:
        try:
            accepted = _accepted_tuple(obj, codebooks)
        except (KeyError, ValueError, TypeError, ContractError):
            accepted = None  # a rule the fast path reads is missed: the stages say which
        if accepted is not None:
            return accepted
    return _check_in_order(obj, codebooks)


def _check_in_order(obj: Any, codebooks: Mapping[tuple[str, str], Codebook]) -> CheckResult:
    """:func:`check_record` by the stages in their fixed order (no fast path)."""
    try:
        identity = _stage_identity(obj, codebooks)
    except ContractError as exc:
        return CheckResult(ok=False, reason=exc.code, message=exc.message)
    codebook = identity.codebook
    try:
        if codebook.format_version == 2:
            return _audit_engine(obj, codebook, identity)
        if codebook.unit == "tuple":
            return _audit_tuple(obj, codebook, identity)
        return _audit_answer(obj, codebook, identity)
    except ContractError as exc:
        return CheckResult(
            ok=False,
            reason=exc.code,
            message=exc.message,
            record_digest=identity.record_digest,
            unit=codebook.unit,
            tuple_digest=identity.tuple_digest,
            unit_digest=identity.unit_digest,
            codebook=codebook.key,
        )


# --- the fast path: a well-formed format-1 tuple record, accepted ---------------------
#
# Most records the checker sees are well formed. For a tuple record of a format-1
# codebook, _accepted_tuple tests every rule of stages 1 to 3 in one pass, in whatever
# order is cheapest, and returns the result only when all of them hold; on the first rule
# that does not, it returns None and check_record runs the stages in their fixed order,
# which find the first failure and say it exactly as they always did. So it changes what
# is accepted or refused in nothing, and the result of an accepted record is the one the
# stages give (tests/contract/test_fast_paths.py compares the two on mutated records).
#
# Since every number in the record has been checked here before it is digested, the
# record digest is orjson's serialization and one SHA-256: the annotation holds only
# strings, 0/1/null judgments, span offsets inside their text and evidence numbers in
# range (no NaN or infinity; a float below 1e-4, which orjson writes otherwise than
# ``repr``, sends the record to the stages); the query, answer and source hold strings,
# booleans, null and the rank; the sampling's probability is in (0, 1] (below 1e-4: the
# stages); the pipeline's configuration, scalars only here, was serialized by the
# canonical encoder for the tuple digest, which refuses NaN and infinity, and a float in
# it costs the small-float scan. orjson raises on what else it would write otherwise
# (integers outside 64 bits, unpaired surrogates, str or int subclasses).

_CONFIG_SCALARS = frozenset({str, int, bool, type(None)})
#: orjson writes a finite float below this in magnitude otherwise than ``repr``.
_SMALL_FLOAT = 1e-4
_EMPTY_SHA256 = sha256()


@dataclass(frozen=True, slots=True)
class _TuplePlan:
    """What the fast path needs of one tuple codebook, worked out once."""

    codebook: Codebook
    key: tuple[str, str]
    weights: tuple[tuple[str, float], ...]
    size: int
    roles: frozenset[str] | None
    #: (I, A, M, D) -> (endpoint, short-circuit, action), for all 81 states.
    outcomes: dict[tuple[int | None, int | None, int | None, int | None], tuple[Any, ...]]


#: id(codebook) -> (codebook, its plan or None when the fast path does not apply).
_PLANS: dict[int, tuple[Codebook, _TuplePlan | None]] = {}


#: answerability policy -> (I, A, M, D) -> (endpoint, short-circuit, action): the same for
#: every codebook with that policy, so a registry parsed per request costs no new table.
_OUTCOMES: dict[str | None, dict[tuple[Any, ...], tuple[Any, ...]]] = {}


def _outcomes(policy: str | None) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    table = _OUTCOMES.get(policy)
    if table is None:
        states = (0, 1, None)
        table = {}
        for i in states:
            for a in states:
                for m in states:
                    for d in states:
                        endpoint = resolve_complete_case(i, a, m, d)
                        table[(i, a, m, d)] = (
                            endpoint,
                            resolve_short_circuit(i, a, m, d),
                            policy_action(endpoint, policy),
                        )
        _OUTCOMES[policy] = table
    return table


def _plan(codebook: Codebook) -> _TuplePlan | None:
    entry = _PLANS.get(id(codebook))
    if entry is not None and entry[0] is codebook:
        return entry[1]
    plan = None
    if codebook.unit == "tuple" and codebook.format_version == 1 and orjson is not None:
        plan = _TuplePlan(
            codebook=codebook,
            key=codebook.key,
            weights=tuple(codebook.weights.items()),
            size=len(codebook.weights),
            roles=frozenset(codebook.source_roles) if codebook.source_roles else None,
            outcomes=_outcomes(codebook.answerability_policy),
        )
    if len(_PLANS) > 1024:  # registries parsed per request: do not keep every codebook
        _PLANS.clear()
    _PLANS[id(codebook)] = (codebook, plan)
    return plan


def _accepted_tuple(
    obj: dict[str, Any], codebooks: Mapping[tuple[str, str], Codebook]
) -> CheckResult | None:
    """The result of a tuple record that passes every check, or ``None`` (see above).

    An object's fields are checked by its size and by reading each of them: a missing one
    raises KeyError, and so do other rules missed on the way (ValueError from a date or a
    text, TypeError from orjson, ContractError from the lineage check); the caller takes
    any of them as ``None``. Every field of every object is read before a record is
    accepted, so the sizes make the field sets exact.
    """
    size = len(obj)
    if size == 12:
        sampling = obj["sampling"]
    elif size == 11:
        sampling = None  # the eleven required fields are read below: no sampling field
    else:
        return None
    reference = obj["codebook"]
    version = obj["format_version"]
    if (
        obj["claimgate"] != "record"
        or type(version) is not int
        or version != 1
        or type(reference) is not dict
        or len(reference) != 2
    ):
        return None
    name = reference["name"]
    codebook_version = reference["version"]
    if type(name) is not str or not name or type(codebook_version) is not str:
        return None
    codebook = codebooks.get((name, codebook_version))
    if codebook is None or not codebook_version:
        return None
    entry = _PLANS.get(id(codebook))
    plan = entry[1] if entry is not None and entry[0] is codebook else _plan(codebook)
    if plan is None:
        return None

    # Stage 1: fields (check_query, check_pipeline, check_answer, check_source,
    # check_sampling, _tuple_annotation_fields and _parents, written out).
    query = obj["query"]
    if type(query) is not dict or len(query) != 9:
        return None
    target = query["target"]
    query_id = query["id"]
    query_text = query["text"]
    question_type = query["question_type"]
    question_version = query["question_version"]
    template_id = query["template_id"]
    domain = query["domain"]
    locale = query["locale"]
    reference_time = query["reference_time"]
    if not (
        type(query_id) is str
        and query_id
        and type(query_text) is str
        and query_text
        and type(question_type) is str
        and question_type in QUESTION_TYPES
        and type(question_version) is str
        and question_version
        and type(target) is dict
        and len(target) == 2
        and type(target["name"]) is str
        and target["name"]
        and type(target["family"]) is str
        and target["family"]
        and type(template_id) is str
        and template_id
        and type(domain) is str
        and domain
        and type(locale) is str
        and locale
        and type(reference_time) is str
    ):
        return None
    try:
        date.fromisoformat(reference_time)
    except ValueError:
        datetime.fromisoformat(reference_time)  # a ValueError here: the stages say it

    pipeline = obj["pipeline"]
    if type(pipeline) is not dict or len(pipeline) != 3:
        return None
    config = pipeline["config"]
    pipeline_name = pipeline["name"]
    pipeline_version = pipeline["version"]
    if (
        type(pipeline_name) is not str
        or not pipeline_name
        or type(pipeline_version) is not str
        or not pipeline_version
        or type(config) is not dict
    ):
        return None
    config_floats = False
    for key, item in config.items():
        if type(key) is not str:
            return None
        if type(item) not in _CONFIG_SCALARS:
            if type(item) is not float:
                return None  # a nested configuration: the stages walk it
            config_floats = True

    answer = obj["answer"]
    if type(answer) is not dict or len(answer) != 12:
        return None
    conditions = answer["conditions"]
    if type(conditions) is not dict or len(conditions) != 4:
        return None
    service = answer["service"]
    mode = answer["mode"]
    model = answer["model"]
    region = conditions["region"]
    language = conditions["language"]
    login = conditions["login"]
    personalization = conditions["personalization"]
    answer_collected = answer["collected_at"]
    answer_text = answer["text"]
    citations = answer["citations"]
    raw_path = answer["raw_path"]
    answer_digest = answer["digest"]
    if not (
        type(service) is str
        and service
        and type(mode) is str
        and mode
        and (model is None or (type(model) is str and model))
        and type(answer["web_search"]) is bool
        and (region is None or (type(region) is str and region))
        and (language is None or (type(language) is str and language))
        and (login is None or type(login) is bool)
        and (personalization is None or type(personalization) is bool)
        and answer["status"] == "complete"  # a failed answer forms no tuple
        and answer["failure"] is None
        and type(answer_text) is str
        and answer_text
        and type(citations) is list
        and (raw_path is None or (type(raw_path) is str and raw_path))
        and type(answer_digest) is str
        and type(answer_collected) is str
    ):
        return None
    for citation in citations:
        if type(citation) is not dict or len(citation) != 2:
            return None
        url = citation["url"]
        kind = citation["kind"]
        if not (type(url) is str and url and type(kind) is str and kind in CITATION_KINDS):
            return None
    if datetime.fromisoformat(answer_collected).tzinfo is None:
        return None

    source = obj["source"]
    if type(source) is not dict or len(source) != 6:
        return None
    original_url = source["original_url"]
    canonical_url = source["canonical_url"]
    rank = source["rank"]
    source_collected = source["collected_at"]
    source_text = source["text"]
    source_digest = source["digest"]
    if not (
        type(original_url) is str
        and original_url
        and type(canonical_url) is str
        and canonical_url
        and (rank is None or (type(rank) is int and rank >= 1))
        and type(source_text) is str
        and type(source_digest) is str
        and type(source_collected) is str
    ):
        return None
    if datetime.fromisoformat(source_collected).tzinfo is None:
        return None

    tuple_digest = obj["tuple_digest"]
    record_digest = obj["record_digest"]
    if type(tuple_digest) is not str or type(record_digest) is not str:
        return None
    if sampling is not None:
        if type(sampling) is not dict or len(sampling) != 2:
            return None
        stratum = sampling["stratum"]
        probability = sampling["inclusion_probability"]
        kind = type(probability)
        if (
            type(stratum) is not str
            or not stratum
            or (kind is not float and kind is not int)
            or not _SMALL_FLOAT <= probability <= 1
        ):
            return None

    annotation = obj["annotation"]
    if type(annotation) is not dict or len(annotation) != 9:
        return None
    kind = annotation["kind"]
    annotator = annotation["annotator"]
    rationale = annotation["rationale"]
    role = annotation["source_role"]
    predicates = annotation["predicates"]
    spans = annotation["spans"]
    evidence = annotation["evidence"]
    support = annotation[PASSAGE_SUPPORT]
    if not (
        type(kind) is str
        and kind in ANNOTATION_KINDS
        and type(annotator) is str
        and annotator
        and (rationale is None or type(rationale) is str)
        and annotation["assisted"] is None
        and type(role) is str
        and role
        and (plan.roles is None or role in plan.roles)
        and type(predicates) is dict
        and type(spans) is dict
        and type(evidence) is dict
    ):
        return None
    parents = obj["parents"]
    if type(parents) is not list:
        return None
    if parents or kind != "independent":
        _parents(parents, kind)

    # Stage 2: judgments and spans.
    if len(predicates) != 4:
        return None
    i = predicates["I"]
    a = predicates["A"]
    m = predicates["M"]
    d = predicates["D"]
    if not (
        (i is None or (type(i) is int and 0 <= i <= 1))
        and (a is None or (type(a) is int and 0 <= a <= 1))
        and (m is None or (type(m) is int and 0 <= m <= 1))
        and (d is None or (type(d) is int and 0 <= d <= 1))
        and (support is None or (type(support) is int and 0 <= support <= 1))
    ):
        return None
    if not spans.keys() <= _JUDGMENT_SET:
        return None
    texts = {"query": query_text, "answer": answer_text, "source": source_text}
    for listed in spans.values():
        if listed is None:
            continue
        if type(listed) is not list:
            return None
        for span in listed:
            if type(span) is not dict or len(span) != 4:
                return None
            snapshot = span["snapshot"]
            start = span["start"]
            end = span["end"]
            quote = span["quote"]
            if (
                type(snapshot) is not str
                or type(start) is not int
                or type(end) is not int
                or type(quote) is not str
            ):
                return None
            text = texts.get(snapshot)
            if text is None or not 0 <= start < end <= len(text) or text[start:end] != quote:
                return None
    # Every resolved judgment cites its evidence.
    if (
        (i is not None and not spans.get("I"))
        or (a is not None and not spans.get("A"))
        or (m is not None and not spans.get("M"))
        or (d is not None and not spans.get("D"))
        or (support is not None and not spans.get(PASSAGE_SUPPORT))
    ):
        return None

    # Stage 3: the evidence vector.
    if len(evidence) != plan.size:
        return None
    total_weight = 0.0
    score = 0.0
    for key, expected in plan.weights:
        entry = evidence[key]
        if type(entry) is not dict or len(entry) != 2:
            return None
        value = entry["value"]
        weight = entry["weight"]
        value_type = type(value)
        weight_type = type(weight)
        if value_type is float:
            if not (value == 0.0 or _SMALL_FLOAT <= value <= 1.0):
                return None
        elif value_type is not int or not 0 <= value <= 1:
            return None
        if weight_type is float:
            if not (weight == 0.0 or _SMALL_FLOAT <= weight < math.inf):
                return None
        elif weight_type is not int or not 0 <= weight <= 1:
            return None
        if abs(weight - expected) > WEIGHT_TOLERANCE:
            return None
        total_weight += weight
        score += value * weight
    if abs(total_weight - 1.0) > WEIGHT_TOLERANCE:
        return None

    # Stage 1: digests (all of them must match: which one fails first is the stages' to say).
    # Each hash is a copy of an empty one: cheaper than a new one (OpenSSL's set-up).
    new_hash = _EMPTY_SHA256.copy
    answer_hash = new_hash()
    answer_hash.update(answer_text.encode("utf-8"))
    if answer_hash.hexdigest() != answer_digest:
        return None
    source_hash = new_hash()
    source_hash.update(source_text.encode("utf-8"))
    if source_hash.hexdigest() != source_digest:
        return None
    if config_floats:
        expected_tuple = tuple_digest_unchecked(
            query=query,
            source_digest=source_digest,
            answer_digest=answer_digest,
            pipeline=pipeline,
        )
    else:  # strings, integers, booleans and null: orjson writes the canonical bytes
        identity = {
            "answer_digest": answer_digest,
            "pipeline": {"config": config, "name": pipeline_name, "version": pipeline_version},
            "query": {"id": query_id, "question_version": question_version, "text": query_text},
            "source_digest": source_digest,
        }
        tuple_hash = new_hash()
        tuple_hash.update(orjson.dumps(identity, default=_refuse, option=_ORJSON_OPTIONS))
        expected_tuple = tuple_hash.hexdigest()
    if expected_tuple != tuple_digest:
        return None
    body = dict(obj)
    del body["record_digest"]
    data = orjson.dumps(body, default=_refuse, option=_ORJSON_OPTIONS)
    if config_floats and may_hold_small_float(data):
        return None
    record_hash = new_hash()
    record_hash.update(data)
    if record_hash.hexdigest() != record_digest:
        return None

    # Stages 4 to 6.
    endpoint, short_circuit, action = plan.outcomes[(i, a, m, d)]
    # Weights sum to 1 only within 1e-9: keep the priority inside [0, 1] (as the stages do,
    # min(max(score, 0.0), 1.0), which is score itself inside).
    priority = score if 0.0 <= score <= 1.0 else min(max(score, 0.0), 1.0)
    return _accepted_tuple_result(
        endpoint, short_circuit, priority, action, record_digest, tuple_digest, plan.key
    )


# --- stage 1 ---------------------------------------------------------------------------


def _stage_identity(obj: Any, codebooks: Mapping[tuple[str, str], Codebook]) -> _Identity:
    if type(obj) is not dict:
        raise ContractError(
            codes.NOT_AN_OBJECT, f"a record must be a JSON object, not {type_name(obj)}"
        )
    for key in _ENVELOPE:
        if key not in obj:
            raise ContractError(codes.MISSING_FIELD, f"{key} is missing")
    version = obj["format_version"]
    if obj["claimgate"] != "record" or type(version) is not int or version != 1:
        raise ContractError(
            codes.UNKNOWN_FORMAT,
            f"not a record of format version 1 (claimgate={show(obj['claimgate'])}, "
            f"format_version={show(version)})",
        )
    reference = obj["codebook"]
    fields(reference, "codebook", _CODEBOOK_REF, exact=_CODEBOOK_REF_SET)
    string(reference, "name", "codebook")
    string(reference, "version", "codebook")
    codebook = codebooks.get((reference["name"], reference["version"]))
    if codebook is None:
        raise ContractError(
            codes.UNKNOWN_CODEBOOK,
            f"codebook {reference['name']} {reference['version']} is not known to the checker",
        )

    if codebook.unit in UNIT_KINDS_OF_FORMS:
        return _form_unit_identity(obj, codebook)
    is_tuple = codebook.unit == "tuple"
    if is_tuple:
        fields(obj, "", _TUPLE_TOP, _TOP_OPTIONAL, exact=_TUPLE_TOP_SET)
    else:
        fields(obj, "", _ANSWER_TOP, _TOP_OPTIONAL, exact=_ANSWER_TOP_SET)
    query = obj["query"]
    pipeline = obj["pipeline"]
    answer = obj["answer"]
    check_query(query)
    check_pipeline(pipeline)
    check_answer(answer)
    failed = answer["status"] == "failed"
    if is_tuple:
        if failed:
            raise ContractError(
                codes.INVALID_FIELD,
                "answer.status is 'failed': a failed answer has no sources, so it forms no tuple",
            )
        check_source(obj["source"], "source")
        if type(obj["tuple_digest"]) is not str:
            raise invalid("tuple_digest", "a SHA-256 hex string", obj["tuple_digest"])
    else:
        sources = obj["sources"]
        if type(sources) is not list:
            raise invalid("sources", "a list", sources)
        if failed and sources:
            raise ContractError(
                codes.INVALID_FIELD, "sources must be empty: the answer failed and has none"
            )
        for index, source in enumerate(sources):
            check_source(source, f"sources[{index}]")
        if type(obj["unit_digest"]) is not str:
            raise invalid("unit_digest", "a SHA-256 hex string", obj["unit_digest"])
    check_sampling(obj.get("sampling"), "sampling")
    annotation = obj["annotation"]
    if codebook.format_version == 2:
        _engine_annotation_fields(annotation, codebook, failed)
    elif is_tuple:
        _tuple_annotation_fields(annotation, codebook)
    else:
        _answer_annotation_fields(annotation, codebook, failed)
    _parents(obj["parents"], annotation["kind"])
    if type(obj["record_digest"]) is not str:
        raise invalid("record_digest", "a SHA-256 hex string", obj["record_digest"])

    # Digests, in the fixed order: snapshots, identity, record.
    snapshot_matches(answer, "answer", codes.ANSWER_DIGEST_MISMATCH)
    identity = _Identity(codebook=codebook, record_digest="")
    if is_tuple:
        source = obj["source"]
        snapshot_matches(source, "source", codes.SOURCE_DIGEST_MISMATCH)
        # The pipeline's canonical text is its identity text (its fields are exactly name,
        # version and config), so the record digest below reuses it.
        pipeline_text = _digest_or_invalid(lambda: pipeline_identity_text(pipeline))
        expected = _digest_or_invalid(
            lambda: tuple_digest_unchecked(
                query=query,
                source_digest=source["digest"],
                answer_digest=answer["digest"],
                pipeline=pipeline,
                pipeline_text=pipeline_text,
            )
        )
        if obj["tuple_digest"] != expected:
            raise ContractError(
                codes.TUPLE_DIGEST_MISMATCH,
                f"tuple_digest {show(obj['tuple_digest'], 20)} is not the digest of this "
                f"query, source, answer and pipeline ({expected[:12]}...)",
            )
        identity.tuple_digest = expected
    else:
        for index, source in enumerate(obj["sources"]):
            snapshot_matches(source, f"sources[{index}]", codes.SOURCE_DIGEST_MISMATCH)
        expected = _digest_or_invalid(
            lambda: unit_digest(
                query=query,
                answer=answer,
                source_digests=[source["digest"] for source in obj["sources"]],
                pipeline=pipeline,
            )
        )
        if obj["unit_digest"] != expected:
            raise ContractError(
                codes.UNIT_DIGEST_MISMATCH,
                f"unit_digest {show(obj['unit_digest'], 20)} is not the digest of this "
                f"query, answer snapshot, its sources in order and pipeline ({expected[:12]}...)",
            )
        identity.unit_digest = expected
    # Every object key was checked above or is checked against a fixed set later (a
    # non-string key can only fail those checks), so the key walk can be skipped here.
    if is_tuple:
        expected = _tuple_record_digest_fast(obj)
        if expected != obj["record_digest"]:  # not for the compiled encoder, or a mismatch:
            # the assembled text decides (same bytes; its errors and messages).
            expected = _digest_or_invalid(
                lambda: text_digest(_tuple_record_text(obj, pipeline_text))
            )
    else:
        body = dict(obj)
        del body["record_digest"]
        expected = _digest_or_invalid(lambda: sha256(canonical_json_unchecked(body)).hexdigest())
    if obj["record_digest"] != expected:
        raise ContractError(
            codes.RECORD_DIGEST_MISMATCH,
            f"record_digest {show(obj['record_digest'], 20)} is not the digest of this record "
            f"({expected[:12]}...): a field was changed after the record was sealed",
        )
    identity.record_digest = expected
    return identity


def _tuple_record_digest_fast(obj: dict[str, Any]) -> str | None:
    """The record digest of a tuple record whose stage-1 fields passed, by the compiled
    encoder (orjson), or ``None`` where its bytes might not be the canonical ones.

    Stage 1 leaves only the annotation free to hold a value the canonical encoder refuses:
    the query, answer, source, codebook reference and parents are typed, the sampling's
    probability is in (0, 1], and the pipeline's text was written by the canonical encoder
    (which raised on NaN or infinity) for the tuple digest. orjson writes NaN and infinity
    as ``null``; an annotation that reads back equal to itself holds neither (``null`` is
    not a float). orjson raises on what else the canonical encoder refuses (non-string
    keys, unpaired surrogates) or writes otherwise (integers outside 64 bits), and
    :func:`may_hold_small_float` finds the floats it writes otherwise. A caller compares
    the result with the claimed digest and falls back to :func:`_tuple_record_text` when
    they differ, so a ``None`` or a wrong guess changes nothing but the time taken."""
    if orjson is None:
        return None
    annotation = obj["annotation"]
    body = dict(obj)
    del body["record_digest"]
    try:
        if orjson.loads(orjson.dumps(annotation)) != annotation:
            return None
        data = orjson.dumps(body, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:
        return None
    if may_hold_small_float(data):
        return None
    return sha256(data).hexdigest()


def _tuple_record_text(obj: dict[str, Any], pipeline_text: str) -> str:
    """The canonical text of a tuple record minus ``record_digest``, for a record whose
    stage-1 fields passed: the same text as ``canonical_json_unchecked`` of that copy.

    The top-level keys are written out in sorted order; the fields stage 1 fixed (the
    envelope, ``codebook``, ``parents``, ``tuple_digest``, the query, answer and source)
    are written by hand, the pipeline reuses its identity text, and the annotation and
    sampling go through the canonical encoder, in key order, so the first value that
    cannot be serialized raises the same error as the whole-record serialization would.
    """
    reference = obj["codebook"]
    # encode_basestring is what canonical.encode_string and the canonical encoder use.
    parts = ['{"annotation":']
    parts += canonical_chunks_unchecked(obj["annotation"])
    parts.append(',"answer":')
    answer = obj["answer"]
    if type(answer["status"]) is str:
        parts.append(_answer_text(answer))
    else:  # equal to "complete" or "failed" but not a str: the encoder refuses it
        parts += canonical_chunks_unchecked(answer)
    # claimgate is "record" and format_version the integer 1 (checked first); the codebook
    # reference is exactly {name, version}, two strings; parents are 64 lowercase hex
    # digits each, which need no escaping.
    parts.append(',"claimgate":"record","codebook":{"name":')
    parts.append(encode_basestring(reference["name"]))
    parts.append(',"version":')
    parts.append(encode_basestring(reference["version"]))
    parts.append('},"format_version":1,"parents":[')
    parents = obj["parents"]
    if parents:
        parts.append('"' + '","'.join(parents) + '"')
    parts.append('],"pipeline":')
    parts.append(pipeline_text)
    parts.append(',"query":')
    parts.append(_query_text(obj["query"]))
    if "sampling" in obj:
        parts.append(',"sampling":')
        parts += canonical_chunks_unchecked(obj["sampling"])
    parts.append(',"source":')
    parts.append(_source_text(obj["source"]))
    parts.append(',"tuple_digest":')
    parts.append(encode_basestring(obj["tuple_digest"]))
    parts.append("}")
    return "".join(parts)


# The canonical texts of a query, an answer and a source that passed check_query,
# check_answer and check_source: every field has a known type (strings, null, booleans,
# an integer rank), so each is written out with its keys in sorted order, in the forms
# the canonical encoder gives them (encode_basestring is its string encoder).


def _optional(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)


def _flag(value: bool | None) -> str:
    return "null" if value is None else "true" if value else "false"


def _query_text(query: dict[str, Any]) -> str:
    target = query["target"]
    return (
        f'{{"domain":{encode_basestring(query["domain"])},'
        f'"id":{encode_basestring(query["id"])},'
        f'"locale":{encode_basestring(query["locale"])},'
        f'"question_type":{encode_basestring(query["question_type"])},'
        f'"question_version":{encode_basestring(query["question_version"])},'
        f'"reference_time":{encode_basestring(query["reference_time"])},'
        f'"target":{{"family":{encode_basestring(target["family"])},'
        f'"name":{encode_basestring(target["name"])}}},'
        f'"template_id":{encode_basestring(query["template_id"])},'
        f'"text":{encode_basestring(query["text"])}}}'
    )


def _answer_text(answer: dict[str, Any]) -> str:
    conditions = answer["conditions"]
    citations = ",".join(
        [
            f'{{"kind":{encode_basestring(citation["kind"])},'
            f'"url":{encode_basestring(citation["url"])}}}'
            for citation in answer["citations"]
        ]
    )
    return (
        f'{{"citations":[{citations}],'
        f'"collected_at":{encode_basestring(answer["collected_at"])},'
        f'"conditions":{{"language":{_optional(conditions["language"])},'
        f'"login":{_flag(conditions["login"])},'
        f'"personalization":{_flag(conditions["personalization"])},'
        f'"region":{_optional(conditions["region"])}}},'
        f'"digest":{encode_basestring(answer["digest"])},'
        f'"failure":{_optional(answer["failure"])},'
        f'"mode":{encode_basestring(answer["mode"])},'
        f'"model":{_optional(answer["model"])},'
        f'"raw_path":{_optional(answer["raw_path"])},'
        f'"service":{encode_basestring(answer["service"])},'
        f'"status":{encode_basestring(answer["status"])},'
        f'"text":{encode_basestring(answer["text"])},'
        f'"web_search":{"true" if answer["web_search"] else "false"}}}'
    )


def _source_text(source: dict[str, Any]) -> str:
    rank = source["rank"]
    try:
        rank_text = "null" if rank is None else repr(rank)
    except ValueError as exc:  # too many digits to convert, as the encoder would say
        raise CanonicalError(str(exc)) from exc
    return (
        f'{{"canonical_url":{encode_basestring(source["canonical_url"])},'
        f'"collected_at":{encode_basestring(source["collected_at"])},'
        f'"digest":{encode_basestring(source["digest"])},'
        f'"original_url":{encode_basestring(source["original_url"])},'
        f'"rank":{rank_text},'
        f'"text":{encode_basestring(source["text"])}}}'
    )


def _digest_or_invalid(compute: Any) -> str:
    try:
        return compute()
    except CanonicalError as exc:
        raise ContractError(
            codes.INVALID_FIELD, f"the record cannot be serialized canonically: {exc}"
        ) from None
    except TypeError as exc:  # mixed key types cannot be sorted
        raise ContractError(
            codes.INVALID_FIELD, f"the record cannot be serialized canonically: {exc}"
        ) from None
    except UnicodeEncodeError as exc:  # an unpaired surrogate, e.g. from "\ud800" in JSON
        raise ContractError(
            codes.INVALID_FIELD,
            f"the record cannot be serialized canonically: text is not valid Unicode: {exc.reason}",
        ) from None


def _annotation_common(annotation: dict[str, Any], codebook: Codebook) -> None:
    kind = annotation["kind"]
    if type(kind) is not str or kind not in ANNOTATION_KINDS:
        raise invalid("annotation.kind", "one of independent, consensus, adjudicated", kind)
    string(annotation, "annotator", "annotation")
    rationale = annotation.get("rationale")
    if rationale is not None and type(rationale) is not str:
        raise invalid("annotation.rationale", "a string or null", rationale)
    assisted = annotation.get("assisted")
    if assisted is not None:
        fields(assisted, "annotation.assisted", _ASSISTED, exact=_ASSISTED_SET)
        string(assisted, "model", "annotation.assisted")
        if not codebook.allow_assisted:
            raise ContractError(
                codes.INVALID_FIELD,
                f"annotation.assisted is set, but codebook {codebook.name} {codebook.version} "
                f"forbids assisted labels",
            )


def _tuple_annotation_fields(annotation: Any, codebook: Codebook) -> None:
    # Fast path for an annotation with every field, all of them well-typed and no assisted
    # model: the checks below in one expression; otherwise they run in order.
    if type(annotation) is dict and annotation.keys() == _TUPLE_ANNOTATION_SET:
        kind = annotation["kind"]
        annotator = annotation["annotator"]
        rationale = annotation["rationale"]
        role = annotation["source_role"]
        if (
            type(kind) is str
            and kind in ANNOTATION_KINDS
            and type(annotator) is str
            and annotator
            and (rationale is None or type(rationale) is str)
            and annotation["assisted"] is None
            and type(role) is str
            and role
            and (not codebook.source_roles or role in codebook.source_roles)
            and type(annotation["predicates"]) is dict
            and type(annotation["spans"]) is dict
            and type(annotation["evidence"]) is dict
        ):
            return
    fields(
        annotation,
        "annotation",
        _TUPLE_ANNOTATION,
        _TUPLE_ANNOTATION_OPTIONAL,
        exact=_TUPLE_ANNOTATION_SET,
    )
    _annotation_common(annotation, codebook)
    role = annotation["source_role"]
    if type(role) is not str or not role:
        raise invalid("annotation.source_role", "a non-empty string", role)
    if codebook.source_roles and role not in codebook.source_roles:
        raise invalid(
            "annotation.source_role",
            f"one of the codebook's source roles ({', '.join(codebook.source_roles)})",
            role,
        )
    for key in ("predicates", "spans", "evidence"):
        if type(annotation[key]) is not dict:
            raise invalid(f"annotation.{key}", "an object", annotation[key])


def _answer_annotation_fields(annotation: Any, codebook: Codebook, failed: bool) -> None:
    fields(
        annotation,
        "annotation",
        _ANSWER_ANNOTATION,
        _ANSWER_ANNOTATION_OPTIONAL,
        exact=_ANSWER_ANNOTATION_SET,
    )
    _annotation_common(annotation, codebook)
    claims = annotation["claims"]
    verdicts = annotation["verdicts"]
    if type(claims) is not list:
        raise invalid("annotation.claims", "a list", claims)
    if failed:
        if claims:
            raise ContractError(
                codes.INVALID_FIELD, "annotation.claims must be empty: the answer failed"
            )
        if verdicts is not None:
            raise invalid("annotation.verdicts", "null for a failed answer", verdicts)
        return
    seen: set[str] = set()
    for index, claim in enumerate(claims):
        path = f"annotation.claims[{index}]"
        fields(claim, path, _CLAIM, exact=_CLAIM_SET)
        string(claim, "id", path)
        if claim["id"] in seen:
            raise ContractError(
                codes.INVALID_FIELD, f"{path}.id {claim['id']!r} is used by an earlier claim"
            )
        seen.add(claim["id"])
        kind = claim["kind"]
        if type(kind) is not str or kind not in codebook.claim_kinds:
            raise invalid(f"{path}.kind", f"one of {', '.join(codebook.claim_kinds)}", kind)
        if claim["reason"] is not None and type(claim["reason"]) is not str:
            raise invalid(f"{path}.reason", "a string or null", claim["reason"])
        digest = claim["source_digest"]
        if digest is not None and type(digest) is not str:
            raise invalid(f"{path}.source_digest", "a source digest or null", digest)
    if type(verdicts) is not dict:
        raise invalid("annotation.verdicts", "an object (the answer is complete)", verdicts)
    for key in codebook.verdicts:
        if key not in verdicts:
            raise ContractError(codes.MISSING_FIELD, f"annotation.verdicts.{key} is missing")
    for key in verdicts:
        if key not in codebook.verdicts:
            raise ContractError(
                codes.UNKNOWN_FIELD,
                f"annotation.verdicts.{key} is not a verdict of codebook {codebook.name} "
                f"{codebook.version}",
            )
        path = f"annotation.verdicts.{key}"
        fields(verdicts[key], path, _VERDICT, exact=_VERDICT_SET)
        reason = verdicts[key]["reason"]
        if reason is not None and type(reason) is not str:
            raise invalid(f"{path}.reason", "a string or null", reason)


def _engine_annotation_fields(annotation: Any, codebook: Codebook, failed: bool) -> None:
    """The envelope of a format-2 annotation (its values are stage 2): an object with
    ``kind``, ``annotator`` and ``values``; a failed answer carries no values."""
    if type(annotation) is not dict:
        raise invalid("annotation", "an object", annotation)
    for key in ("kind", "annotator", "values"):
        if key not in annotation:
            raise ContractError(codes.MISSING_FIELD, f"annotation.{key} is missing")
    _annotation_common(annotation, codebook)
    if failed and annotation["values"] is not None:
        raise invalid("annotation.values", "null for a failed answer", annotation["values"])


def _parents(parents: Any, kind: str) -> None:
    """Lineage: a revision names one parent; consensus and adjudicated records name the
    independent records they resolve, so they need at least one."""
    if type(parents) is not list:
        raise invalid("parents", "a list of record digests", parents)
    for index, parent in enumerate(parents):
        if type(parent) is not str or not _DIGEST.fullmatch(parent):
            raise invalid(f"parents[{index}]", "a record digest (64 lowercase hex)", parent)
    if len(set(parents)) != len(parents):
        raise ContractError(codes.INVALID_FIELD, "parents names the same record twice")
    if kind == "independent" and len(parents) > 1:
        raise ContractError(
            codes.INVALID_FIELD,
            f"parents has {len(parents)} entries; an independent label revises at most one",
        )
    if kind != "independent" and not parents:
        raise ContractError(
            codes.INVALID_FIELD,
            f"parents is empty; a {kind} record names the independent records it resolves",
        )


# --- stage 2: judgments and spans ------------------------------------------------------


def _judgment(value: Any, path: str) -> None:
    """0, 1 or null; each wrong type has its own code (``"U"``, booleans and ``1.0`` are not
    interchangeable with the values they resemble)."""
    if value is None:
        return
    kind = type(value)
    if kind is int:
        if value == 0 or value == 1:
            return
        raise ContractError(
            codes.PREDICATE_OUT_OF_RANGE, f"{path} is {value}; a judgment is 0, 1 or null"
        )
    if kind is bool:
        raise ContractError(
            codes.PREDICATE_BOOLEAN,
            f"{path} is {str(value).lower()}; a judgment is 0, 1 or null, not a boolean",
        )
    if kind is str:
        raise ContractError(
            codes.PREDICATE_STRING,
            f"{path} is the string {show(value)}; write an unresolved judgment (U) as null",
        )
    if kind is float:
        raise ContractError(
            codes.PREDICATE_FLOAT, f"{path} is the number {value!r}; a judgment is 0, 1 or null"
        )
    raise ContractError(
        codes.PREDICATE_TYPE, f"{path} is {type_name(value)}; a judgment is 0, 1 or null"
    )


def check_span(span: Any, path: str, texts: Mapping[str, str], index: int | None = None) -> None:
    """A span ``{snapshot, start, end, quote}``: ``snapshot`` one of ``texts``' keys,
    ``0 <= start < end <= len(text)`` in code points, ``quote == text[start:end]``.

    ``path`` (with ``[index]`` appended when given) names the span in error messages; it
    is only formatted when the span is refused.
    """
    if not _span_ok(span, texts):
        _refuse_span(span, path if index is None else f"{path}[{index}]", texts)


def _span_ok(span: Any, texts: Mapping[str, str]) -> bool:
    """The whole span test in one expression (the hot path); ``_refuse_span`` finds the
    first failing rule, in order, only for a span this refuses."""
    if type(span) is not dict or span.keys() != _SPAN_SET:
        return False
    snapshot = span["snapshot"]
    start = span["start"]
    end = span["end"]
    quote = span["quote"]
    if not (
        type(snapshot) is str
        and snapshot in texts
        and type(start) is int
        and type(end) is int
        and type(quote) is str
    ):
        return False
    text = texts[snapshot]
    return 0 <= start < end <= len(text) and text[start:end] == quote


def _refuse_span(span: Any, path: str, texts: Mapping[str, str]) -> None:
    if type(span) is not dict or span.keys() != _SPAN_SET:
        if type(span) is not dict:
            detail = f"is {type_name(span)}"
        else:
            missing = [key for key in _SPAN if key not in span]
            extra = sorted(str(key) for key in span if key not in _SPAN_SET)
            detail = f"lacks {', '.join(missing)}" if missing else f"has unknown field {extra[0]}"
        raise ContractError(
            codes.SPAN_MALFORMED,
            f"{path} {detail}; a span is {{snapshot, start, end, quote}}",
        )
    snapshot = span["snapshot"]
    start = span["start"]
    end = span["end"]
    quote = span["quote"]
    if type(snapshot) is not str or snapshot not in texts:
        raise ContractError(
            codes.SPAN_MALFORMED,
            f"{path}.snapshot is {show(snapshot)}; here it must be {' or '.join(texts)}",
        )
    if type(start) is not int or type(end) is not int:
        raise ContractError(
            codes.SPAN_MALFORMED,
            f"{path} start and end must be integers (code points), not "
            f"{show(start)} and {show(end)}",
        )
    if type(quote) is not str:
        raise ContractError(codes.SPAN_MALFORMED, f"{path}.quote must be a string")
    text = texts[snapshot]
    if not 0 <= start < end <= len(text):
        raise ContractError(
            codes.SPAN_OUT_OF_RANGE,
            f"{path} [{start}, {end}) is not a non-empty range inside the {snapshot} text "
            f"of {len(text)} code points",
        )
    raise ContractError(
        codes.SPAN_QUOTE_MISMATCH,
        f"{path}.quote {show(quote, 40)} is not the {snapshot} text at [{start}, {end}), "
        f"which reads {show(text[start:end], 40)}",
    )


_SPAN_PATHS = {key: f"annotation.spans.{key}" for key in JUDGMENTS}


def _spans(spans: dict[str, Any], values: Mapping[str, Any], texts: Mapping[str, str]) -> None:
    if not spans.keys() <= _JUDGMENT_SET:
        extra = sorted(str(key) for key in spans if key not in _JUDGMENT_SET)
        raise ContractError(
            codes.SPAN_MALFORMED,
            f"annotation.spans.{extra[0]} names no judgment; spans belong to "
            f"{', '.join(JUDGMENTS)}",
        )
    for key in JUDGMENTS:
        listed = spans.get(key)
        if listed is not None:
            if type(listed) is not list:
                raise ContractError(
                    codes.SPAN_MALFORMED,
                    f"annotation.spans.{key} must be a list of spans, not {type_name(listed)}",
                )
            for index, span in enumerate(listed):
                if not _span_ok(span, texts):
                    _refuse_span(span, f"{_SPAN_PATHS[key]}[{index}]", texts)
        if not listed and values[key] is not None:
            raise ContractError(
                codes.SPAN_MISSING,
                f"annotation.spans.{key} has no span, but {key} is resolved "
                f"({values[key]}); every resolved judgment cites its evidence",
            )


# --- format-1 tuples: stages 2 to 6 ----------------------------------------------------


def _audit_tuple(obj: dict[str, Any], codebook: Codebook, identity: _Identity) -> CheckResult:
    annotation = obj["annotation"]
    predicates = annotation["predicates"]
    if predicates.keys() == _PREDICATE_SET:
        i = predicates["I"]
        a = predicates["A"]
        m = predicates["M"]
        d = predicates["D"]
        # Each is 0, 1 or null (the checks below, which raise, run only when one is not).
        judged = (
            (i is None or (type(i) is int and 0 <= i <= 1))
            and (a is None or (type(a) is int and 0 <= a <= 1))
            and (m is None or (type(m) is int and 0 <= m <= 1))
            and (d is None or (type(d) is int and 0 <= d <= 1))
        )
    else:
        judged = False
    if not judged:
        for key in PREDICATE_KEYS:
            if key not in predicates:
                raise ContractError(
                    codes.PREDICATE_MISSING,
                    f"annotation.predicates.{key} is missing; write an unresolved judgment as null",
                )
            _judgment(predicates[key], f"annotation.predicates.{key}")
        if predicates.keys() != _PREDICATE_SET:
            extra = sorted(str(key) for key in predicates if key not in _PREDICATE_SET)
            raise ContractError(
                codes.UNKNOWN_FIELD,
                f"annotation.predicates.{extra[0]} is not a predicate; the predicates are "
                f"exactly I, A, M, D",
            )
    if PASSAGE_SUPPORT not in annotation:
        raise ContractError(
            codes.PREDICATE_MISSING,
            "annotation.passage_support is missing; write an unresolved judgment as null",
        )
    support = annotation[PASSAGE_SUPPORT]
    _judgment(support, "annotation.passage_support")
    values = {**predicates, PASSAGE_SUPPORT: support}
    texts = {
        "query": obj["query"]["text"],
        "answer": obj["answer"]["text"],
        "source": obj["source"]["text"],
    }
    _spans(annotation["spans"], values, texts)

    # Stage 3: the evidence vector.
    evidence = annotation["evidence"]
    weights = codebook.weights
    if evidence.keys() != weights.keys():
        missing = [key for key in weights if key not in evidence]
        extra = sorted(str(key) for key in evidence if key not in weights)
        detail = []
        if missing:
            detail.append(f"lacks {', '.join(missing)}")
        if extra:
            detail.append(f"has {', '.join(extra)}, which the codebook does not declare")
        raise ContractError(
            codes.DIMENSIONS_MISMATCH,
            f"annotation.evidence {' and '.join(detail)}; the dimensions must be exactly "
            f"{', '.join(weights)}",
        )
    total_weight = 0.0
    score = 0.0
    for key in weights:
        entry = evidence[key]
        if type(entry) is not dict or entry.keys() != _DIMENSION_SET:
            fields(entry, f"annotation.evidence.{key}", _DIMENSION, exact=_DIMENSION_SET)
        value = entry["value"]
        weight = entry["weight"]
        value_type = type(value)
        weight_type = type(weight)
        if (
            (value_type is not float and value_type is not int)
            or not 0.0 <= value <= 1.0
            or (weight_type is not float and weight_type is not int)
            or not 0.0 <= weight < math.inf
        ):
            _refuse_dimension(key, value, weight)
        total_weight += weight
        score += value * weight
    if abs(total_weight - 1.0) > WEIGHT_TOLERANCE:
        total = math.fsum(evidence[key]["weight"] for key in weights)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ContractError(
                codes.WEIGHTS_UNNORMALIZED,
                f"annotation.evidence weights sum to {total!r}, not 1 "
                f"(tolerance {WEIGHT_TOLERANCE})",
            )
    for key, expected in weights.items():
        weight = evidence[key]["weight"]
        if abs(weight - expected) > WEIGHT_TOLERANCE:
            raise ContractError(
                codes.WEIGHTS_MISMATCH,
                f"annotation.evidence.{key}.weight is {weight!r}, but codebook "
                f"{codebook.name} {codebook.version} gives {expected!r}",
            )

    # Stages 4 to 6.
    i = predicates["I"]
    a = predicates["A"]
    m = predicates["M"]
    d = predicates["D"]
    endpoint = resolve_complete_case(i, a, m, d)
    return CheckResult(
        ok=True,
        endpoint=endpoint,
        short_circuit=resolve_short_circuit(i, a, m, d),
        # Weights sum to 1 only within 1e-9: keep the priority inside [0, 1].
        priority=min(max(score, 0.0), 1.0),
        action=policy_action(endpoint, codebook.answerability_policy),
        record_digest=identity.record_digest,
        stage=STAGE_STRUCTURAL,
        unit="tuple",
        tuple_digest=identity.tuple_digest,
        codebook=codebook.key,
    )


def _refuse_dimension(key: str, value: Any, weight: Any) -> None:
    path = f"annotation.evidence.{key}"
    if type(value) is not float and type(value) is not int:
        raise invalid(f"{path}.value", "a number in [0, 1]", value)
    if type(weight) is not float and type(weight) is not int:
        raise invalid(f"{path}.weight", "a non-negative number", weight)
    if not 0.0 <= value <= 1.0:
        raise ContractError(
            codes.DIMENSION_VALUE_OUT_OF_RANGE,
            f"{path}.value is {value!r}; dimension values lie in [0, 1]",
        )
    raise ContractError(
        codes.WEIGHTS_UNNORMALIZED,
        f"{path}.weight is {weight!r}; weights are non-negative",
    )


# --- format-1 answers: stages 2 to 6 ---------------------------------------------------


def _verdict_value(value: Any, path: str) -> None:
    if value is not None and type(value) is not bool:
        raise ContractError(
            codes.INVALID_FIELD,
            f"{path} is {show(value)}; a verdict is true, false or null",
        )


def _audit_answer(obj: dict[str, Any], codebook: Codebook, identity: _Identity) -> CheckResult:
    annotation = obj["annotation"]
    claims = annotation["claims"]
    answer_texts = {"answer": obj["answer"]["text"]}
    sources = {}
    for source in obj["sources"]:
        sources.setdefault(source["digest"], source["text"])
    for index, claim in enumerate(claims):
        path = f"annotation.claims[{index}]"
        check_span(claim["span"], f"{path}.span", answer_texts)
        _verdict_value(claim["supported"], f"{path}.supported")
        _verdict_value(claim["accurate"], f"{path}.accurate")
        digest = claim["source_digest"]
        quote_span = claim["quote_span"]
        if digest is not None and digest not in sources:
            raise ContractError(
                codes.INVALID_FIELD,
                f"{path}.source_digest {show(digest, 20)} names none of this answer's sources",
            )
        if quote_span is not None:
            if digest is None:
                raise ContractError(
                    codes.SPAN_MALFORMED,
                    f"{path}.quote_span needs {path}.source_digest to say which source it quotes",
                )
            check_span(quote_span, f"{path}.quote_span", {"source": sources[digest]})
        elif claim["supported"] is not None:
            raise ContractError(
                codes.SPAN_MISSING,
                f"{path}.quote_span is null, but supported is resolved "
                f"({str(claim['supported']).lower()}); cite the source passage",
            )
    verdicts = annotation["verdicts"]
    summary = None
    if verdicts is not None:
        for key in codebook.verdicts:
            _verdict_value(verdicts[key]["value"], f"annotation.verdicts.{key}.value")
        summary = summarize_supported(claims)
        stated = verdicts["supported"]["value"]
        if stated is not summary:
            raise ContractError(
                codes.SUMMARY_MISMATCH,
                f"annotation.verdicts.supported.value is {_json(stated)}, but the verifiable "
                f"claims summarize to {_json(summary)} (false if any is false, true only if "
                f"all are true, otherwise null)",
            )
    return CheckResult(
        ok=True,
        record_digest=identity.record_digest,
        stage=STAGE_STRUCTURAL,
        unit="answer",
        unit_digest=identity.unit_digest,
        supported=summary,
        codebook=codebook.key,
    )


# --- format-2 codebooks: the fields --------------------------------------------------


def record_texts(obj: Mapping[str, Any], unit: str) -> dict[str, str]:
    """The texts a record's spans may cite, by snapshot name (docs/formats.md)."""
    if unit in UNIT_KINDS_OF_FORMS:
        pair = unit == "answer_pair"
        return snapshot_texts(
            unit,
            query=obj["query"],
            answer=obj["answer"],
            sources=obj["sources"] if pair else obj["documents"],
            baseline=obj["baseline"] if pair else None,
        )
    texts = {"query": obj["query"]["text"] or "", "answer": obj["answer"]["text"] or ""}
    if unit == "tuple":
        texts["source"] = obj["source"]["text"] or ""
    else:
        for index, source in enumerate(obj.get("sources") or ()):
            texts[f"source:{index}"] = source["text"] or ""
    return texts


def _audit_engine(obj: dict[str, Any], codebook: Codebook, identity: _Identity) -> CheckResult:
    """Stages 2 to 6 for a codebook of fields: every field checked (the first problem is
    the reason, the message lists them all), then the derived values."""
    annotation = obj["annotation"]
    is_tuple = codebook.unit == "tuple"
    derived: dict[str, Any] = {}
    if annotation["values"] is not None:
        problems = check_annotation(codebook, annotation, record_texts(obj, codebook.unit))
        if problems:
            count = len(problems)
            listing = "; ".join(str(problem) for problem in problems[:20])
            raise ContractError(
                problems[0].code,
                listing if count == 1 else f"{count} problems: {listing}",
            )
        derived = derive(codebook, annotation)
    endpoint = short_circuit = action = None
    ro = next((item.code for item in codebook.derived if item.rule == "R_O"), None)
    if ro is not None and annotation["values"] is not None:
        endpoint = derived[ro]
        short_circuit = derive_short_circuit(codebook, annotation)[ro]
        action = policy_action(endpoint, codebook.answerability_policy)
    summary = next(
        (derived[item.code] for item in codebook.derived if item.rule == "claims_summary"),
        None,
    )
    return CheckResult(
        ok=True,
        endpoint=endpoint,
        short_circuit=short_circuit,
        action=action,
        record_digest=identity.record_digest,
        stage=STAGE_STRUCTURAL,
        unit=codebook.unit,
        tuple_digest=identity.tuple_digest if is_tuple else None,
        unit_digest=None if is_tuple else identity.unit_digest,
        supported=summary,
        codebook=codebook.key,
    )


def _json(value: bool | None) -> str:
    return "null" if value is None else str(value).lower()


# --- answer_pair and query_documents units: stage 1 -----------------------------------
# Only codebooks of format 2 label them; their annotations are checked as every format-2
# annotation is (_audit_engine), against the texts of record_texts.

#: Unit kinds whose records have a top-level shape of their own.
UNIT_KINDS_OF_FORMS = frozenset({"answer_pair", "query_documents"})
_PAIR_TOP = (
    "claimgate",
    "format_version",
    "codebook",
    "query",
    "pipeline",
    "answer",
    "sources",
    "baseline",
    "unit_digest",
    "annotation",
    "parents",
    "record_digest",
)
_PAIR_TOP_SET = frozenset(_PAIR_TOP) | _TOP_OPTIONAL
_BASELINE = ("pipeline", "answer", "sources")
_BASELINE_SET = frozenset(_BASELINE)
_DOCUMENTS_TOP = (
    "claimgate",
    "format_version",
    "codebook",
    "query",
    "pipeline",
    "answer",
    "documents",
    "unit_digest",
    "annotation",
    "parents",
    "record_digest",
)
_DOCUMENTS_TOP_SET = frozenset(_DOCUMENTS_TOP) | _TOP_OPTIONAL


def _sources_list(value: Any, path: str) -> list[Any]:
    if type(value) is not list:
        raise invalid(path, "a list", value)
    for index, source in enumerate(value):
        check_source(source, f"{path}[{index}]")
    return value


def _complete(answer: dict[str, Any], path: str, unit: str) -> None:
    if answer["status"] != "complete":
        raise ContractError(
            codes.INVALID_FIELD,
            f"{path}.status is 'failed': a failed attempt has nothing to judge, so it forms "
            f"no {unit} unit",
        )


def _form_unit_identity(obj: dict[str, Any], codebook: Codebook) -> _Identity:
    """Stage 1 for an answer_pair or query_documents record: fields, snapshot digests,
    the unit digest, the record digest."""
    pair = codebook.unit == "answer_pair"
    if pair:
        fields(obj, "", _PAIR_TOP, _TOP_OPTIONAL, exact=_PAIR_TOP_SET)
    else:
        fields(obj, "", _DOCUMENTS_TOP, _TOP_OPTIONAL, exact=_DOCUMENTS_TOP_SET)
    query = obj["query"]
    pipeline = obj["pipeline"]
    answer = obj["answer"]
    check_query(query)
    check_pipeline(pipeline)
    check_answer(answer)
    _complete(answer, "answer", codebook.unit)
    baseline = None
    if pair:
        sources = _sources_list(obj["sources"], "sources")
        baseline = obj["baseline"]
        fields(baseline, "baseline", _BASELINE, exact=_BASELINE_SET)
        check_pipeline(baseline["pipeline"], "baseline.pipeline")
        check_answer(baseline["answer"], "baseline.answer")
        _complete(baseline["answer"], "baseline.answer", codebook.unit)
        _sources_list(baseline["sources"], "baseline.sources")
    else:
        sources = _sources_list(obj["documents"], "documents")
        if not sources:
            raise ContractError(
                codes.INVALID_FIELD,
                "documents is empty: a query that retrieved no document forms no "
                "query_documents unit",
            )
        previous = 0
        for index, document in enumerate(sources):
            rank = document["rank"]
            if rank is None:
                raise ContractError(
                    codes.DOCUMENT_UNRANKED,
                    f"documents[{index}].rank is null; documents are in rank order",
                )
            if rank <= previous:
                raise invalid(
                    f"documents[{index}].rank",
                    f"greater than the rank before it ({previous}): documents are in rank order",
                    rank,
                )
            previous = rank
    if type(obj["unit_digest"]) is not str:
        raise invalid("unit_digest", "a SHA-256 hex string", obj["unit_digest"])
    check_sampling(obj.get("sampling"), "sampling")
    annotation = obj["annotation"]
    _engine_annotation_fields(annotation, codebook, False)
    _parents(obj["parents"], annotation["kind"])
    if type(obj["record_digest"]) is not str:
        raise invalid("record_digest", "a SHA-256 hex string", obj["record_digest"])

    # Digests, in the fixed order: snapshots, identity, record.
    snapshot_matches(answer, "answer", codes.ANSWER_DIGEST_MISMATCH)
    where = "sources" if pair else "documents"
    for index, source in enumerate(sources):
        snapshot_matches(source, f"{where}[{index}]", codes.SOURCE_DIGEST_MISMATCH)
    if pair:
        snapshot_matches(baseline["answer"], "baseline.answer", codes.ANSWER_DIGEST_MISMATCH)
        for index, source in enumerate(baseline["sources"]):
            snapshot_matches(source, f"baseline.sources[{index}]", codes.SOURCE_DIGEST_MISMATCH)
        expected = _digest_or_invalid(
            lambda: answer_pair_digest(
                evaluated=unit_digest(
                    query=query,
                    answer=answer,
                    source_digests=[source["digest"] for source in sources],
                    pipeline=pipeline,
                ),
                baseline=unit_digest(
                    query=query,
                    answer=baseline["answer"],
                    source_digests=[source["digest"] for source in baseline["sources"]],
                    pipeline=baseline["pipeline"],
                ),
            )
        )
        meaning = (
            "this query, evaluated answer and baseline answer (each with its sources and pipeline)"
        )
    else:
        expected = _digest_or_invalid(
            lambda: query_documents_digest(
                query=query,
                answer=answer,
                document_digests=[document["digest"] for document in sources],
                pipeline=pipeline,
            )
        )
        meaning = "this query, answer snapshot, documents in rank order and pipeline"
    if obj["unit_digest"] != expected:
        raise ContractError(
            codes.UNIT_DIGEST_MISMATCH,
            f"unit_digest {show(obj['unit_digest'], 20)} is not the digest of {meaning} "
            f"({expected[:12]}...)",
        )
    body = dict(obj)
    del body["record_digest"]
    record = _digest_or_invalid(lambda: sha256(canonical_json_unchecked(body)).hexdigest())
    if obj["record_digest"] != record:
        raise ContractError(
            codes.RECORD_DIGEST_MISMATCH,
            f"record_digest {show(obj['record_digest'], 20)} is not the digest of this record "
            f"({record[:12]}...): a field was changed after the record was sealed",
        )
    return _Identity(codebook=codebook, record_digest=record, unit_digest=expected)
