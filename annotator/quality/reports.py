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

from django.db.models.fields.json import KeyTransform

from annotator.labelling.models import Label, LabelKind
from annotator.memberships.models import Membership, Role
from annotator.quality.models import GoldItem
from annotator.quality.scoring import (
    Outcome,
    Point,
    Proportion,
    Qualification,
    by_block,
    by_week,
    category,
    fields_for,
    matches,
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


def _agreement_outcomes(study: Study) -> dict[int, list[Outcome]]:
    fields = fields_for(study.codebook.unit)
    if study.codebook.unit == "tuple":
        columns = {
            **{
                f"q_{key}": KeyTransform(key, KeyTransform("predicates", "annotation"))
                for key in "IAMD"
            },
            "q_passage_support": KeyTransform("passage_support", "annotation"),
            "q_source_role": KeyTransform("source_role", "annotation"),
        }
    else:
        columns = {
            f"q_{key}": KeyTransform(
                "value", KeyTransform(key, KeyTransform("verdicts", "annotation"))
            )
            for key in fields
        }
    rows = (
        Label.objects.filter(study=study, kind=LabelKind.INDEPENDENT)
        .annotate(**columns)
        .order_by()
        .values_list("unit_id", "annotator_id", "revision", "created_at", *columns)
    )
    heads: dict[tuple[int, int], tuple[int, datetime, tuple[str, ...]]] = {}
    for unit_id, annotator, revision, at, *values in rows.iterator(chunk_size=10_000):
        head = heads.get((unit_id, annotator))
        if head is None or revision > head[0]:
            heads[(unit_id, annotator)] = (revision, at, tuple(map(category, values)))
    by_unit: dict[int, list[tuple[int, datetime, tuple[str, ...]]]] = defaultdict(list)
    for (unit_id, annotator), (_, at, values) in heads.items():
        by_unit[unit_id].append((annotator, at, values))
    outcomes: dict[int, list[Outcome]] = defaultdict(list)
    for labelled in by_unit.values():
        if len(labelled) < 2:
            continue
        for annotator, at, values in labelled:
            for other, _, other_values in labelled:
                if other != annotator:
                    outcomes[annotator].append(Outcome(at=at, right=values == other_values))
    return outcomes


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
    agreement = _agreement_outcomes(study)
    required, threshold = qualification
    out = []
    for membership in memberships:
        user_id = membership.user_id
        mine = gold.get(user_id, [])
        pairs = agreement.get(user_id, [])
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
                agreement=Proportion(sum(o.right for o in pairs), len(pairs)),
                agreement_by_week=by_week(pairs),
                agreement_by_block=by_block(pairs),
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
