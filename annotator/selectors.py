"""Reads for annotation, each in a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from annotator.models import Assignment, Draft, Label, LabelKind
from audit import archive
from audit.models import Study, Tuple, Unit


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
        query=archive.query_as_dict(observation.query),
        pipeline=archive.pipeline_as_dict(observation.pipeline),
        answer=archive.answer_as_dict(observation.answer),
        sources=[archive.source_as_dict(row.source) for row in tuples],
        sampling=_sampling(unit.tuple) if unit.tuple is not None else None,
    )


def label_head(*, assignment: Assignment) -> Label | None:
    """The annotator's latest submitted revision on this assignment's unit."""
    return (
        Label.objects.filter(
            unit_id=assignment.unit_id,
            annotator_id=assignment.annotator_id,
            kind=LabelKind.INDEPENDENT,
        )
        .order_by("-revision")
        .first()
    )


def labels_of_assignment(*, assignment: Assignment) -> list[Label]:
    return list(
        Label.objects.filter(
            unit_id=assignment.unit_id,
            annotator_id=assignment.annotator_id,
            kind=LabelKind.INDEPENDENT,
        ).order_by("revision")
    )


def draft_of(*, assignment: Assignment) -> Draft | None:
    return Draft.objects.filter(assignment=assignment).first()


@dataclass(frozen=True)
class Progress:
    done: int
    assigned: int
    open_assignment_id: int | None


def annotator_progress(*, study: Study, annotator: Any) -> Progress:
    """Done / assigned for one annotator: their own numbers only, nobody else's."""
    counts = Assignment.objects.filter(study=study, annotator=annotator).aggregate(
        assigned=Count("id"), done=Count("id", filter=Q(submitted_at__isnull=False))
    )
    open_assignment = (
        Assignment.objects.filter(study=study, annotator=annotator, submitted_at__isnull=True)
        .order_by("id")
        .values_list("id", flat=True)
        .first()
    )
    return Progress(
        done=counts["done"], assigned=counts["assigned"], open_assignment_id=open_assignment
    )


def assignments_of(*, study: Study, annotator: Any) -> list[Assignment]:
    return list(
        Assignment.objects.filter(study=study, annotator=annotator)
        .select_related("unit__observation__query")
        .order_by("-id")
    )
