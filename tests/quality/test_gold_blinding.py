"""Gold units are indistinguishable to annotators. One unit X is labelled as a real unit
by annotator B and handed to annotator A as gold (a qualification unit). A's pages and
API answers about X are B's, byte for byte once the ids, the CSRF token and the user's
own name are set aside: the same templates, the same markup, the same JSON fields, and
nothing an annotator can read says "gold". (Timing is not compared: both are served by
the same code path.)"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next
from annotator.quality.services import gold_mark_from_file, quality_plan_set
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study
from tests.quality.conftest import key_file

pytestmark = pytest.mark.django_db


def shape(value: Any) -> Any:
    """The fields of a JSON value, without the values: what a client can tell apart."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return sorted({repr(shape(item)) for item in value})
    return type(value).__name__


def without_csrf(html: str) -> str:
    """The page with its CSRF tokens (random on every load) replaced."""
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "CSRF", html)
    return re.sub(r'csrf-token" content="[^"]+"', "CSRF", html)


def same_page(html: str, *, assignment_id: int, username: str) -> str:
    """The page without what differs between two people on the same unit by design."""
    html = without_csrf(html)
    html = re.sub(
        rf'(assignments/|assignments%2F|assignment:|assignment-id="|"assignment": )'
        rf"{assignment_id}\b",
        r"\1ID",
        html,
    )
    # A fresh client submission id on every page load, for anyone.
    html = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UUID", html)
    return html.replace(username, "USER")


@pytest.fixture
def served(db):
    study = make_study("blind", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    a, b = people["ann_a"], people["ann_b"]
    real = assignment_next(study=study, annotator=b)  # B: unit X, as a real unit
    gold_mark_from_file(study=study, data=key_file([real.unit], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=1, qualification_threshold=0)
    gold = assignment_next(study=study, annotator=a)  # A: the same unit X, as gold
    assert not real.gold
    assert gold.gold
    assert gold.unit_id == real.unit_id
    return study, real, gold


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_form_page_of_a_gold_unit_is_the_page_of_the_same_unit_as_a_real_one(served):
    study, real, gold = served
    pages = {}
    for assignment in (real, gold):
        response = _client(assignment.annotator).get(f"/assignments/{assignment.pk}/")
        assert response.status_code == 200
        pages[assignment.pk] = (
            [template.name for template in response.templates],
            same_page(
                response.content.decode(),
                assignment_id=assignment.pk,
                username=assignment.annotator.username,
            ),
        )

    assert pages[real.pk][0] == pages[gold.pk][0]
    differing = [
        (left, right)
        for left, right in zip(
            pages[real.pk][1].splitlines(), pages[gold.pk][1].splitlines(), strict=True
        )
        if left != right
    ]
    assert differing == []
    assert "gold" not in pages[gold.pk][1].lower()
    start = _client(gold.annotator).get(f"/studies/{study.slug}/annotate/").content.decode()
    # Its CSRF token out first: a random token may hold those letters.
    assert "gold" not in without_csrf(start).lower()


def test_the_api_gives_a_gold_unit_the_same_fields_and_values_as_a_real_one(served):
    study, real, gold = served
    answers = {}
    for assignment in (real, gold):
        api = APIClient()
        api.force_authenticate(assignment.annotator)
        detail = api.get(f"/api/assignments/{assignment.pk}/").json()
        submitted = api.post(
            f"/api/assignments/{assignment.pk}/labels/",
            {
                "annotation": source_risk(unit_content(unit=assignment.unit)),
                "client_submission_id": str(uuid.uuid4()),
            },
            format="json",
        )
        assert submitted.status_code == 201
        listing = api.get(f"/api/studies/{study.slug}/assignments/").json()
        answers[assignment.pk] = (detail, submitted.json(), listing)

    real_detail, real_label, real_list = answers[real.pk]
    gold_detail, gold_label, gold_list = answers[gold.pk]
    for varying in ("id", "assigned_at"):
        real_detail.pop(varying)
        gold_detail.pop(varying)
    assert real_detail == gold_detail  # the same unit, codebook, draft and head
    assert shape(real_label) == shape(gold_label)
    assert real_label["annotation"]["kind"] == gold_label["annotation"]["kind"] == "independent"
    assert shape(real_list) == shape(gold_list)
    for answer in answers[gold.pk]:
        assert "gold" not in repr(answer).lower()
