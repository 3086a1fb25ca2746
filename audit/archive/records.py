"""Records (docs/formats.md, "Record"): a unit of the archive with one annotation.

Built in one place for every caller — submissions, outcomes, adjudication, releases — so
that a record's digest means the same thing everywhere.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from django.db.models import F

from audit.archive import mapping
from audit.archive.models import CodebookUnit, Observation, Study, Tuple, Unit
from audit.contract.digests import seal_record
from audit.contract.structure import snapshot_texts
from audit.contract.texts import text_problem


@dataclass(frozen=True)
class UnitContent:
    """Everything a form or a record needs about a unit, as the format's plain dicts.

    By unit kind: a tuple's one source; an answer's sources in answer order; an answer
    pair's evaluated answer (``answer``, ``pipeline``, ``sources``) and its ``baseline``
    (``{pipeline, answer, sources}``), which a form shows in an order of its own and never
    labels as evaluated or baseline; a query_documents unit's ``documents`` (its sources
    in rank order)."""

    unit_id: int
    codebook_unit: str
    digest: str
    query: dict[str, Any]
    pipeline: dict[str, Any]
    answer: dict[str, Any]
    sources: list[dict[str, Any]]
    sampling: dict[str, Any] | None
    baseline: dict[str, Any] | None = None

    @property
    def source(self) -> dict[str, Any]:
        return self.sources[0]

    @property
    def documents(self) -> list[dict[str, Any]]:
        """A query_documents unit's documents, rank 1 first."""
        return self.sources

    @property
    def texts(self) -> dict[str, str]:
        """The texts evidence spans may cite, by snapshot name (``query``, ``answer``,
        ``source``, ``source:N``, ``baseline``, ``document:N``, as the kind has them)."""
        return snapshot_texts(
            self.codebook_unit,
            query=self.query,
            answer=self.answer,
            sources=self.sources,
            baseline=self.baseline,
        )


def _sampling_of(stratum: str | None, probability: float | None) -> dict[str, Any] | None:
    if stratum is None and probability is None:
        return None
    return {"stratum": stratum, "inclusion_probability": probability}


def _sampling(row: Tuple) -> dict[str, Any] | None:
    return _sampling_of(row.sampling_stratum, row.inclusion_probability)


def _source_order(kind: str) -> tuple[str, ...]:
    """A unit's sources in answer order; a query_documents unit's documents in rank order
    (every one of them has a rank: the import refuses an unranked one)."""
    if kind == CodebookUnit.QUERY_DOCUMENTS:
        return ("observation_id", "source__rank", "position", "id")
    return ("observation_id", "position", "id")


def unit_content(*, unit: Unit) -> UnitContent:
    """Two queries: the unit with its tuple and archive rows (and its baseline's, for an
    answer pair), then (all but tuple units) the observations' tuples with their sources."""
    # The codebook's kind of unit only, not its row: its definition (a wide JSON value,
    # parsed on every read) is not needed here.
    unit = (
        Unit.objects.select_related(
            "tuple__source",
            "observation__query",
            "observation__pipeline",
            "observation__answer",
            "baseline__pipeline",
            "baseline__answer",
        )
        .annotate(codebook_unit=F("study__codebook__unit"))
        .get(pk=unit.pk)
    )
    observation = unit.observation
    kind = unit.codebook_unit
    baseline = None
    if unit.tuple is not None:
        tuples = [unit.tuple]
    else:
        wanted = [observation.pk] if unit.baseline is None else [observation.pk, unit.baseline_id]
        rows = list(
            Tuple.objects.filter(observation_id__in=wanted)
            .select_related("source")
            .order_by(*_source_order(kind))
        )
        tuples = [row for row in rows if row.observation_id == observation.pk]
        if unit.baseline is not None:
            baseline = {
                "pipeline": mapping.pipeline_as_dict(unit.baseline.pipeline),
                "answer": mapping.answer_as_dict(unit.baseline.answer),
                "sources": [
                    mapping.source_as_dict(row.source)
                    for row in rows
                    if row.observation_id == unit.baseline_id
                ],
            }
    return UnitContent(
        unit_id=unit.pk,
        codebook_unit=kind,
        digest=unit.digest,
        query=mapping.query_as_dict(observation.query),
        pipeline=mapping.pipeline_as_dict(observation.pipeline),
        answer=mapping.answer_as_dict(observation.answer),
        sources=[mapping.source_as_dict(row.source) for row in tuples],
        sampling=_sampling(unit.tuple) if unit.tuple is not None else None,
        baseline=baseline,
    )


