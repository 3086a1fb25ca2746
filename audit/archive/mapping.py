"""Mapping between the format's JSON objects (docs/formats.md) and archive rows.

Each kind has three views of the same thing:
- ``*_normal(data)``: the object as the archive keeps it and as records and releases carry
  it (optional fields filled with ``None``, date-times as UTC instants ending in ``Z``);
- ``*_columns(normal)``: the model's column values for that object;
- ``*_as_dict(row)``: the normal object rebuilt from a stored row.
``*_as_dict(Model(**columns(normal))) == normal`` (tested), so a row and its export never
drift apart. An archive row's ``key`` is :func:`archive_key` of its normal object.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from audit.contract.canonical import canonical_digest_unchecked, encode_string
from audit.contract.digests import text_digest

if TYPE_CHECKING:  # pure at run time: the import's planning process loads no Django
    from audit.archive.models import AnswerSnapshot, Pipeline, Query, SourceSnapshot


def parse_instant(value: str) -> datetime:
    instant = datetime.fromisoformat(value)
    if instant.tzinfo is None:  # the contract requires an offset; be strict anyway
        raise ValueError(f"date-time {value!r} has no UTC offset")
    return instant.astimezone(UTC)


def format_instant(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


# An instant already in its normal form: whole seconds, UTC, written with "Z".
_NORMAL_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def normal_instant(value: str) -> str:
    if _NORMAL_SECONDS.fullmatch(value):
        # The common case: parsing (which still refuses an impossible date) and
        # formatting it again would give the same string back.
        datetime.fromisoformat(value)
        return value
    return format_instant(parse_instant(value))


def archive_key(normal: dict[str, Any]) -> str:
    """The identity of an archive row: the canonical digest of its normal object, with a
    snapshot's text left out — its ``digest`` field (checked against the text by the
    contract before anything is stored) stands for it, and hashing a digest is cheaper
    than re-serializing a long text."""
    if "text" in normal and "digest" in normal:
        normal = {key: value for key, value in normal.items() if key != "text"}
    # Normal objects are built here from parsed JSON: every key is a string.
    return canonical_digest_unchecked(normal)


# --- query ------------------------------------------------------------------------------


def query_normal(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": data["id"],
        "text": data["text"],
        "question_type": data["question_type"],
        "question_version": data["question_version"],
        "reference_time": data["reference_time"],
        "target": {"name": data["target"]["name"], "family": data["target"]["family"]},
        "template_id": data.get("template_id"),
        "domain": data["domain"],
        "locale": data["locale"],
    }


def query_columns(normal: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": archive_key(normal),
        "query_id": normal["id"],
        "text": normal["text"],
        "question_type": normal["question_type"],
        "question_version": normal["question_version"],
        "reference_time": normal["reference_time"],
        "target_name": normal["target"]["name"],
        "target_family": normal["target"]["family"],
        "template_id": normal["template_id"],
        "domain": normal["domain"],
        "locale": normal["locale"],
    }


def query_as_dict(row: Query) -> dict[str, Any]:
    return {
        "id": row.query_id,
        "text": row.text,
        "question_type": row.question_type,
        "question_version": row.question_version,
        "reference_time": row.reference_time,
        "target": {"name": row.target_name, "family": row.target_family},
        "template_id": row.template_id,
        "domain": row.domain,
        "locale": row.locale,
    }


# --- pipeline ---------------------------------------------------------------------------


def pipeline_normal(data: dict[str, Any]) -> dict[str, Any]:
    return {"name": data["name"], "version": data["version"], "config": data["config"]}


def pipeline_columns(normal: dict[str, Any]) -> dict[str, Any]:
    return {"key": archive_key(normal), **normal}


def pipeline_as_dict(row: Pipeline) -> dict[str, Any]:
    return {"name": row.name, "version": row.version, "config": row.config}


# --- answer snapshot --------------------------------------------------------------------


def answer_normal(data: dict[str, Any]) -> dict[str, Any]:
    conditions = data.get("conditions") or {}
    return {
        "service": data["service"],
        "mode": data["mode"],
        "model": data.get("model"),
        "web_search": data.get("web_search"),
        "conditions": {
            "region": conditions.get("region"),
            "language": conditions.get("language"),
            "login": conditions.get("login"),
            "personalization": conditions.get("personalization"),
        },
        "collected_at": normal_instant(data["collected_at"]),
        "status": data["status"],
        "failure": data.get("failure"),
        "text": data["text"],
        "citations": data.get("citations") or [],
        "raw_path": data.get("raw_path"),
        "digest": data["digest"],
    }


def answer_columns(normal: dict[str, Any]) -> dict[str, Any]:
    conditions = normal["conditions"]
    return {
        "key": archive_key(normal),
        "digest": normal["digest"],
        "service": normal["service"],
        "mode": normal["mode"],
        "model": normal["model"],
        "web_search": normal["web_search"],
        "region": conditions["region"],
        "language": conditions["language"],
        "login": conditions["login"],
        "personalization": conditions["personalization"],
        "collected_at": parse_instant(normal["collected_at"]),
        "status": normal["status"],
        "failure": normal["failure"],
        "text": normal["text"],
        "citations": normal["citations"],
        "raw_path": normal["raw_path"],
    }


def answer_as_dict(row: AnswerSnapshot) -> dict[str, Any]:
    return {
        "service": row.service,
        "mode": row.mode,
        "model": row.model,
        "web_search": row.web_search,
        "conditions": {
            "region": row.region,
            "language": row.language,
            "login": row.login,
            "personalization": row.personalization,
        },
        "collected_at": format_instant(row.collected_at),
        "status": row.status,
        "failure": row.failure,
        "text": row.text,
        "citations": row.citations,
        "raw_path": row.raw_path,
        "digest": row.digest,
    }


# --- source snapshot --------------------------------------------------------------------


def source_normal(data: dict[str, Any]) -> dict[str, Any]:
    """A source snapshot as records carry it: without the observation's per-tuple fields
    (``tuple_digest`` and ``sampling`` live on the tuple)."""
    return {
        "original_url": data["original_url"],
        "canonical_url": data["canonical_url"],
        "rank": data.get("rank"),
        "collected_at": normal_instant(data["collected_at"]),
        "text": data["text"],
        "digest": data["digest"],
    }


def source_columns(normal: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": archive_key(normal),
        "digest": normal["digest"],
        "original_url": normal["original_url"],
        "canonical_url": normal["canonical_url"],
        "rank": normal["rank"],
        "collected_at": parse_instant(normal["collected_at"]),
        "text": normal["text"],
    }


def source_as_dict(row: SourceSnapshot) -> dict[str, Any]:
    return {
        "original_url": row.original_url,
        "canonical_url": row.canonical_url,
        "rank": row.rank,
        "collected_at": format_instant(row.collected_at),
        "text": row.text,
        "digest": row.digest,
    }


# --- rows for bulk writes ---------------------------------------------------------------
# The same column values as ``*_columns``, as tuples in the order of ``*_COLUMNS`` (a bulk
# write of 10^5 rows builds no dict per row), with date-times as their normal UTC strings
# (both databases read them as the same instant). Tested equal to ``*_columns``.

QUERY_COLUMNS = (
    "key",
    "query_id",
    "text",
    "question_type",
    "question_version",
    "reference_time",
    "target_name",
    "target_family",
    "template_id",
    "domain",
    "locale",
)


def query_row(normal: dict[str, Any]) -> tuple[Any, ...]:
    target = normal["target"]
    return (
        archive_key(normal),
        normal["id"],
        normal["text"],
        normal["question_type"],
        normal["question_version"],
        normal["reference_time"],
        target["name"],
        target["family"],
        normal["template_id"],
        normal["domain"],
        normal["locale"],
    )


PIPELINE_COLUMNS = ("key", "name", "version", "config")


def pipeline_row(normal: dict[str, Any], *, key: str | None = None) -> tuple[Any, ...]:
    """``key``: the archive key if the caller has it (the digest of the pipeline's
    identity text, audit.contract.digests.pipeline_identity_text, is exactly it)."""
    return (
        key or archive_key(normal),
        normal["name"],
        normal["version"],
        normal["config"],
    )


ANSWER_COLUMNS = (
    "key",
    "digest",
    "service",
    "mode",
    "model",
    "web_search",
    "region",
    "language",
    "login",
    "personalization",
    "collected_at",
    "status",
    "failure",
    "text",
    "citations",
    "raw_path",
)


def answer_row(normal: dict[str, Any], *, key: str | None = None) -> tuple[Any, ...]:
    """``key``: the archive key if the caller has it (the digest of the answer's identity
    text, audit.contract.digests.answer_identity_text, is exactly it)."""
    conditions = normal["conditions"]
    return (
        key or archive_key(normal),
        normal["digest"],
        normal["service"],
        normal["mode"],
        normal["model"],
        normal["web_search"],
        conditions["region"],
        conditions["language"],
        conditions["login"],
        conditions["personalization"],
        normal["collected_at"],
        normal["status"],
        normal["failure"],
        normal["text"],
        normal["citations"],
        normal["raw_path"],
    )


#: The JSON columns among the archive tables' columns above and below (the pipeline's
#: config, the answer's citations): their values are written as JSON text.
JSON_COLUMNS = frozenset({"config", "citations"})

SOURCE_COLUMNS = (
    "key",
    "digest",
    "original_url",
    "canonical_url",
    "rank",
    "collected_at",
    "text",
)


def source_key(normal: dict[str, Any]) -> str:
    """:func:`archive_key` of a source snapshot's normal object, its canonical text
    written out field by field (keys in sorted order; the text is left out)."""
    rank = normal["rank"]
    if rank is not None and type(rank) is not int:
        return archive_key(normal)
    return text_digest(
        '{"canonical_url":'
        + encode_string(normal["canonical_url"])
        + ',"collected_at":'
        + encode_string(normal["collected_at"])
        + ',"digest":'
        + encode_string(normal["digest"])
        + ',"original_url":'
        + encode_string(normal["original_url"])
        + ',"rank":'
        + ("null" if rank is None else str(rank))
        + "}"
    )


def source_row(normal: dict[str, Any]) -> tuple[Any, ...]:
    return (
        source_key(normal),
        normal["digest"],
        normal["original_url"],
        normal["canonical_url"],
        normal["rank"],
        normal["collected_at"],
        normal["text"],
    )


# --- fields for reads ------------------------------------------------------------------
# What ``*_as_dict`` reads from a row: the kind's columns but its archive key. A reader
# that fetches plain values instead of model instances (a release at 10^6 rows) asks for
# exactly these, so that it and the mapping never drift apart (tested).

QUERY_FIELDS = tuple(name for name in QUERY_COLUMNS if name != "key")
PIPELINE_FIELDS = tuple(name for name in PIPELINE_COLUMNS if name != "key")
ANSWER_FIELDS = tuple(name for name in ANSWER_COLUMNS if name != "key")
SOURCE_FIELDS = tuple(name for name in SOURCE_COLUMNS if name != "key")
