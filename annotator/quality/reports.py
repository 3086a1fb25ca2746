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
from datetime import date, datetime
from typing import Any

from django.db.models import Count, Q

from annotator.labelling.models import Label, LabelKind
from annotator.memberships.models import Membership, Role
from annotator.quality.models import GoldItem, QualitySummary
from annotator.quality.scoring import (
    Outcome,
    Point,
    Proportion,
    Qualification,
    Tally,
    by_block,
    by_week,
    matches,
    series_of,
    values_of,
)
from annotator.quality.selectors import agreement_counted_inline, agreement_mark, agreement_tallies
from audit.archive.models import Study
from audit.contract.engine import engine_of


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
    engine = engine_of(study.codebook.definition)
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
        outcome = Outcome(at=at, right=matches(key, values_of(annotation, engine)))
        everything[annotator].append(outcome)
        if unit_id in qualification_units:
            qualifying[annotator].append(outcome)
    return everything, qualifying


def _tallies_from(data: dict[str, Any]) -> dict[int, list[Tally]]:
    tallies: dict[int, list[Tally]] = defaultdict(list)
    for annotator, week, block, right, n, last in data["tallies"]:
        tallies[annotator].append(
            Tally(week=date.fromisoformat(week), block=block, right=right, n=n, last_item=last)
        )
    return tallies


@dataclass(frozen=True)
class QualityShown:
    """What the quality page and API show. ``counted_at``: when a worker counted the
    agreement of a large study (None when counted in this request); ``stale``: newer
    labels are being counted; ``counting``: never counted yet (agreement shown empty)."""

    people: list[AnnotatorQuality]
    counted_at: datetime | None = None
    stale: bool = False
    counting: bool = False


def quality_shown(*, study: Study, qualification: tuple[int, float] = (0, 0.8)) -> QualityShown:
    """Every annotator's quality as the page shows it: agreement counted now for a study
    of up to ``QUALITY_INLINE_LABELS`` independent labels; for a larger one, the counts
    a worker stored, with when, and whether they are behind (the caller queues a recount
    when they are, or when there are none yet). A fixed number of queries either way."""
    if agreement_counted_inline(study=study):
        return QualityShown(_people(study, qualification, agreement_tallies(study)))
    summary = QualitySummary.objects.filter(study=study).first()
    if summary is None:
        return QualityShown(_people(study, qualification, {}), counting=True)
    stale = summary.mark != agreement_mark(study=study)
    return QualityShown(
        _people(study, qualification, _tallies_from(summary.data)),
        counted_at=summary.computed_at,
        stale=stale,
    )


def quality_of_annotators(
    *, study: Study, qualification: tuple[int, float] = (0, 0.8)
) -> list[AnnotatorQuality]:
    """Every annotator of the study (paused ones included), by pseudonym, everything
    counted now. Queries: the memberships, the gold labels, the qualification units, the
    independent heads. ``qualification``: the plan's (n, threshold)."""
    return _people(study, qualification, agreement_tallies(study))


def _people(
    study: Study, qualification: tuple[int, float], agreement: dict[int, list[Tally]]
) -> list[AnnotatorQuality]:
    memberships = list(
        Membership.objects.filter(study=study, role=Role.ANNOTATOR)
        .select_related("user")
        .order_by("pseudonym")
    )
    gold, qualifying = _gold_outcomes(study)
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
    """Two queries: the gold units (both counts in one), the gold labels."""
    items = GoldItem.objects.filter(study=study).aggregate(
        units=Count("id"), qualification_units=Count("id", filter=Q(qualification=True))
    )
    return GoldSummary(
        units=items["units"],
        qualification_units=items["qualification_units"],
        labels=Label.objects.filter(study=study, kind=LabelKind.GOLD).count(),
    )


def gold_items_of(*, study: Study, limit: int = 200) -> list[dict[str, Any]]:
    """The study's gold units with their keys, first ``limit`` of them (one query)."""
    return list(
        GoldItem.objects.filter(study=study)
        .order_by("id")
        .values("unit__digest", "key", "source", "qualification", "marked_at")[:limit]
    )
