"""Structural validators for the objects records and observations share.

Query, pipeline, answer, source and sampling objects look the same in an observation line
and in a record, so they are checked here, once, by both :mod:`audit.contract.record` and
:mod:`audit.contract.observations`. Each validator raises :class:`ContractError` with
``missing_field`` (a required field is absent), ``unknown_field`` (a field the format does
not define: strict, so that a misspelt field is caught instead of ignored) or
``invalid_field`` (wrong type, enum value or rule), naming the field path.

The validators are written out by hand rather than driven by a schema table: they run for
every record the checker sees, and the per-field function calls of a generic walker would
cost more than the whole check is allowed to take.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, datetime
from hashlib import sha256
from typing import Any

from audit.contract import codes
from audit.contract.canonical import CanonicalError, check_keys
from audit.contract.errors import ContractError, show, type_name

QUESTION_TYPES = frozenset({"natural_discovery", "specified_source", "specific_document"})
ANSWER_STATUSES = frozenset({"complete", "failed"})
CITATION_KINDS = frozenset({"source_citation", "url_mention", "name_mention"})
SNAPSHOTS = ("query", "answer", "source")


def fields(
    obj: Any,
    path: str,
    required: tuple[str, ...],
    optional: Collection[str] = (),
    *,
    exact: frozenset[str] | None = None,
) -> None:
    """Check that ``obj`` is an object holding every ``required`` field and nothing unknown.

    ``exact`` is ``frozenset(required)`` precomputed by the caller: when the keys equal it
    (the common case) no further work is done.
    """
    if type(obj) is not dict:
        raise ContractError(codes.INVALID_FIELD, f"{path} must be an object, not {type_name(obj)}")
    keys = obj.keys()
    if exact is not None and keys == exact:
        return
    for key in required:
        if key not in obj:
            raise ContractError(codes.MISSING_FIELD, f"{join(path, key)} is missing")
    for key in keys:
        if key not in required and key not in optional:
            raise ContractError(
                codes.UNKNOWN_FIELD,
                f"{join(path, key)} is not a field of this object (unknown fields are refused, "
                f"so that a misspelt field is not silently ignored)",
            )


def join(path: str, key: str) -> str:
    """``path.key``; the top level of a record or line has the empty path."""
    return f"{path}.{key}" if path else key


def invalid(path: str, expected: str, value: Any) -> ContractError:
    return ContractError(codes.INVALID_FIELD, f"{path} must be {expected}, not {show(value)}")


# The field checkers below take (object, key, path) and build the field's path only when
# they fail: formatting a path for every field of every record would cost more than the
# checks themselves.


def string(obj: dict[str, Any], key: str, path: str) -> None:
    """A non-empty string."""
    value = obj[key]
    if type(value) is not str or not value:
        raise invalid(join(path, key), "a non-empty string", value)


def text(obj: dict[str, Any], key: str, path: str) -> None:
    """A string, possibly empty."""
    if type(obj[key]) is not str:
        raise invalid(join(path, key), "a string", obj[key])


def optional_string(obj: dict[str, Any], key: str, path: str) -> None:
    value = obj[key]
    if value is not None and (type(value) is not str or not value):
        raise invalid(join(path, key), "a non-empty string or null", value)


def optional_bool(obj: dict[str, Any], key: str, path: str) -> None:
    value = obj[key]
    if value is not None and type(value) is not bool:
        raise invalid(join(path, key), "true, false or null", value)


def datetime_with_offset(obj: dict[str, Any], key: str, path: str) -> None:
    """An ISO 8601 date-time with a UTC offset (``Z`` or ``+02:00``)."""
    value = obj[key]
    if type(value) is str:
        try:
            if datetime.fromisoformat(value).tzinfo is not None:
                return
        except ValueError:
            pass
    raise invalid(join(path, key), "an ISO 8601 date-time with offset", value)


def date_or_datetime(obj: dict[str, Any], key: str, path: str) -> None:
    """An ISO 8601 date (``2026-05-01``) or date-time."""
    value = obj[key]
    if type(value) is str:
        try:
            date.fromisoformat(value)
            return
        except ValueError:
            pass
        try:
            datetime.fromisoformat(value)
            return
        except ValueError:
            pass
    raise invalid(join(path, key), "an ISO 8601 date or date-time", value)


_QUERY = (
    "id",
    "text",
    "question_type",
    "question_version",
    "reference_time",
    "target",
    "template_id",
    "domain",
    "locale",
)
_QUERY_SET = frozenset(_QUERY)
_TARGET = ("name", "family")
_TARGET_SET = frozenset(_TARGET)


def check_query(query: Any, path: str = "query") -> None:
    # Fast path: every check below holds, tested in one expression (a call per field costs
    # more than the test). When any fails, the checks run in order, so the first failure
    # decides the reason exactly as before. The date, which raises, is checked last: when
    # it alone fails, it is also the first failure in order.
    if type(query) is dict and query.keys() == _QUERY_SET:
        target = query["target"]
        value = query["question_type"]
        if (
            type(query["id"]) is str
            and query["id"]
            and type(query["text"]) is str
            and query["text"]
            and type(value) is str
            and value in QUESTION_TYPES
            and type(query["question_version"]) is str
            and query["question_version"]
            and type(target) is dict
            and target.keys() == _TARGET_SET
            and type(target["name"]) is str
            and target["name"]
            and type(target["family"]) is str
            and target["family"]
            and type(query["template_id"]) is str
            and query["template_id"]
            and type(query["domain"]) is str
            and query["domain"]
            and type(query["locale"]) is str
            and query["locale"]
        ):
            date_or_datetime(query, "reference_time", path)
            return
    fields(query, path, _QUERY, exact=_QUERY_SET)
    string(query, "id", path)
    string(query, "text", path)
    if type(query["question_type"]) is not str or query["question_type"] not in QUESTION_TYPES:
        raise invalid(
            join(path, "question_type"),
            "one of natural_discovery, specified_source, specific_document",
            query["question_type"],
        )
    string(query, "question_version", path)
    date_or_datetime(query, "reference_time", path)
    target = query["target"]
    target_path = join(path, "target")
    fields(target, target_path, _TARGET, exact=_TARGET_SET)
    string(target, "name", target_path)
    string(target, "family", target_path)
    string(query, "template_id", path)
    string(query, "domain", path)
    string(query, "locale", path)


_PIPELINE = ("name", "version", "config")
_SCALARS = frozenset({str, int, float, bool, type(None)})
_PIPELINE_SET = frozenset(_PIPELINE)


def check_pipeline(pipeline: Any, path: str = "pipeline") -> None:
    fields(pipeline, path, _PIPELINE, exact=_PIPELINE_SET)
    string(pipeline, "name", path)
    string(pipeline, "version", path)
    config = pipeline["config"]
    if type(config) is not dict:
        raise invalid(join(path, "config"), "an object", config)
    # Fast path: string keys and scalar values (no container to walk into).
    for key, item in config.items():
        if type(key) is not str or type(item) not in _SCALARS:
            break
    else:
        return
    # The configuration is free-form; it only has to serialize canonically (the tuple
    # digest binds it). Every other object's keys are checked field by field.
    try:
        check_keys(config)
    except CanonicalError as exc:
        raise ContractError(codes.INVALID_FIELD, f"{join(path, 'config')}: {exc}") from None


_ANSWER = (
    "service",
    "mode",
    "model",
    "web_search",
    "conditions",
    "collected_at",
    "status",
    "failure",
    "text",
    "citations",
    "raw_path",
    "digest",
)
_ANSWER_SET = frozenset(_ANSWER)
_CONDITIONS = ("region", "language", "login", "personalization")
_CONDITIONS_SET = frozenset(_CONDITIONS)
_CITATION = ("url", "kind")
_CITATION_SET = frozenset(_CITATION)


def _answer_holds(answer: Any) -> bool:
    """Whether every check of :func:`check_answer` but ``collected_at`` holds."""
    if type(answer) is not dict or answer.keys() != _ANSWER_SET:
        return False
    conditions = answer["conditions"]
    if type(conditions) is not dict or conditions.keys() != _CONDITIONS_SET:
        return False
    model = answer["model"]
    region = conditions["region"]
    language = conditions["language"]
    login = conditions["login"]
    personalization = conditions["personalization"]
    raw_path = answer["raw_path"]
    status = answer["status"]
    failure = answer["failure"]
    text = answer["text"]
    citations = answer["citations"]
    if not (
        type(answer["service"]) is str
        and answer["service"]
        and type(answer["mode"]) is str
        and answer["mode"]
        and (model is None or (type(model) is str and model))
        and type(answer["web_search"]) is bool
        and (region is None or (type(region) is str and region))
        and (language is None or (type(language) is str and language))
        and (login is None or type(login) is bool)
        and (personalization is None or type(personalization) is bool)
        and type(text) is str
        and (
            (status == "complete" and failure is None and text)
            or (status == "failed" and type(failure) is str and failure.strip())
        )
        and type(citations) is list
        and (raw_path is None or (type(raw_path) is str and raw_path))
        and type(answer["digest"]) is str
    ):
        return False
    for citation in citations:
        if not (
            type(citation) is dict
            and citation.keys() == _CITATION_SET
            and type(citation["url"]) is str
            and citation["url"]
            and type(citation["kind"]) is str
            and citation["kind"] in CITATION_KINDS
        ):
            return False
    return True


def check_answer(answer: Any, path: str = "answer") -> None:
    """Fields of an answer snapshot and the status/failure rule (not its digest)."""
    if _answer_holds(answer):
        # Every other check holds, so collected_at is the first failure if it fails.
        datetime_with_offset(answer, "collected_at", path)
        return
    fields(answer, path, _ANSWER, exact=_ANSWER_SET)
    string(answer, "service", path)
    string(answer, "mode", path)
    optional_string(answer, "model", path)
    if type(answer["web_search"]) is not bool:
        raise invalid(join(path, "web_search"), "true or false", answer["web_search"])
    conditions = answer["conditions"]
    fields(conditions, join(path, "conditions"), _CONDITIONS, exact=_CONDITIONS_SET)
    optional_string(conditions, "region", join(path, "conditions"))
    optional_string(conditions, "language", join(path, "conditions"))
    optional_bool(conditions, "login", join(path, "conditions"))
    optional_bool(conditions, "personalization", join(path, "conditions"))
    datetime_with_offset(answer, "collected_at", path)
    status = answer["status"]
    failure = answer["failure"]
    text(answer, "text", path)
    if status == "complete":
        if failure is not None:
            raise invalid(join(path, "failure"), "null for a complete answer", failure)
        if not answer["text"]:
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
    citations = answer["citations"]
    if type(citations) is not list:
        raise invalid(join(path, "citations"), "a list", citations)
    for index, citation in enumerate(citations):
        if (
            type(citation) is dict
            and citation.keys() == _CITATION_SET
            and type(citation["url"]) is str
            and citation["url"]
            and type(citation["kind"]) is str
            and citation["kind"] in CITATION_KINDS
        ):
            continue
        where = f"{join(path, 'citations')}[{index}]"
        fields(citation, where, _CITATION, exact=_CITATION_SET)
        string(citation, "url", where)
        if type(citation["kind"]) is not str or citation["kind"] not in CITATION_KINDS:
            raise invalid(
                f"{where}.kind",
                "one of source_citation, url_mention, name_mention",
                citation["kind"],
            )
    optional_string(answer, "raw_path", path)
    if type(answer["digest"]) is not str:
        raise invalid(join(path, "digest"), "a SHA-256 hex string", answer["digest"])


_SOURCE = ("original_url", "canonical_url", "rank", "collected_at", "text", "digest")
_SOURCE_SET = frozenset(_SOURCE)
_OBSERVED_SOURCE = (*_SOURCE, "tuple_digest")
_OBSERVED_SOURCE_SET = frozenset(_OBSERVED_SOURCE)
_OBSERVED_SOURCE_OPTIONAL = frozenset({"sampling"})


def check_source(source: Any, path: str, *, observed: bool = False) -> None:
    """Fields of a source snapshot (not its digest).

    ``observed``: the source of an observation line, which also carries its
    ``tuple_digest`` and an optional ``sampling``; a record keeps both at its top level.
    """
    if observed:
        fields(
            source, path, _OBSERVED_SOURCE, _OBSERVED_SOURCE_OPTIONAL, exact=_OBSERVED_SOURCE_SET
        )
    elif type(source) is dict and source.keys() == _SOURCE_SET:
        # Fast path, as in check_query: collected_at (which raises) last.
        rank = source["rank"]
        if (
            type(source["original_url"]) is str
            and source["original_url"]
            and type(source["canonical_url"]) is str
            and source["canonical_url"]
            and (rank is None or (type(rank) is int and rank >= 1))
            and type(source["text"]) is str
            and type(source["digest"]) is str
        ):
            datetime_with_offset(source, "collected_at", path)
            return
        fields(source, path, _SOURCE, exact=_SOURCE_SET)
    else:
        fields(source, path, _SOURCE, exact=_SOURCE_SET)
    string(source, "original_url", path)
    string(source, "canonical_url", path)
    rank = source["rank"]
    if rank is not None and (type(rank) is not int or rank < 1):
        raise invalid(join(path, "rank"), "an integer of at least 1, or null", rank)
    datetime_with_offset(source, "collected_at", path)
    text(source, "text", path)
    if type(source["digest"]) is not str:
        raise invalid(join(path, "digest"), "a SHA-256 hex string", source["digest"])
    if observed:
        if type(source["tuple_digest"]) is not str:
            raise invalid(
                join(path, "tuple_digest"), "a SHA-256 hex string", source["tuple_digest"]
            )
        check_sampling(source.get("sampling"), join(path, "sampling"))


_SAMPLING = ("stratum", "inclusion_probability")
_SAMPLING_SET = frozenset(_SAMPLING)


def check_sampling(sampling: Any, path: str) -> None:
    """``null`` or ``{stratum, inclusion_probability ∈ (0, 1]}``."""
    if sampling is None:
        return
    fields(sampling, path, _SAMPLING, exact=_SAMPLING_SET)
    string(sampling, "stratum", path)
    probability = sampling["inclusion_probability"]
    if type(probability) not in (int, float) or not 0 < probability <= 1:
        raise invalid(join(path, "inclusion_probability"), "a number in (0, 1]", probability)


def snapshot_matches(snapshot: dict[str, Any], path: str, code: str) -> None:
    """The stored ``digest`` of an answer or source snapshot is the digest of its text."""
    try:
        # snapshot_digest, inlined (it runs twice per record).
        actual = sha256(snapshot["text"].encode("utf-8")).hexdigest()
    except UnicodeEncodeError:
        raise ContractError(
            codes.INVALID_FIELD,
            f"{join(path, 'text')} holds an unpaired surrogate and is not valid Unicode text",
        ) from None
    if actual != snapshot["digest"]:
        raise ContractError(
            code,
            f"{join(path, 'digest')} {show(snapshot['digest'], 20)} is not the digest of "
            f"{join(path, 'text')} "
            f"({actual[:12]}...): the text or the digest was changed",
        )


def snapshot_texts(
    unit: str,
    *,
    query: dict[str, Any],
    answer: dict[str, Any],
    sources: list[dict[str, Any]],
    baseline: dict[str, Any] | None = None,
) -> dict[str, str]:
    """The texts evidence spans may cite in a unit of kind ``unit``, by snapshot name
    (docs/formats.md, "Evidence spans"; the names of audit.contract.fields.snapshot_names):
    ``query``, then ``answer`` and ``source`` (a tuple's one source), ``answer`` and
    ``source:N`` (an answer's N-th source, 0-based), ``answer`` and ``baseline`` (an
    answer pair's evaluated and baseline answers) or ``document:N`` (a query_documents
    unit's N-th document in rank order, 0-based). ``sources`` are the unit's sources as
    its record holds them (a query_documents record's ``documents``); ``baseline`` is an
    answer_pair record's ``baseline`` object."""
    texts = {"query": query["text"]}
    if unit == "query_documents":
        for index, document in enumerate(sources):
            texts[f"document:{index}"] = document["text"]
        return texts
    texts["answer"] = answer["text"]
    if unit == "tuple":
        texts["source"] = sources[0]["text"]
    elif unit == "answer_pair":
        if baseline is not None:
            texts["baseline"] = baseline["answer"]["text"]
    else:
        for index, source in enumerate(sources):
            texts[f"source:{index}"] = source["text"]
    return texts
