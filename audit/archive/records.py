"""Records (docs/formats.md, "Record"): a unit of the archive with one annotation.

Built in one place for every caller — submissions, outcomes, adjudication, releases — so
that a record's digest means the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
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


def _sampling_of(stratum: str | None, probability: float | None) -> dict[str, Any] | None:
    if stratum is None and probability is None:
        return None
    return {"stratum": stratum, "inclusion_probability": probability}


def _sampling(row: Tuple) -> dict[str, Any] | None:
    return _sampling_of(row.sampling_stratum, row.inclusion_probability)


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


#: A unit with its archive rows as plain values (no model instance per row: at a million
#: rows the instances cost more than the query), for :func:`unit_contents_of`.
UNIT_VALUES = (
    "id",
    "digest",
    "partition",
    "state",
    "observation_id",
    "tuple_id",
    "tuple__sampling_stratum",
    "tuple__inclusion_probability",
    *(f"observation__query__{name}" for name in mapping.QUERY_FIELDS),
    *(f"observation__pipeline__{name}" for name in mapping.PIPELINE_FIELDS),
    *(f"observation__answer__{name}" for name in mapping.ANSWER_FIELDS),
    *(f"tuple__source__{name}" for name in mapping.SOURCE_FIELDS),
)


_KEYS: dict[tuple[str, Sequence[str]], tuple[tuple[str, str], ...]] = {}


def _row(values: dict[str, Any], prefix: str, names: Sequence[str]) -> SimpleNamespace:
    """An archive row as the mapping functions of audit.archive.mapping read it (attributes)."""
    keys = _KEYS.get((prefix, names))
    if keys is None:
        keys = _KEYS[prefix, names] = tuple((name, prefix + name) for name in names)
    return SimpleNamespace(**{name: values[key] for name, key in keys})


def unit_contents_of(*, study: Study, units: Sequence[dict[str, Any]]) -> dict[int, UnitContent]:
    """The content of each unit of a chunk (rows of :data:`UNIT_VALUES`, all of ``study``),
    through audit.archive.mapping, exactly what :func:`unit_content` gives one unit; an
    answer unit's sources take one more query for the whole chunk. Releases and
    ``verify_ledger`` rebuild records from it in bulk."""
    by_observation: dict[int, list[dict[str, Any]]] = {}
    if study.codebook.unit != CodebookUnit.TUPLE:
        rows = (
            Tuple.objects.filter(observation_id__in=[u["observation_id"] for u in units])
            .order_by("observation_id", "position", "id")
            .values("observation_id", *(f"source__{name}" for name in mapping.SOURCE_FIELDS))
        )
        for row in rows:
            by_observation.setdefault(row["observation_id"], []).append(
                mapping.source_as_dict(_row(row, "source__", mapping.SOURCE_FIELDS))
            )
    contents = {}
    for unit in units:
        if unit["tuple_id"] is not None:
            sources = [mapping.source_as_dict(_row(unit, "tuple__source__", mapping.SOURCE_FIELDS))]
            sampling = _sampling_of(
                unit["tuple__sampling_stratum"], unit["tuple__inclusion_probability"]
            )
        else:
            sources = by_observation.get(unit["observation_id"], [])
            sampling = None
        contents[unit["id"]] = UnitContent(
            unit_id=unit["id"],
            codebook_unit=study.codebook.unit,
            digest=unit["digest"],
            query=mapping.query_as_dict(_row(unit, "observation__query__", mapping.QUERY_FIELDS)),
            pipeline=mapping.pipeline_as_dict(
                _row(unit, "observation__pipeline__", mapping.PIPELINE_FIELDS)
            ),
            answer=mapping.answer_as_dict(
                _row(unit, "observation__answer__", mapping.ANSWER_FIELDS)
            ),
            sources=sources,
            sampling=sampling,
        )
    return contents


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
