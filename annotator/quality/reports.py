"""Reads for the researcher's quality page and API: per annotator accuracy on gold and
agreement with the other annotators, overall and over time (by ISO week and by blocks of
50 items), each rate with its 95% Wilson score interval.

Fetched once (gold labels with their keys; the independent heads' compared fields;
memberships), then computed by the pure :mod:`annotator.quality.scoring`.

- **Accuracy on gold**: each gold unit an annotator labelled counts once, by its FIRST
  submitted revision (a revision made after seeing nothing new cannot raise the score);
  right when every keyed field matches the key.
- **Agreement with the others**: on the study's real units, each annotator's latest
  independent revision is compared with every other annotator's latest one on the same
  unit; a pair agrees when every compared field is equal. Timed by the annotator's own
  revision. Gold labels are never compared: they are not independent labels.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import CharField, F, Value, Window
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, Concat, RowNumber, TruncWeek

from annotator.labelling.models import Label, LabelKind
from annotator.memberships.models import Membership, Role
from annotator.quality.models import GoldItem
from annotator.quality.scoring import (
    BLOCK,
    Outcome,
    Point,
    Proportion,
    Qualification,
    Tally,
    U,
    by_block,
    by_week,
    fields_for,
    matches,
    series_of,
    values_of,
)
from audit.archive.models import Study


@dataclass(frozen=True)
class AnnotatorQuality:
    user_id: int
    username: str
    pseudonym: str
    paused_at: datetime | None
    gold: Proportion
    gold_by_week: list[Point]
    gold_by_block: list[Point]
    agreement: Proportion
    agreement_by_week: list[Point]
    agreement_by_block: list[Point]
    qualification: Qualification | None


@dataclass(frozen=True)
class GoldSummary:
    units: int
    qualification_units: int
    labels: int


def _gold_outcomes(study: Study) -> tuple[dict[int, list[Outcome]], dict[int, list[Outcome]]]:
    """Per annotator: every scored gold label, and those on qualification units."""
    unit_kind = study.codebook.unit
    rows = (
        Label.objects.filter(study=study, kind=LabelKind.GOLD, revision=1)
        .order_by("created_at", "id")
        .values_list("annotator_id", "unit_id", "created_at", "annotation", "unit__gold__key")
    )
    qualification_units = set(
        GoldItem.objects.filter(study=study, qualification=True).values_list("unit_id", flat=True)
    )
    everything: dict[int, list[Outcome]] = defaultdict(list)
    qualifying: dict[int, list[Outcome]] = defaultdict(list)
    for annotator, unit_id, at, annotation, key in rows:
        outcome = Outcome(at=at, right=matches(key, values_of(annotation, unit_kind)))
        everything[annotator].append(outcome)
        if unit_id in qualification_units:
            qualifying[annotator].append(outcome)
    return everything, qualifying


def _compared(study: Study) -> Concat:
    """The compared fields of a label as one text, field by field ("1|1|U|0|…"): two
    labels agree when their texts are equal. Read by the database (``->>`` on
    PostgreSQL, ``json_extract`` on SQLite): no annotation is parsed in Python."""
    if study.codebook.unit == "tuple":
        paths = [f"annotation__predicates__{key}" for key in "IAMD"]
        paths += ["annotation__passage_support", "annotation__source_role"]
    else:
        paths = [f"annotation__verdicts__{key}__value" for key in fields_for("answer")]
    parts: list[Any] = []
    for path in paths:
        if parts:
            parts.append(Value("|"))
        parts.append(Coalesce(Cast(KT(path), CharField()), Value(U)))
    return Concat(*parts, output_field=CharField())


def _agreement_tallies(study: Study) -> dict[int, list[Tally]]:
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


def quality_of_annotators(
    *, study: Study, qualification: tuple[int, float] = (0, 0.8)
) -> list[AnnotatorQuality]:
    """Every annotator of the study (paused ones included), by pseudonym. Queries: the
    memberships, the gold labels, the qualification units, the
    independent heads. ``qualification``: the plan's (n, threshold)."""
    memberships = list(
        Membership.objects.filter(study=study, role=Role.ANNOTATOR)
        .select_related("user")
        .order_by("pseudonym")
    )
    gold, qualifying = _gold_outcomes(study)
    agreement = _agreement_tallies(study)
    required, threshold = qualification
    out = []
    for membership in memberships:
        user_id = membership.user_id
        mine = gold.get(user_id, [])
        agreed, agreed_by_week, agreed_by_block = series_of(agreement.get(user_id, []))
        passed = qualifying.get(user_id, [])[:required]
        out.append(
            AnnotatorQuality(
                user_id=user_id,
                username=membership.user.get_username(),
                pseudonym=membership.pseudonym,
                paused_at=membership.paused_at,
                gold=Proportion(sum(o.right for o in mine), len(mine)),
                gold_by_week=by_week(mine),
                gold_by_block=by_block(mine),
                agreement=agreed,
                agreement_by_week=agreed_by_week,
                agreement_by_block=agreed_by_block,
                qualification=Qualification(
                    required=required,
                    threshold=threshold,
                    assigned=len(passed),
                    right=sum(o.right for o in passed),
                    scored=len(passed),
                )
                if required
                else None,
            )
        )
    return out


def gold_summary(*, study: Study) -> GoldSummary:
    items = GoldItem.objects.filter(study=study)
    return GoldSummary(
        units=items.count(),
        qualification_units=items.filter(qualification=True).count(),
        labels=Label.objects.filter(study=study, kind=LabelKind.GOLD).count(),
    )


def gold_items_of(*, study: Study, limit: int = 200) -> list[dict[str, Any]]:
    """The study's gold units with their keys, first ``limit`` of them (one query)."""
    return list(
        GoldItem.objects.filter(study=study)
        .order_by("id")
        .values("unit__digest", "key", "source", "qualification", "marked_at")[:limit]
    )
