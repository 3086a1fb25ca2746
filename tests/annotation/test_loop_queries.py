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
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from annotator.labelling import api
from annotator.labelling.models import Assignment, Draft, Label, OutcomeWaiting
from annotator.labelling.selectors import draft_of, label_head, pair_sides_of, unit_content
from annotator.labelling.services import handed_unit_content
from audit.archive.models import Study, Unit
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people
from tests.annotation.pairs import pairs_study

pytestmark = pytest.mark.django_db

#: Statements of one request (the test's transaction makes each atomic block a SAVEPOINT
#: and its RELEASE, which a real request's BEGIN and COMMIT replace).
#: On PostgreSQL, a new slot's writes (the assignment, the unit's count, the order's
#: cursor) are one statement of CTEs, and submit's (label, assignment, unit, draft,
#: waiting outcome) one too; on SQLite three and five ORM statements.
ON_POSTGRESQL = connection.vendor == "postgresql"
#: On PostgreSQL the slot's statement needs no savepoint of its own (a number taken by a
#: concurrent request writes nothing: ON CONFLICT DO NOTHING, then counted again).
NEXT_WRITES = 1 if ON_POSTGRESQL else 3 + 2
NEXT_NEW = 6 + NEXT_WRITES  # the study with the caller's annotator seat (pause,
#                pseudonym) and, as subqueries, their unfinished assignment, gold? and
#                their order; the started-unit
#                walk and the fresh-position walk (each with the kept draft?), the writes,
#                the unit's content; 2 savepoint statements (and on SQLite 2 more
#                around the slot's writes)
#                (the first next of an annotator also draws their order: not counted here)
NEXT_OPEN = 5  # the study with the seat (which says there is one), unfinished (read
#               as it stands now), content, draft, head
SUBMIT_WRITES = 1 if ON_POSTGRESQL else 5
#: The lock + seen, the replay + head and the content: three statements, on PostgreSQL
#: prepared and sent in one pipeline (one round trip: audit.compiled.fetched_together).
SUBMIT_READS = 3
SUBMIT = 3 + SUBMIT_READS + SUBMIT_WRITES  # the assignment with study, codebook, unit and
#              the seat, lock + seen, replay + head, content, the writes; 2 savepoint
#              statements (the label's INSERT has none of its own: losing it rolls the
#              whole back)


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


# --- the hot answers as plain values: equal to the serializers' -----------------------


def _serialized_detail(assignment: Assignment) -> dict:
    """What AssignmentDetailOutput gave before the answers were built as plain values."""
    assignment = Assignment.objects.get(pk=assignment.pk)  # as stored now
    study = Study.objects.select_related("codebook").get(pk=assignment.study_id)
    return api.AssignmentDetailOutput(
        {
            "id": assignment.pk,
            "study": study.slug,
            "assigned_at": assignment.assigned_at,
            "submitted_at": assignment.submitted_at,
            "unit": unit_content(unit=assignment.unit),
            "codebook": {
                "name": study.codebook.name,
                "version": study.codebook.version,
                "definition": api.codebook_for_annotator(study.codebook.definition),
            },
            "draft": draft_of(assignment=assignment),
            "head": label_head(assignment=assignment),
        },
        context={
            "pair_sides": pair_sides_of(assignment),
            "codebook_definition": study.codebook.definition,
        },
    ).data


def _as_json(value: object) -> bytes:
    return JSONRenderer().render(value)


def _detail_now(assignment_id: int) -> dict:
    assignment = Assignment.objects.select_related("study__codebook", "unit").get(pk=assignment_id)
    return api.assignment_detail(assignment)