#: A unit with its archive rows as plain values (no model instance per row: at a million
#: rows the instances cost more than the query), for :func:`unit_contents_of`.
UNIT_VALUES = (
    "id",
    "digest",
    "partition",
    "state",
    "observation_id",
    "baseline_id",
    "tuple_id",
    "tuple__sampling_stratum",
    "tuple__inclusion_probability",
    *(f"observation__query__{name}" for name in mapping.QUERY_FIELDS),
    *(f"observation__pipeline__{name}" for name in mapping.PIPELINE_FIELDS),
    *(f"observation__answer__{name}" for name in mapping.ANSWER_FIELDS),
    *(f"tuple__source__{name}" for name in mapping.SOURCE_FIELDS),
)


_SHAPES: dict[tuple[str, Sequence[str]], tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {}


def _row(values: dict[str, Any], prefix: str, names: Sequence[str]) -> Any:
    """An archive row as the mapping functions of audit.archive.mapping read it (attributes):
    a named tuple of ``names``, taken from ``values`` at ``prefix + name`` (its class and
    getter made once per shape: a build makes four of these per unit)."""
    shape = _SHAPES.get((prefix, names))
    if shape is None:
        keys = [prefix + name for name in names]
        getter = itemgetter(*keys) if len(keys) > 1 else lambda row: (row[keys[0]],)
        shape = _SHAPES[prefix, names] = (namedtuple("ArchiveRow", names)._make, getter)
    make, getter = shape
    return make(getter(values))


def unit_contents_of(*, study: Study, units: Sequence[dict[str, Any]]) -> dict[int, UnitContent]:
    """The content of each unit of a chunk (rows of :data:`UNIT_VALUES`, all of ``study``),
    through audit.archive.mapping, exactly what :func:`unit_content` gives one unit; the
    sources of the chunk's other kinds take one more query, and answer pairs' baselines
    one more. Releases and ``verify_ledger`` rebuild records from it in bulk."""
    by_observation: dict[int, list[dict[str, Any]]] = {}
    kind = study.codebook.unit
    baselines = _baselines_of(units) if kind == CodebookUnit.ANSWER_PAIR else {}
    if kind != CodebookUnit.TUPLE:
        wanted = [u["observation_id"] for u in units] + list(baselines)
        rows = (
            Tuple.objects.filter(observation_id__in=wanted)
            .order_by(*_source_order(kind))
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
            baseline=(
                {
                    **baselines[unit["baseline_id"]],
                    "sources": by_observation.get(unit["baseline_id"], []),
                }
                if unit["baseline_id"] is not None
                else None
            ),
        )
    return contents


def _baselines_of(units: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """``{observation id: {pipeline, answer}}`` of the chunk's baselines, one query."""
    ids = {unit["baseline_id"] for unit in units if unit["baseline_id"] is not None}
    rows = Observation.objects.filter(pk__in=ids).values(
        "id",
        *(f"pipeline__{name}" for name in mapping.PIPELINE_FIELDS),
        *(f"answer__{name}" for name in mapping.ANSWER_FIELDS),
    )
    return {
        row["id"]: {
            "pipeline": mapping.pipeline_as_dict(_row(row, "pipeline__", mapping.PIPELINE_FIELDS)),
            "answer": mapping.answer_as_dict(_row(row, "answer__", mapping.ANSWER_FIELDS)),
        }
        for row in rows
    }


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
    kind = content.codebook_unit
    if kind == CodebookUnit.TUPLE:
        record["source"] = content.source
        record["tuple_digest"] = content.digest
    elif kind == CodebookUnit.QUERY_DOCUMENTS:
        record["documents"] = content.documents
        record["unit_digest"] = content.digest
    else:
        record["sources"] = content.sources
        if kind == CodebookUnit.ANSWER_PAIR:
            record["baseline"] = content.baseline
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
