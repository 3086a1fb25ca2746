"""Reads for annotation, each in a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Min, Q

from annotator.labelling.models import (
    Assignment,
    Draft,
    Label,
    LabelKind,
    OutcomeWaiting,
    QueueOrder,
)
from audit.archive.models import Study
from audit.archive.records import UnitContent, record_build, unit_content
from audit.contract.sides import sides_of

__all__ = [
    "QueueGlance",
    "UnitContent",
    "annotator_progress",
    "assignments_of",
    "draft_of",
    "label_head",
    "label_kind_of",
    "label_record",
    "labels_of_assignment",
    "outcomes_backlog",
    "pair_sides_of",
    "unit_content",
]


@dataclass(frozen=True)
class QueueGlance:
    """What the queue's next step needs to know of an annotator in a study, read with
    their seat by the API's access check (one statement instead of four): their first
    unfinished assignment's id (not on a unit whose labels they have seen), whether the
    study has gold units, and their queue order (``None`` before their first unit)."""

    unfinished_id: int | None
    has_gold: bool
    order: QueueOrder | None


def label_kind_of(assignment: Assignment) -> str:
    """The kind of the labels made on an assignment: GOLD on a gold unit handed out for
    scoring, INDEPENDENT otherwise. (Their records both say "independent".)"""
    return LabelKind.GOLD if assignment.gold else LabelKind.INDEPENDENT


def pair_sides_of(assignment: Assignment) -> dict[str, str] | None:
    """The side mapping of an assignment on an answer pair (audit.contract.sides): which
    answer its annotator sees on the left and on the right. ``None`` on other units."""
    if assignment.pair_left_is_evaluated is None:
        return None
    return sides_of(left_is_evaluated=assignment.pair_left_is_evaluated)


def label_head(*, assignment: Assignment) -> Label | None:
    """The annotator's latest submitted revision on this assignment's unit."""
    return (
        Label.objects.filter(
            unit_id=assignment.unit_id,
            annotator_id=assignment.annotator_id,
            kind=label_kind_of(assignment),
        )
        .order_by("-revision")
        .first()
    )


def label_record(*, label: Label) -> dict[str, Any]:
    """The full record of a stored label, rebuilt as the checker sees it."""
    study = Study.objects.select_related("codebook").get(pk=label.study_id)
    return record_build(
        study=study,
        content=unit_content(unit=label.unit),
        annotation=label.annotation,
        parents=label.parents,
    )


def labels_of_assignment(*, assignment: Assignment) -> list[Label]:
    return list(
        Label.objects.filter(
            unit_id=assignment.unit_id,
            annotator_id=assignment.annotator_id,
            kind=label_kind_of(assignment),
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


def assignments_of(
    *, study: Study, annotator: Any, offset: int = 0, limit: int | None = None
) -> list[Assignment]:
    """The annotator's own assignments, newest first: ``limit`` of them from ``offset``
    (all when ``limit`` is None). One query."""
    rows = (
        Assignment.objects.filter(study=study, annotator=annotator)
        .select_related("unit__observation__query")
        .order_by("-id")
    )
    if limit is not None:
        rows = rows[offset : offset + limit]
    return list(rows)


@dataclass(frozen=True)
class OutcomesBacklog:
    waiting: int  # labels whose outcome is not in the ledger yet
    oldest: datetime | None  # when the longest-waiting one was submitted


def outcomes_backlog() -> OutcomesBacklog:
    """Labels waiting for their outcome, every study: one aggregate over a table that the
    outcomes job keeps empty (the oldest row's age is the outcome lag)."""
    row = OutcomeWaiting.objects.aggregate(waiting=Count("pk"), oldest=Min("created_at"))
    return OutcomesBacklog(waiting=row["waiting"], oldest=row["oldest"])