@pytest.mark.parametrize("study_fixture", ["risk_study", "claims_study"])
def test_the_plain_answers_are_byte_equal_to_the_serializers(study_fixture, request):
    study = request.getfixturevalue(study_fixture)
    people = add_people(study)
    client = api_as(people["ann_a"])
    given = client.post(next_url(study))
    assert given.status_code == 201
    assignment = Assignment.objects.get(pk=given.json()["id"])
    # a new assignment: no draft, no head
    assert _as_json(given.json()) == _as_json(_serialized_detail(assignment))
    # with a draft (keys and values of any kind) and then with a head revision
    draft = client.put(
        reverse("api-assignment-draft", args=[assignment.pk]),
        {"payload": {"form": {"a": [1, None, "x"]}, "n": 2.5, "empty": None}},
        format="json",
    )
    assert draft.status_code == 201
    draft_object = Draft.objects.get(assignment=assignment)
    serialized_draft = api.DraftOutput(draft_object).data
    assert _as_json(api.draft_shown(draft_object)) == _as_json(serialized_draft)
    assert draft.json() == serialized_draft  # (the answer's keys in the order sent)
    assert _as_json(_detail_now(assignment.pk)) == _as_json(_serialized_detail(assignment))
    content = unit_content(unit=assignment.unit)
    body = source_risk(content) if study_fixture == "risk_study" else answer_claims(content)
    body["assisted"] = {"model": "judge-1"}
    submitted = client.post(
        reverse("api-assignment-labels", args=[assignment.pk]),
        {"annotation": body, "client_submission_id": str(uuid.uuid4())},
        format="json",
    )
    assert submitted.status_code == 201, submitted.json()
    label = Label.objects.get(assignment=assignment)
    serialized = api.LabelOutput(
        label, context={"codebook_definition": study.codebook.definition}
    ).data
    assert _as_json(api.label_shown(label, study.codebook.definition)) == _as_json(serialized)
    assert submitted.json() == serialized  # (the stored annotation's keys as sent)
    assert _as_json(_detail_now(assignment.pk)) == _as_json(_serialized_detail(assignment))
    # a stale revision answers the latest one, the same shape
    stale = client.post(
        reverse("api-assignment-labels", args=[assignment.pk]),
        {"annotation": body, "client_submission_id": str(uuid.uuid4())},
        format="json",
    )
    assert stale.status_code == 409
    assert _as_json(stale.json()["latest"]) == _as_json(serialized)


def test_the_plain_answer_of_an_answer_pair_is_equal_to_the_serializers(db):
    study = pairs_study()
    people = add_people(study)
    given = api_as(people["ann_a"]).post(next_url(study))
    assert given.status_code == 201, given.content
    assignment = Assignment.objects.get(pk=given.json()["id"])
    assert _as_json(given.json()) == _as_json(_serialized_detail(assignment))
    assert "left" in given.json()["unit"]
    assert "answer" not in given.json()["unit"]


@pytest.mark.parametrize("study_fixture", ["risk_study", "claims_study"])
def test_the_loops_lean_unit_read_equals_unit_content(study_fixture, request):
    study = request.getfixturevalue(study_fixture)
    study = Study.objects.select_related("codebook").get(pk=study.pk)
    units = list(Unit.objects.filter(study=study).order_by("id")[:5])
    assert units
    for unit in units:
        assert handed_unit_content(study=study, unit_id=unit.pk) == unit_content(unit=unit)


@pytest.mark.postgres
def test_the_loops_statements_are_prepared_but_the_queue_walks_are_not(risk_study, people):
    """The walks' generic plan scans the unit table (docs/benchmarks.md, "fifth round"):
    they are planned for their values every time; the rest is prepared once."""
    client = api_as(people["ann_a"])
    for _ in range(2):
        given = client.post(next_url(risk_study))
        assert given.status_code == 201
        url = reverse("api-assignment-labels", args=[given.json()["id"]])
        assert client.post(url, submit_body(given.json()["id"]), format="json").status_code == 201
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any('"audit_unit"."digest"' in sql for sql in prepared)  # the unit's content
    assert any('INSERT INTO "annotator_label"' in sql for sql in prepared)
    assert not any("SKIP LOCKED" in sql for sql in prepared)
