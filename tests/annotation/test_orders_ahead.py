"""Queue orders drawn ahead: a job draws each annotator's order after they are added and
after an import, so that their first request does not pay for the study's size; the
order it draws is the one that request would have drawn."""

from __future__ import annotations

import io

import pytest
from celery import current_app
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.labelling.models import Assignment, QueueOrder, QueuePosition
from annotator.labelling.services import assignment_next, queue_orders_draw
from annotator.memberships.models import Membership, Role
from annotator.memberships.services import membership_add
from audit.archive.models import Study, Unit
from audit.archive.services import codebook_install_file
from audit.queueing import marks_clear
from tests.annotation.conftest import FIXTURES
from tests.annotation.test_queue import submit
from tests.archive.builders import jsonl, observation

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _jobs_here(monkeypatch):
    """The jobs run here, in order, when the test's transaction "commits" (with or without
    a broker configured); each test's are queued afresh (a mark left by another test's
    study id would coalesce them away)."""
    monkeypatch.setitem(current_app.conf, "task_always_eager", True)
    marks_clear()
    yield
    marks_clear()


def person(name: str):
    return get_user_model().objects.create_user(username=name, password="pw")


def keys_of(order: QueueOrder) -> dict[int, int]:
    return dict(QueuePosition.objects.filter(order=order).values_list("unit_id", "key"))


def test_adding_an_annotator_draws_their_order_once_it_commits(
    risk_study, django_capture_on_commit_callbacks
):
    ann = person("ann")
    with django_capture_on_commit_callbacks(execute=True):
        membership_add(study=risk_study, user=ann, role=Role.ANNOTATOR)

    order = QueueOrder.objects.get(study=risk_study, annotator=ann)
    assert set(keys_of(order)) == set(risk_study.units.values_list("pk", flat=True))


def test_other_roles_and_a_membership_added_again_queue_nothing(
    risk_study, django_capture_on_commit_callbacks
):
    adj, ann = person("adj"), person("ann")
    with django_capture_on_commit_callbacks(execute=False) as adjudicator:
        membership_add(study=risk_study, user=adj, role=Role.ADJUDICATOR)
    Membership.objects.create(study=risk_study, user=ann, role=Role.ANNOTATOR)
    with django_capture_on_commit_callbacks(execute=False) as again:
        membership_add(study=risk_study, user=ann, role=Role.ANNOTATOR)

    assert adjudicator == []
    assert again == []
    assert not QueueOrder.objects.filter(study=risk_study).exists()


def test_the_order_drawn_ahead_is_the_one_the_first_request_draws(risk_study):
    ann = person("ann")
    Membership.objects.create(study=risk_study, user=ann, role=Role.ANNOTATOR)
    assert queue_orders_draw(study=risk_study) == 1
    ahead = keys_of(QueueOrder.objects.get(study=risk_study, annotator=ann))
    first_ahead = assignment_next(study=risk_study, annotator=ann)

    # The same annotator as if nothing had been drawn ahead: the request draws it.
    Assignment.objects.filter(annotator=ann).delete()
    Unit.objects.filter(study=risk_study).update(assigned_count=0, holder=None)
    QueueOrder.objects.filter(study=risk_study, annotator=ann).delete()
    first_lazy = assignment_next(study=risk_study, annotator=ann)
    lazy = keys_of(QueueOrder.objects.get(study=risk_study, annotator=ann))

    assert ahead == lazy
    assert first_ahead.unit_id == first_lazy.unit_id == min(ahead, key=lambda u: ahead[u])
    assert queue_orders_draw(study=risk_study) == 0  # nothing left to draw


