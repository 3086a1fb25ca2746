from __future__ import annotations

import json
import uuid

import pytest

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.archive.models import Unit
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study

RIGHT = (1, 1, 1, 0)
WRONG = (0, 1, 1, 0)


def key_file(units, *, qualification: bool, key=None) -> bytes:
    key = key or {"I": 1, "A": 1, "M": 1, "D": 0}
    lines = [
        json.dumps({"unit": unit.digest, "key": key, "qualification": qualification})
        for unit in units
    ]
    return ("\n".join(lines) + "\n").encode()


def answer(study, user, values=RIGHT, *, assignment=None):
    """The scripted annotator: take the next item, answer it with ``values``, submit,
    and run the submission's job as the worker would."""
    assignment = assignment or assignment_next(study=study, annotator=user)
    assert assignment is not None
    content = unit_content(unit=assignment.unit)
    label = label_submit(
        assignment=assignment,
        annotation=source_risk(content, values=values, rationale="checked"),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    label_submitted.run(label.pk)
    return assignment, label


@pytest.fixture
def study(db):
    return make_study("qc", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)


@pytest.fixture
def people(study):
    return add_people(study)


@pytest.fixture
def units(study):
    return list(Unit.objects.filter(study=study).order_by("id"))
