"""The labelling loop in a fixed, small number of queries: next and submit through the API
(what bench/labelling.py drives under load), however many units, labels and studies
there are, with no codebook or membership read twice in a request."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.labelling.models import Assignment, OutcomeWaiting
from annotator.labelling.selectors import unit_content
from tests.annotation.annotations import source_risk

pytestmark = pytest.mark.django_db

#: Statements of one request (the test's transaction makes each atomic block a SAVEPOINT
#: and its RELEASE, which a real request's BEGIN and COMMIT replace).
NEXT_NEW = 15  # study, roles with the pause, unfinished, gold?, the annotator's order,
#                the started-unit walk and the fresh-position walk (each with the kept
#                draft?), cursor, insert (numbered by the INSERT), count +1, the unit's
#                content; 4 savepoint statements
#                (the first next of an annotator also draws their order: not counted here)
NEXT_OPEN = 6  # study, roles with the pause, unfinished, content, draft, head
SUBMIT = 12  # assignment, roles with the pseudonym, lock + seen, replay + head, content,
#              insert, assignment, unit, draft, waiting outcome; 2 savepoint statements
#              (the label's INSERT has none of its own: losing it rolls the whole back)


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def next_url(study) -> str:
    return reverse("api-assignment-next", args=[study.slug])


def submit_body(assignment_id: int) -> dict:
    assignment = Assignment.objects.get(pk=assignment_id)
    return {
        "annotation": source_risk(unit_content(unit=assignment.unit)),
        "client_submission_id": str(uuid.uuid4()),
    }


def test_next_and_submit_take_a_fixed_number_of_queries(
    risk_study, people, django_assert_num_queries
):
    client = api_as(people["ann_a"])
    first = client.post(next_url(risk_study))  # draws this annotator's order, once
    body = submit_body(first.json()["id"])
    url = reverse("api-assignment-labels", args=[first.json()["id"]])
    assert client.post(url, body, format="json").status_code == 201
    for _ in range(3):  # the same on every later unit
        with django_assert_num_queries(NEXT_NEW):
            given = client.post(next_url(risk_study))
        assert given.status_code == 201
        with django_assert_num_queries(NEXT_OPEN):
            again = client.post(next_url(risk_study))
        assert again.status_code == 200
        assert again.json()["id"] == given.json()["id"]
        url = reverse("api-assignment-labels", args=[given.json()["id"]])
        body = submit_body(given.json()["id"])
        with django_assert_num_queries(SUBMIT):
            submitted = client.post(url, body, format="json")
        assert submitted.status_code == 201, submitted.json()
    assert OutcomeWaiting.objects.count() == 4  # each waits for the outcomes job


def test_no_codebook_or_membership_is_read_twice_in_a_request(risk_study, people):
    client = api_as(people["ann_b"])
    with CaptureQueriesContext(connection) as next_queries:
        given = client.post(next_url(risk_study))
    url = reverse("api-assignment-labels", args=[given.json()["id"]])
    body = submit_body(given.json()["id"])
    with CaptureQueriesContext(connection) as submit_queries:
        assert client.post(url, body, format="json").status_code == 201

    for captured in (next_queries, submit_queries):
        reads = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SELECT")]
        assert not [sql for sql in reads if 'FROM "audit_codebook"' in sql]  # joined once
        memberships = [sql for sql in reads if 'FROM "annotator_membership"' in sql]
        assert len(memberships) <= 2  # the access check; on submit, the pseudonym
        assert not [sql for sql in reads if 'FROM "auth_user"' in sql]


def test_a_replayed_submission_answers_the_same_label_without_a_second_one(risk_study, people):
    client = api_as(people["ann_c"])
    given = client.post(next_url(risk_study)).json()
    url = reverse("api-assignment-labels", args=[given["id"]])
    body = submit_body(given["id"])

    first = client.post(url, body, format="json")
    again = client.post(url, body, format="json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["record_digest"] == first.json()["record_digest"]
    assert OutcomeWaiting.objects.count() == 1
