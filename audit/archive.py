"""Mapping between the format's JSON objects (docs/formats.md) and archive rows.

``*_as_dict`` gives the object exactly as a record or release carries it; an archive row's
``key`` is the canonical digest of that object, so a row and its export can never drift
apart. Date-times are stored as instants and written back in UTC with a ``Z`` suffix.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from audit.contract.canonical import canonical_digest
from audit.models import AnswerSnapshot, Pipeline, Query, SourceSnapshot


def parse_instant(value: str) -> datetime:
    instant = datetime.fromisoformat(value)
    if instant.tzinfo is None:  # the contract requires an offset; be strict anyway
        raise ValueError(f"date-time {value!r} has no UTC offset")
    return instant.astimezone(UTC)


def format_instant(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


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


def query_from_dict(data: dict[str, Any]) -> Query:
    row = Query(
        query_id=data["id"],
        text=data["text"],
        question_type=data["question_type"],
        question_version=data["question_version"],
        reference_time=data["reference_time"],
        target_name=data["target"]["name"],
        target_family=data["target"]["family"],
        template_id=data.get("template_id"),
        domain=data["domain"],
        locale=data["locale"],
    )
    row.key = canonical_digest(query_as_dict(row))
    return row


def pipeline_as_dict(row: Pipeline) -> dict[str, Any]:
    return {"name": row.name, "version": row.version, "config": row.config}


def pipeline_from_dict(data: dict[str, Any]) -> Pipeline:
    row = Pipeline(name=data["name"], version=data["version"], config=data["config"])
    row.key = canonical_digest(pipeline_as_dict(row))
    return row


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


def answer_from_dict(data: dict[str, Any]) -> AnswerSnapshot:
    conditions = data.get("conditions") or {}
    row = AnswerSnapshot(
        digest=data["digest"],
        service=data["service"],
        mode=data["mode"],
        model=data.get("model"),
        web_search=data.get("web_search"),
        region=conditions.get("region"),
        language=conditions.get("language"),
        login=conditions.get("login"),
        personalization=conditions.get("personalization"),
        collected_at=parse_instant(data["collected_at"]),
        status=data["status"],
        failure=data.get("failure"),
        text=data["text"],
        citations=data.get("citations") or [],
        raw_path=data.get("raw_path"),
    )
    row.key = canonical_digest(answer_as_dict(row))
    return row


def source_as_dict(row: SourceSnapshot) -> dict[str, Any]:
    return {
        "original_url": row.original_url,
        "canonical_url": row.canonical_url,
        "rank": row.rank,
        "collected_at": format_instant(row.collected_at),
        "text": row.text,
        "digest": row.digest,
    }


def source_from_dict(data: dict[str, Any]) -> SourceSnapshot:
    row = SourceSnapshot(
        digest=data["digest"],
        original_url=data["original_url"],
        canonical_url=data["canonical_url"],
        rank=data.get("rank"),
        collected_at=parse_instant(data["collected_at"]),
        text=data["text"],
    )
    row.key = canonical_digest(source_as_dict(row))
    return row
