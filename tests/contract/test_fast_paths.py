"""The checker's fast paths give the same bytes, reasons and messages as the plain code.

The record digest of a tuple record is assembled from its top-level fields (the record
text must equal the canonical serialization of the record minus ``record_digest``), and
the structural validators first test every rule in one expression, falling back to the
ordered checks on any failure. The references below are the ordered checks, written out
as they were before the fast paths; hypothesis compares the two on mutated objects.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.contract import check_record, codes
from audit.contract.canonical import CanonicalError, canonical_json_unchecked, check_keys
from audit.contract.digests import pipeline_identity_text
from audit.contract.errors import ContractError
from audit.contract.record import (
    PREDICATE_KEYS,
    _judgment,
    _tuple_annotation_fields,
    _tuple_record_digest_fast,
    _tuple_record_text,
)
from audit.contract.structure import (
    _ANSWER,
    _ANSWER_SET,
    _CITATION,
    _CITATION_SET,
    _CONDITIONS,
    _CONDITIONS_SET,
    _QUERY,
    _QUERY_SET,
    _SOURCE,
    _SOURCE_SET,
    _TARGET,
    _TARGET_SET,
    CITATION_KINDS,
    QUESTION_TYPES,
    check_answer,
    check_pipeline,
    check_query,
    check_source,
    date_or_datetime,
    datetime_with_offset,
    fields,
    invalid,
    join,
    optional_bool,
    optional_string,
    string,
    text,
)
from tests.contract.factories import answer, codebooks, make_record, query, reseal, source

CODEBOOKS = codebooks()
CODEBOOK = next(iter(cb for cb in CODEBOOKS.values() if cb.unit == "tuple"))
SETTINGS = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["", " ", "x", "complete", "failed", "source_citation", "2026-05-01"])
    | st.sampled_from(["2026-05-02T10:00:00Z", "2026-05-02T10:00:00", "target_owned"])
    | st.sampled_from(["independent", "consensus", "e\u0301\U0001f600", "\ud800", "\u2028"])
    | st.text(max_size=6)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)


def outcome(check: Any, *args: Any) -> tuple[str, str] | None:
    try:
        check(*args)
    except ContractError as exc:
        return (exc.code, exc.message)
    return None


def mutate(obj: dict[str, Any], draw: Any, nested: tuple[str, ...] = ()) -> dict[str, Any]:
    """A deep copy of ``obj`` with one field set, removed or added (at the top level or in
    one of the ``nested`` objects)."""
    obj = copy.deepcopy(obj)
    target = obj
    where = draw(st.sampled_from((None, *nested)))
    if where is not None and type(obj.get(where)) is dict:
        target = obj[where]
    elif where is not None and type(obj.get(where)) is list and obj[where]:
        item = obj[where][0]
        if type(item) is dict:
            target = item
    action = draw(st.sampled_from(["set", "set", "set", "delete", "add"]))
    keys = list(target)
    if action == "add" or not keys:
        target[draw(st.sampled_from(["extra", "id", "zzz"]))] = draw(json_values)
    elif action == "delete":
        del target[draw(st.sampled_from(keys))]
    else:
        target[draw(st.sampled_from(keys))] = draw(json_values)
    return obj


# --- references: the ordered checks ------------------------------------------------------


def reference_query(value: Any, path: str = "query") -> None:
    fields(value, path, _QUERY, exact=_QUERY_SET)
    string(value, "id", path)
    string(value, "text", path)
    if type(value["question_type"]) is not str or value["question_type"] not in QUESTION_TYPES:
        raise invalid(
            join(path, "question_type"),
            "one of natural_discovery, specified_source, specific_document",
            value["question_type"],
        )
    string(value, "question_version", path)
    date_or_datetime(value, "reference_time", path)
    target = value["target"]
    target_path = join(path, "target")
    fields(target, target_path, _TARGET, exact=_TARGET_SET)
    string(target, "name", target_path)
    string(target, "family", target_path)
    string(value, "template_id", path)
    string(value, "domain", path)
    string(value, "locale", path)


def reference_answer(value: Any, path: str = "answer") -> None:
    fields(value, path, _ANSWER, exact=_ANSWER_SET)
    string(value, "service", path)
    string(value, "mode", path)
    optional_string(value, "model", path)
    if type(value["web_search"]) is not bool:
        raise invalid(join(path, "web_search"), "true or false", value["web_search"])
    conditions = value["conditions"]
    fields(conditions, join(path, "conditions"), _CONDITIONS, exact=_CONDITIONS_SET)
    optional_string(conditions, "region", join(path, "conditions"))
    optional_string(conditions, "language", join(path, "conditions"))
    optional_bool(conditions, "login", join(path, "conditions"))
    optional_bool(conditions, "personalization", join(path, "conditions"))
    datetime_with_offset(value, "collected_at", path)
    status = value["status"]
    failure = value["failure"]
    text(value, "text", path)
    if status == "complete":
        if failure is not None:
            raise invalid(join(path, "failure"), "null for a complete answer", failure)
        if not value["text"]:
            raise ContractError(
                codes.INVALID_FIELD, f"{join(path, 'text')} is empty, but the answer is complete"
            )
    elif status == "failed":
        if type(failure) is not str or not failure.strip():
            raise invalid(
                join(path, "failure"),
                "a non-empty text for a failed answer (e.g. 'HTTP 429')",
                failure,
            )
    else:
        raise invalid(join(path, "status"), "'complete' or 'failed'", status)
    citations = value["citations"]
    if type(citations) is not list:
        raise invalid(join(path, "citations"), "a list", citations)
    for index, citation in enumerate(citations):
        where = f"{join(path, 'citations')}[{index}]"
        fields(citation, where, _CITATION, exact=_CITATION_SET)
        string(citation, "url", where)
        if type(citation["kind"]) is not str or citation["kind"] not in CITATION_KINDS:
            raise invalid(
                f"{where}.kind",
                "one of source_citation, url_mention, name_mention",
                citation["kind"],
            )
    optional_string(value, "raw_path", path)
    if type(value["digest"]) is not str:
        raise invalid(join(path, "digest"), "a SHA-256 hex string", value["digest"])


def reference_source(value: Any, path: str) -> None:
    fields(value, path, _SOURCE, exact=_SOURCE_SET)
    string(value, "original_url", path)
    string(value, "canonical_url", path)
    rank = value["rank"]
    if rank is not None and (type(rank) is not int or rank < 1):
        raise invalid(join(path, "rank"), "an integer of at least 1, or null", rank)
    datetime_with_offset(value, "collected_at", path)
    text(value, "text", path)
    if type(value["digest"]) is not str:
        raise invalid(join(path, "digest"), "a SHA-256 hex string", value["digest"])


# --- the record digest's text ------------------------------------------------------------


def _canonical_or_error(compute: Any) -> str:
    try:
        return compute()
    except CanonicalError as exc:
        return f"error: {exc}"


def _varied_record(data: Any, samplings: Any) -> dict[str, Any]:
    """A tuple record with mutated annotation and every stage-1-checked field varied within
    what the checks accept (``samplings``: what ``sampling`` may be drawn from)."""
    record = make_record()
    draw = data.draw
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        record["annotation"] = mutate(record["annotation"], draw, ("spans", "evidence"))
    # The query, answer and source have passed their checks when the text is assembled:
    # vary them within what the checks accept.
    texts = st.text(min_size=1) | st.sampled_from(["e\u0301\U0001f600", "\ud800", '"\\\u2028'])
    optional_texts = st.none() | texts
    flags = st.none() | st.booleans()
    for key in ("id", "text", "question_version", "template_id", "domain", "locale"):
        record["query"][key] = draw(texts)
    for key in ("name", "family"):
        record["query"]["target"][key] = draw(texts)
    answer_ = record["answer"]
    for key in ("service", "mode", "digest", "text", "collected_at"):
        answer_[key] = draw(texts)
    for key in ("model", "raw_path", "failure"):
        answer_[key] = draw(optional_texts)
    answer_["status"] = draw(st.sampled_from(["complete", "failed"]))
    answer_["web_search"] = draw(st.booleans())
    conditions = answer_["conditions"]
    conditions["region"] = draw(optional_texts)
    conditions["language"] = draw(optional_texts)
    conditions["login"] = draw(flags)
    conditions["personalization"] = draw(flags)
    answer_["citations"] = draw(
        st.lists(
            st.fixed_dictionaries(
                {"url": texts, "kind": st.sampled_from(["source_citation", "name_mention"])}
            ),
            max_size=3,
        )
    )
    for key in ("original_url", "canonical_url", "text", "digest", "collected_at"):
        record["source"][key] = draw(texts)
    record["source"]["rank"] = draw(st.none() | st.integers(min_value=1))
    for where in ("query", "answer", "source", "conditions", "target"):
        container = record["answer"] if where == "conditions" else record
        container = record["query"] if where == "target" else container
        if draw(st.booleans()):  # insertion order must not matter
            container[where] = dict(reversed(list(container[where].items())))
    if draw(st.booleans()):
        record["sampling"] = draw(samplings)
    if draw(st.booleans()):
        record["parents"] = draw(st.lists(st.sampled_from(["0" * 64, "ab" * 32, "f" * 64])))
    if draw(st.booleans()):
        record["codebook"] = {
            "version": draw(st.text(min_size=1)),
            "name": draw(st.text(min_size=1)),
        }
    if draw(st.booleans()):
        record["tuple_digest"] = draw(st.text())
    if draw(st.booleans()):  # insertion order must not matter
        record = dict(reversed(list(record.items())))
    return record


@SETTINGS
@given(st.data())
def test_tuple_record_text_is_the_canonical_body(data):
    record = _varied_record(data, json_values)
    body = {key: value for key, value in record.items() if key != "record_digest"}
    expected = _canonical_or_error(lambda: canonical_json_unchecked(body).decode("utf-8"))

    def assembled() -> str:
        text_ = _tuple_record_text(record, pipeline_identity_text(record["pipeline"]))
        try:
            text_.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CanonicalError(f"text is not valid Unicode: {exc.reason}") from exc
        return text_

    assert _canonical_or_error(assembled) == expected


#: A sampling as stage 1 lets it through: null or {stratum, probability in (0, 1]}.
samplings = st.none() | st.fixed_dictionaries(
    {
        "stratum": st.text(),
        "inclusion_probability": st.floats(min_value=1e-9, max_value=1.0) | st.just(1),
    }
)


@SETTINGS
@given(st.data())
def test_the_compiled_record_digest_is_the_canonical_one_or_none(data):
    # The annotation is mutated freely (NaN, infinity, huge integers, odd keys, small
    # floats, surrogates): the compiled digest is None or the canonical body's digest.
    record = _varied_record(data, samplings)
    body = {key: value for key, value in record.items() if key != "record_digest"}
    expected = _canonical_or_error(lambda: canonical_json_unchecked(body).decode("utf-8"))
    fast = _tuple_record_digest_fast(record)
    if fast is not None:
        assert not expected.startswith("error: ")
        assert fast == hashlib.sha256(expected.encode("utf-8")).hexdigest()


def test_the_compiled_record_digest_is_used_for_a_plain_record():
    record = make_record()
    assert _tuple_record_digest_fast(record) == record["record_digest"]
    assert check_record(record, CODEBOOKS).ok


# --- structural validators ---------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_check_query_fast_path(data):
    value = mutate(query(), data.draw, ("target",))
    assert outcome(check_query, value) == outcome(reference_query, value)


@SETTINGS
@given(st.data(), st.booleans())
def test_check_answer_fast_path(data, failed):
    value = mutate(answer(failed=failed), data.draw, ("conditions", "citations"))
    assert outcome(check_answer, value) == outcome(reference_answer, value)


@SETTINGS
@given(st.data())
def test_check_source_fast_path(data):
    value = mutate(source(), data.draw)
    assert outcome(check_source, value, "source") == outcome(reference_source, value, "source")


@SETTINGS
@given(st.dictionaries(st.text(max_size=4) | st.integers(), json_values, max_size=4))
def test_check_pipeline_config(config):
    pipeline = {"name": "p", "version": "1", "config": config}
    try:
        check_keys(config)
        expected = None
    except CanonicalError as exc:
        expected = (codes.INVALID_FIELD, f"pipeline.config: {exc}")
    assert outcome(check_pipeline, pipeline) == expected


def reference_annotation(annotation: Any, codebook: Any) -> None:
    from audit.contract import record as module

    fields(
        annotation,
        "annotation",
        module._TUPLE_ANNOTATION,
        module._TUPLE_ANNOTATION_OPTIONAL,
        exact=module._TUPLE_ANNOTATION_SET,
    )
    module._annotation_common(annotation, codebook)
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


@SETTINGS
@given(st.data())
def test_tuple_annotation_fast_path(data):
    annotation = make_record()["annotation"]
    annotation.setdefault("rationale", None)
    annotation.setdefault("assisted", None)
    value = mutate(annotation, data.draw)
    for codebook in CODEBOOKS.values():
        if codebook.unit == "tuple":
            assert outcome(_tuple_annotation_fields, value, codebook) == outcome(
                reference_annotation, value, codebook
            )


def reference_predicates(predicates: dict[str, Any]) -> tuple[str, str] | None:
    try:
        for key in PREDICATE_KEYS:
            if key not in predicates:
                raise ContractError(
                    codes.PREDICATE_MISSING,
                    f"annotation.predicates.{key} is missing; write an unresolved judgment as null",
                )
            _judgment(predicates[key], f"annotation.predicates.{key}")
        if predicates.keys() != set(PREDICATE_KEYS):
            extra = sorted(str(key) for key in predicates if key not in PREDICATE_KEYS)
            raise ContractError(
                codes.UNKNOWN_FIELD,
                f"annotation.predicates.{extra[0]} is not a predicate; the predicates are "
                f"exactly I, A, M, D",
            )
    except ContractError as exc:
        return (exc.code, exc.message)
    return None


@SETTINGS
@given(st.data())
def test_predicates_fast_path(data):
    record = make_record()
    predicates = mutate(record["annotation"]["predicates"], data.draw)
    record["annotation"]["predicates"] = predicates
    try:
        reseal(record)
    except (CanonicalError, ValueError, TypeError):
        return
    result = check_record(record, CODEBOOKS)
    expected = reference_predicates(predicates)
    if expected is not None:
        assert (result.reason, result.message) == expected
    else:
        assert result.reason not in {
            codes.PREDICATE_MISSING,
            codes.PREDICATE_OUT_OF_RANGE,
            codes.PREDICATE_BOOLEAN,
            codes.PREDICATE_STRING,
            codes.PREDICATE_FLOAT,
            codes.PREDICATE_TYPE,
        }
