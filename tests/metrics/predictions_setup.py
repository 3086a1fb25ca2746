"""A frozen source-risk study whose first units have final (consensus) labels, and prediction
files for it. Jobs are called directly (no eager Celery)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import label_submit
from audit.archive.models import Study, Unit
from audit.partitions.services import study_freeze
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study
from tests.browser.helpers import assign

#: Predicate values whose complete-case endpoint R_O is 1, 0 and U, in turn.
PATTERN = ((1, 1, 1, 0), (0, 1, 1, 0), (1, 1, None, 0))
GOLD_R_O = (1, 0, None)


@dataclass
class GoldStudy:
    study: Study
    people: dict[str, Any]
    labelled: list[Unit]  # units with a final label, gold R_O = GOLD_R_O[i % 3]
    unlabelled: list[Unit]


def gold_study(slug: str = "pred", *, units: int = 9, freeze: bool = True) -> GoldStudy:
    study = make_study(slug, "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    ordered = list(Unit.objects.filter(study=study).select_related("tuple").order_by("id"))
    for i, unit in enumerate(ordered[:units]):
        for user in (people["ann_a"], people["ann_b"]):
            label = label_submit(
                assignment=assign(unit, user),
                annotation=source_risk(unit_content(unit=unit), values=PATTERN[i % 3]),
                client_submission_id=uuid.uuid4(),
                parent_digest=None,
            ).label
            label_submitted.run(label.pk)
    if freeze:
        Unit.objects.filter(study=study).update(partition="calibration")
        study_freeze(study=study, user=people["res"])
    return GoldStudy(study, people, ordered[:units], ordered[units:])


def prediction_file(
    units_values: list[tuple[str, Any]],
    *,
    field: str = "R_O",
    kind: str = "judge",
    positive: Any = 0,
    codebook: tuple[str, str] = ("source-risk", "1.0.0"),
    header: dict[str, Any] | None = None,
) -> bytes:
    head = header or {
        "claimgate": "predictions",
        "format_version": 1,
        "codebook": {"name": codebook[0], "version": codebook[1]},
        "field": field,
        "predictor": {"kind": kind, "name": "judge-x", "version": "2026-05"},
        "positive": positive,
    }
    lines = [json.dumps(head)]
    lines += [json.dumps({"unit": digest, "value": value}) for digest, value in units_values]
    return ("\n".join(lines) + "\n").encode()
