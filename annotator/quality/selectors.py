"""Reads the queue needs for quality control, each in one query: the study's plan, where
an annotator stands with the qualification set, and the next gold unit for them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import CharField, Count, Exists, F, OuterRef, Q, Value, Window
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, Concat, RowNumber, TruncWeek

from annotator.labelling.models import Assignment, Label, LabelKind, LabelSight
from annotator.memberships.models import Membership, Role
from annotator.quality.models import GoldItem, QualityPlan
from annotator.quality.scoring import BLOCK, Qualification, Tally, U, matches, values_of
from audit.archive.models import Study, Unit
from audit.contract.engine import engine_of


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
        engine = engine_of(study.codebook.definition)
        for annotation, key in rows:
            scored += 1
            right += matches(key, values_of(annotation, engine))
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


# --- agreement with the others (the quality page; counted by a worker when large) ------


def _compared(study: Study) -> Concat:
    """The compared fields of a label (its unit-level values, audit.contract.engine) as
    one text, field by field ("1|1|U|0|…"): two labels agree when their texts are equal.
    Read by the database (``->>`` on PostgreSQL, ``json_extract`` on SQLite): no
    annotation is parsed in Python."""
    engine = engine_of(study.codebook.definition)
    paths = ["__".join(("annotation", *engine.paths[f.code])) for f in engine.value_fields]
    parts: list[Any] = []
    for path in paths:
        if parts:
            parts.append(Value("|"))
        parts.append(Coalesce(Cast(KT(path), CharField()), Value(U)))
    if len(parts) < 2:  # Concat takes two or more; a codebook without unit-level values
        parts.extend([Value(""), Value("")])
    return Concat(*parts, output_field=CharField())


def agreement_tallies(study: Study) -> dict[int, list[Tally]]:
    """Each annotator's latest independent revision per unit (one window, as the
    outcomes read heads); per head, how many other heads its unit has and how many of
    those equal it (two windows over the heads), its ISO week and its number among the
    annotator's heads in submission order (a third window); then summed by annotator,
    week and block of 50 items. All in one statement: the database returns a few rows per
    annotator, however many labels there are."""
    ranked = (
        Label.objects.filter(study=study, kind=LabelKind.INDEPENDENT)
        .annotate(
            compared=_compared(study),
            week=TruncWeek("created_at"),
            rank=Window(
                RowNumber(),
                partition_by=[F("unit_id"), F("annotator_id")],
                order_by=[F("revision").desc(), F("id").desc()],
            ),
        )
        .order_by()
        .values("id", "unit_id", "annotator_id", "created_at", "week", "compared", "rank")
    )
    inner, params = ranked.query.sql_with_params()
    # One scan of the labels: the heads are the rank-1 rows, and the windows over them
    # run on what that scan read (an IN (…) of head ids joined back to the table cost a
    # probe per head). Only the compiled SELECT is interpolated; values are parameters.
    sql = (
        "SELECT annotator_id, week, (item - 1) / %s AS block, "  # noqa: S608
        "SUM(equal - 1), SUM(on_unit - 1), MAX(item - 1) FROM ("
        "SELECT annotator_id, week, "
        "COUNT(*) OVER (PARTITION BY unit_id) AS on_unit, "
        "COUNT(*) OVER (PARTITION BY unit_id, compared) AS equal, "
        "ROW_NUMBER() OVER (PARTITION BY annotator_id ORDER BY created_at, id) AS item "
        f"FROM ({inner}) ranked WHERE ranked.rank = 1"
        ") heads WHERE on_unit > 1 "
        "GROUP BY annotator_id, week, (item - 1) / %s"
    )
    tallies: dict[int, list[Tally]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(sql, [BLOCK, *params, BLOCK])
        for annotator, week, block, right, n, last in cursor.fetchall():
            if isinstance(week, str):  # SQLite returns the truncated instant as text
                week = datetime.fromisoformat(week)
            tallies[annotator].append(
                Tally(week=week, block=int(block), right=int(right), n=int(n), last_item=int(last))
            )
    return tallies


def agreement_mark(*, study: Study) -> str:
    """What the agreement counts depend on: the study's last independent label (labels
    are append-only, a revision is a new label), one probe of the (study, kind, id) index.
    A summary stores the mark read before counting, so a label that arrives meanwhile can
    only make it look behind, never current."""
    last = (
        Label.objects.filter(study=study, kind=LabelKind.INDEPENDENT)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    return str(last or 0)


def agreement_counted_inline(*, study: Study) -> bool:
    """Whether the study is small enough to count agreement in a request (at most
    ``QUALITY_INLINE_LABELS`` independent labels; one limited query)."""
    limit = getattr(settings, "QUALITY_INLINE_LABELS", 20_000)
    return not (
        Label.objects.filter(study=study, kind=LabelKind.INDEPENDENT)
        .values("id")[limit : limit + 1]
        .exists()
    )


def agreement_data(study: Study) -> dict[str, Any]:
    """What a worker stores (``QualitySummary.data``): every annotator's tallies as
    ``[annotator_id, week (ISO date), block, right, n, last_item]``."""

    def day(week: date) -> str:  # TruncWeek gives the week's first instant
        return (week.date() if isinstance(week, datetime) else week).isoformat()

    return {
        "tallies": [
            [annotator, day(t.week), t.block, t.right, t.n, t.last_item]
            for annotator, tallies in sorted(agreement_tallies(study).items())
            for t in tallies
        ]
    }