def test_an_import_fills_the_empty_orders_of_annotators_added_before_it(
    django_capture_on_commit_callbacks, db
):
    codebook, _ = codebook_install_file(path=FIXTURES / "codebooks" / "source-risk-1.0.0.json")
    researcher, ann = person("res"), person("ann")
    study = Study.objects.create(slug="empty", title="Empty", codebook=codebook)
    Membership.objects.create(study=study, user=researcher, role=Role.RESEARCHER)
    with django_capture_on_commit_callbacks(execute=True):
        membership_add(study=study, user=ann, role=Role.ANNOTATOR)
    order = QueueOrder.objects.get(study=study, annotator=ann)
    assert keys_of(order) == {}  # drawn before the study had units

    client = APIClient()
    client.force_authenticate(researcher)
    data = jsonl(observation(1), observation(2))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("api-study-import", args=[study.slug]),
            {"file": SimpleUploadedFile("obs.jsonl", data, content_type="application/jsonl")},
        )

    assert response.status_code == 201, response.content
    assert set(keys_of(order)) == set(study.units.values_list("pk", flat=True))
    assert len(keys_of(order)) == 4


def test_an_order_already_walked_is_left_for_the_queue_to_extend(risk_study, people):
    ann = people["ann_a"]
    submit(assignment_next(study=risk_study, annotator=ann))
    order = QueueOrder.objects.get(study=risk_study, annotator=ann)
    before = keys_of(order)
    QueuePosition.objects.filter(order=order).exclude(unit_id__in=list(before)[:1]).delete()

    # The others' orders are drawn; this one holds a position, and stays as it is.
    assert queue_orders_draw(study=risk_study) == 2
    assert len(keys_of(order)) == 1
    assert QueueOrder.objects.filter(study=risk_study).count() == 3


def test_once_every_order_is_drawn_the_job_reads_two_statements_whatever_the_annotators(
    risk_study, people, django_assert_num_queries
):
    assert queue_orders_draw(study=risk_study) == 3

    # The annotators and their orders, each order marked empty or not in the same read.
    with django_assert_num_queries(2):
        assert queue_orders_draw(study=risk_study) == 0


def test_the_job_of_a_deleted_study_does_nothing(db):
    from annotator.labelling.jobs import study_queue_orders_draw

    assert study_queue_orders_draw.run(10**9) == 0


def test_the_command_and_the_page_import_fill_empty_orders_too(
    tmp_path, client, django_capture_on_commit_callbacks, db
):
    codebook, _ = codebook_install_file(path=FIXTURES / "codebooks" / "source-risk-1.0.0.json")
    researcher, ann = person("res"), person("ann")
    orders = {}
    for slug in ("by-command", "by-page"):
        study = Study.objects.create(slug=slug, title=slug, codebook=codebook)
        Membership.objects.create(study=study, user=researcher, role=Role.RESEARCHER)
        with django_capture_on_commit_callbacks(execute=True):
            membership_add(study=study, user=ann, role=Role.ANNOTATOR)
        orders[slug] = QueueOrder.objects.get(study=study, annotator=ann)
    path = tmp_path / "obs.jsonl"
    path.write_bytes(jsonl(observation(1)))

    with django_capture_on_commit_callbacks(execute=True):
        call_command("import_records", str(path), study="by-command", stdout=io.StringIO())
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("study-import", args=["by-page"]),
            {"file": SimpleUploadedFile("obs.jsonl", path.read_bytes())},
        )

    for order in orders.values():
        assert len(keys_of(order)) == 2  # the observation's two tuples


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_first_request_during_the_jobs_draw_waits_for_it_and_uses_its_order():
    """The job draws an annotator's order (its transaction still open) when their first
    request comes: the request waits on the order's unique key, then walks the order the
    job drew; one order, one position per unit, and the unit handed out is its first."""
    from annotator.labelling.models import QueueSeed
    from tests.annotation.conftest import make_study
    from tests.archive.concurrent import committed_meanwhile

    study = make_study("racing", "source-risk-1.0.0", "source-risk.jsonl")
    ann = person("ann")
    Membership.objects.create(study=study, user=ann, role=Role.ANNOTATOR)

    with committed_meanwhile(lambda: queue_orders_draw(study=study)):
        assignment = assignment_next(study=study, annotator=ann)

    order = QueueOrder.objects.get(study=study, annotator=ann)
    keys = keys_of(order)
    assert QueueSeed.objects.filter(study=study).count() == 1
    assert QueuePosition.objects.filter(order=order).count() == study.units.count() == len(keys)
    assert assignment.unit_id == min(keys, key=keys.__getitem__)
