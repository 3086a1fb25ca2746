"""Reads compiled once (audit.compiled) answer what their querysets answer, and the token
authentication built on one refuses what DRF's refuses."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator.labelling.models import Assignment, Label
from audit.archive.models import Unit
from audit.compiled import CompiledRead, fetched_together, prepared_cursor, rows_together

pytestmark = pytest.mark.django_db

UNITS = CompiledRead(
    lambda study_id, unit_id: (
        Unit.objects.filter(study_id=study_id, pk__gte=unit_id)
        .order_by("pk")
        .values("pk", "digest", "study__slug")
    ),
    study_id=int,
    unit_id=int,
)


def test_values_rows_equal_the_querysets_for_every_binding(risk_study):
    units = list(Unit.objects.filter(study=risk_study).order_by("pk"))

    for unit in units:
        expected = list(
            Unit.objects.filter(study_id=risk_study.pk, pk__gte=unit.pk)
            .order_by("pk")
            .values("pk", "digest", "study__slug")
        )
        assert UNITS.dicts(study_id=risk_study.pk, unit_id=unit.pk) == expected


def test_an_id_no_row_can_hold_matches_nothing_without_a_database_error(risk_study):
    assert UNITS.dicts(study_id=risk_study.pk, unit_id=2**70) == []


def test_model_rows_carry_select_related_and_annotations(risk_study, people):
    client = APIClient()
    client.force_authenticate(people["ann_a"])
    given = client.post(reverse("api-assignment-next", args=[risk_study.slug])).json()
    read = CompiledRead(
        lambda pk: (
            Assignment.objects.select_related("study__codebook", "unit")
            .filter(pk=pk)
            .extra(select={"twice": "2 * annotator_assignment.id"})
            .order_by("pk")
        ),
        pk=int,
    )

    [assignment] = read.instances(pk=given["id"])

    assert assignment.pk == given["id"]
    assert assignment.study.codebook.digest == risk_study.codebook.digest
    assert assignment.unit.digest == Unit.objects.get(pk=assignment.unit_id).digest
    assert assignment.twice == 2 * given["id"]


def test_a_uuid_value_is_bound_on_every_backend(risk_study, people):
    read = CompiledRead(
        lambda submission: Label.objects.filter(client_submission_id=submission),
        submission=uuid.UUID,
    )
    assert read.instances(submission=str(uuid.uuid4())) == []


def test_a_value_the_compiled_text_swallows_is_refused():
    read = CompiledRead(lambda slug: Unit.objects.filter(digest__contains=slug), slug=str)
    with pytest.raises(ValueError, match="not bound as parameters"):
        read.dicts(slug="x")


def _token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_token_authentication_lets_in_the_tokens_user_only(risk_study, people):
    url = reverse("api-assignment-next", args=[risk_study.slug])
    token = Token.objects.create(user=people["ann_a"])

    assert _token_client(token.key).post(url).status_code == 201
    unknown = _token_client("0" * 40).post(url)
    assert unknown.status_code == 401
    assert unknown.headers["WWW-Authenticate"] == "Token"

    people["ann_a"].is_active = False
    people["ann_a"].save(update_fields=["is_active"])
    assert _token_client(token.key).post(url).status_code == 401


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "one-query"])
def test_reads_sent_together_answer_each_in_order(risk_study, settings, prepared):
    settings.PREPARED_STATEMENTS = prepared
    first = Unit.objects.filter(study=risk_study).order_by("pk").first()
    rows = fetched_together(
        (UNITS, {"study_id": risk_study.pk, "unit_id": first.pk}),
        (UNITS, {"study_id": risk_study.pk, "unit_id": 2**70}),  # nothing, not sent
        (UNITS, {"study_id": risk_study.pk, "unit_id": first.pk + 1}),
    )

    answers = [UNITS.dicts_of(fetched) for fetched in rows]
    assert answers == [
        UNITS.dicts(study_id=risk_study.pk, unit_id=first.pk),
        [],
        UNITS.dicts(study_id=risk_study.pk, unit_id=first.pk + 1),
    ]


@pytest.mark.postgres
def test_the_compiled_reads_are_prepared_once_per_connection(risk_study):
    def prepared() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
            return [row[0] for row in cursor.fetchall()]

    units = list(Unit.objects.filter(study=risk_study).order_by("pk"))
    for unit in units:
        assert UNITS.dicts(study_id=risk_study.pk, unit_id=unit.pk)
    assert len([sql for sql in prepared() if '"audit_unit"' in sql]) == 1
    with prepared_cursor() as cursor:  # a statement of the ORM's cursors is not prepared
        cursor.execute("SELECT %s::int + 1", [1])
        assert cursor.fetchone() == (2,)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::int + 2", [1])
    assert any("+ 1" in sql for sql in prepared())
    assert not any("+ 2" in sql for sql in prepared())


@pytest.mark.postgres
def test_a_failed_prepared_statement_rolls_back_and_the_next_call_answers(risk_study):
    from django.db import DatabaseError, transaction

    unit = Unit.objects.filter(study=risk_study).order_by("pk").first()
    expected = UNITS.dicts(study_id=risk_study.pk, unit_id=unit.pk)
    with pytest.raises(DatabaseError), transaction.atomic(), prepared_cursor() as cursor:
        cursor.execute("SELECT 1 / %s", [0])
    assert UNITS.dicts(study_id=risk_study.pk, unit_id=unit.pk) == expected
    with transaction.atomic():  # a pipeline after the failure, inside a transaction
        rows = fetched_together(
            (UNITS, {"study_id": risk_study.pk, "unit_id": unit.pk}),
            (UNITS, {"study_id": risk_study.pk, "unit_id": unit.pk}),
        )
    assert [UNITS.dicts_of(fetched) for fetched in rows] == [expected, expected]


@pytest.mark.postgres
def test_a_statement_failing_in_a_pipeline_raises_and_the_connection_goes_on(risk_study):
    from django.db import DatabaseError, transaction

    unit = Unit.objects.filter(study=risk_study).order_by("pk").first()
    expected = UNITS.dicts(study_id=risk_study.pk, unit_id=unit.pk)
    with pytest.raises(DatabaseError), transaction.atomic():
        rows_together([("SELECT %s::int", [1]), ("SELECT 1 / %s", [0]), ("SELECT 2", [])])
    assert rows_together([("SELECT %s::int", [1]), ("SELECT 2", [])]) == [[(1,)], [(2,)]]
    assert UNITS.dicts(study_id=risk_study.pk, unit_id=unit.pk) == expected
