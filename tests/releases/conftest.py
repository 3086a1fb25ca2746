"""A labelled study for release tests: agreement with consensus, a dispute resolved by an
adjudicator, a revised label, an assisted label, a half-labelled unit and a unit in the
test partition. Jobs are called directly (no eager Celery)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from annotator.adjudication.jobs import label_adjudicated, label_submitted
from annotator.adjudication.services import adjudication_submit
from annotator.labelling.models import Label
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.archive.models import Study, Unit
from audit.ledger.services import gate_recompute
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people, make_study

RATIONALE = "The review page states the commission; materiality holds."


@dataclass
class Labelled:
    study: Study
    people: dict[str, Any]
    labels: list[Label]
    test_unit: Unit


def submit(study, user, values=(1, 1, 1, 0), *, parent=None, assignment=None, assisted=None):
    assignment = assignment or assignment_next(study=study, annotator=user)
    content = unit_content(unit=assignment.unit)
    annotation = source_risk(content, values=values, rationale="=SUM(A1:A9) looks odd")
    if assisted:
        annotation["assisted"] = {"model": assisted}
    label = label_submit(
        assignment=assignment,
        annotation=annotation,
        client_submission_id=uuid.uuid4(),
        parent_digest=parent,
    ).label
    label_submitted.run(label.pk)
    return label


def labelled_study(slug: str = "rel") -> Labelled:
    study = make_study(slug, "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    a, b, adj = people["ann_a"], people["ann_b"], people["adj"]
    labels = []
    # Unit 1: agreement, consensus.
    labels += [submit(study, a), submit(study, b)]
    # Unit 2: dispute, adjudicated.
    first = submit(study, a)
    second = submit(study, b, (1, 1, None, 0))
    labels += [first, second]
    final = adjudication_submit(
        unit=first.unit,
        adjudicator=adj,
        annotation=first.annotation,
        rationale=RATIONALE,
        client_submission_id=uuid.uuid4(),
    )
    label_adjudicated.run(final.pk)
    # Unit 3: a revises, b is assisted by a model.
    one = submit(study, a, (0, 1, 1, 0))
    two = submit(study, a, (1, 1, 1, 0), parent=one.record_digest, assignment=one.assignment)
    three = submit(study, b, assisted="judge-x 2026-01")
    labels += [one, two, three]
    # Unit 4: only a; it goes to the test partition.
    four = submit(study, a)
    labels.append(four)
    Unit.objects.filter(pk=four.unit_id).update(partition="test")
    gate_recompute(study=study)
    return Labelled(study, people, labels, Unit.objects.get(pk=four.unit_id))


@pytest.fixture
def releases_root(settings, tmp_path):
    settings.RELEASES_ROOT = tmp_path / "releases"
    return settings.RELEASES_ROOT


@pytest.fixture
def labelled(db, releases_root) -> Labelled:
    return labelled_study()


@pytest.fixture
def claims_labelled(db, releases_root):
    study = make_study("relclaims", "answer-claims-1.0.0", "answer-claims.jsonl", overlap=2)
    people = add_people(study)
    for user in (people["ann_a"], people["ann_b"]):
        assignment = assignment_next(study=study, annotator=user)
        label = label_submit(
            assignment=assignment,
            annotation=answer_claims(unit_content(unit=assignment.unit)),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(label.pk)
    return study
