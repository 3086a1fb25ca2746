"""Reads the queue needs for quality control, each in one query: the study's plan, where
an annotator stands with the qualification set, and the next gold unit for them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q

from annotator.labelling.models import Assignment, Label, LabelKind, LabelSight
from annotator.memberships.models import Membership, Role
from annotator.quality.models import GoldItem, QualityPlan
from annotator.quality.scoring import Qualification, matches, values_of
from audit.archive.models import Study, Unit


@dataclass(frozen=True)
class Plan:
    gold_rate: float
    qualification_size: int
    qualification_threshold: float


NO_PLAN = Plan(gold_rate=0.0, qualification_size=0, qualification_threshold=0.8)


def plan_of(*, study: Study) -> Plan:
    plan = QualityPlan.objects.filter(study=study).first()
    if plan is None:
        return NO_PLAN
    return Plan(
        gold_rate=plan.gold_rate,
        qualification_size=plan.qualification_size,
        qualification_threshold=plan.qualification_threshold,
    )


def annotator_paused(*, study: Study, annotator: Any) -> bool:
    return Membership.objects.filter(
        study=study, user=annotator, role=Role.ANNOTATOR, paused_at__isnull=False
    ).exists()


@dataclass(frozen=True)
class Served:
    """How many items an annotator has been handed in a study, how many were gold and
    how many of those were qualification units."""

    total: int
    gold: int
    qualification: int


def served_of(*, study: Study, annotator: Any) -> Served:
    counts = Assignment.objects.filter(study=study, annotator=annotator).aggregate(
        n_total=Count("id"),
        n_gold=Count("id", filter=Q(gold=True)),
        n_qualification=Count("id", filter=Q(gold=True, unit__gold__qualification=True)),
    )
    return Served(
        total=counts["n_total"], gold=counts["n_gold"], qualification=counts["n_qualification"]
    )


def qualification_of(*, study: Study, annotator: Any, plan: Plan, served: Served) -> Qualification:
    """Scored on each qualification unit's FIRST submitted revision: a later revision
    cannot turn a failed qualification into a pass."""
    right = scored = 0
    if plan.qualification_size:
        rows = Label.objects.filter(
            study=study,
            annotator=annotator,
            kind=LabelKind.GOLD,
            revision=1,
            unit__gold__qualification=True,
        ).values_list("annotation", "unit__gold__key")
        unit_kind = study.codebook.unit
        for annotation, key in rows:
            scored += 1
            right += matches(key, values_of(annotation, unit_kind))
    return Qualification(
        required=plan.qualification_size,
        threshold=plan.qualification_threshold,
        assigned=served.qualification,
        right=right,
        scored=scored,
    )


def gold_unit_next(*, study: Study, annotator: Any, qualification: bool) -> Unit | None:
    """The first gold unit (of the qualification set, or not) this annotator has never
    held and whose labels they were never shown."""
    item = (
        GoldItem.objects.filter(study=study, qualification=qualification)
        .exclude(Exists(Assignment.objects.filter(annotator=annotator, unit=OuterRef("unit_id"))))
        .exclude(Exists(LabelSight.objects.filter(user=annotator, unit=OuterRef("unit_id"))))
        .order_by("id")
        .select_related("unit")
        .first()
    )
    return item.unit if item is not None else None


def study_has_gold(*, study: Study) -> bool:
    return GoldItem.objects.filter(study=study).exists()


def gold_held(*, study: Study, annotator: Any) -> Exists:
    """``~gold_held(...)`` keeps the units this annotator does not hold as gold: the
    regular queue must not hand them a unit they were given as gold."""
    return Exists(
        Assignment.objects.filter(
            study=study, annotator=annotator, gold=True, unit_id=OuterRef("pk")
        )
    )
