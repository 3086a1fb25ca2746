"""Records (docs/formats.md, "Record"): a unit of the archive with one annotation.

Built in one place for every caller — submissions, outcomes, adjudication, releases — so
that a record's digest means the same thing everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.archive import mapping
from audit.archive.models import CodebookUnit, Study, Tuple, Unit
from audit.contract.digests import seal_record
from audit.contract.texts import text_problem


@dataclass(frozen=True)
class UnitContent:
    """Everything a form or a record needs about a unit, as the format's plain dicts."""

    unit_id: int
    codebook_unit: str
    digest: str
    query: dict[str, Any]
    pipeline: dict[str, Any]
    answer: dict[str, Any]
    sources: list[dict[str, Any]]
    sampling: dict[str, Any] | None

    @property
    def source(self) -> dict[str, Any]:
        return self.sources[0]


def _sampling(row: Tuple) -> dict[str, Any] | None:
    if row.sampling_stratum is None and row.inclusion_probability is None:
        return None
    return {"stratum": row.sampling_stratum, "inclusion_probability": row.inclusion_probability}


def unit_content(*, unit: Unit) -> UnitContent:
    """Three queries: the unit with its tuple and archive rows, then (answer units) the
    answer's tuples with their sources."""
    unit = Unit.objects.select_related(
        "study__codebook",
        "tuple__source",
        "observation__query",
        "observation__pipeline",
        "observation__answer",
    ).get(pk=unit.pk)
    observation = unit.observation
    if unit.tuple is not None:
        tuples = [unit.tuple]
    else:
        tuples = list(observation.tuples.select_related("source").order_by("position", "id"))
    return UnitContent(
        unit_id=unit.pk,
        codebook_unit=unit.study.codebook.unit,
        digest=unit.digest,
        query=mapping.query_as_dict(observation.query),
        pipeline=mapping.pipeline_as_dict(observation.pipeline),
        answer=mapping.answer_as_dict(observation.answer),
        sources=[mapping.source_as_dict(row.source) for row in tuples],
        sampling=_sampling(unit.tuple) if unit.tuple is not None else None,
    )


def record_body(
    *,
    study: Study,
    content: UnitContent,
    annotation: dict[str, Any],
    parents: list[str],
) -> dict[str, Any]:
    """The full record (docs/formats.md) of ``annotation`` on a unit, without its digest.
    (Releases serialize it once themselves and check the digest against the stored one.)"""
    record: dict[str, Any] = {
        "claimgate": "record",
        "format_version": 1,
        "codebook": {"name": study.codebook.name, "version": study.codebook.version},
        "query": content.query,
        "pipeline": content.pipeline,
        "answer": content.answer,
    }
    if content.codebook_unit == CodebookUnit.TUPLE:
        record["source"] = content.source
        record["tuple_digest"] = content.digest
    else:
        record["sources"] = content.sources
        record["unit_digest"] = content.digest
    record["sampling"] = content.sampling
    record["annotation"] = annotation
    record["parents"] = parents
    return record


def record_build(
    *,
    study: Study,
    content: UnitContent,
    annotation: dict[str, Any],
    parents: list[str],
) -> dict[str, Any]:
    """The full record (docs/formats.md) of ``annotation`` on a unit, sealed.

    Checked before it is sealed: a NUL (which PostgreSQL cannot store), an unpaired
    surrogate (no UTF-8 bytes to hash) or nesting deep enough to exhaust the serializer
    raises :class:`ContractError` ``invalid_text`` or ``too_deep`` naming where, before
    any digest is computed."""
    body = record_body(study=study, content=content, annotation=annotation, parents=parents)
    problem = text_problem(body)
    if problem is not None:
        raise problem
    return seal_record(body)
