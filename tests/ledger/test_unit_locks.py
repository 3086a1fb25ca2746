"""The outcomes job locks the units it decides FOR NO KEY UPDATE: rows being written that
refer to those units (a queue order being drawn, whose foreign key checks take a
key-share lock on every unit of the study at commit; labels submitted) go on beside it
instead of waiting for it, which under load deadlocked (docs/benchmarks.md, "The
started-unit walk under a backlog")."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection, connections, transaction

from annotator.adjudication.services import outcomes_process
from annotator.labelling.models import OutcomeWaiting, QueueOrder
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import _queue_order, assignment_next, label_submit
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def submit(study, user) -> None:
    assignment = assignment_next(study=study, annotator=user)
    label_submit(
        assignment=assignment,
        annotation=source_risk(unit_content(unit=assignment.unit)),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )


def test_a_queue_order_is_drawn_while_the_outcomes_job_holds_its_units():
    study = make_study("locks", "source-risk-1.0.0", "source-risk.jsonl")
    people = add_people(study)
    for name in ("ann_a", "ann_b"):
        submit(study, people[name])
    assert OutcomeWaiting.objects.filter(study=study).exists()

    locked, finish = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def job() -> None:
        try:
            with transaction.atomic():  # the job's locks held until this ends
                assert outcomes_process(study_id=study.pk) > 0
                locked.set()
                finish.wait(30)
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)
            locked.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=job)
    thread.start()
    try:
        assert locked.wait(30)
        assert not failures, failures
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '5s'")  # a wait fails the test, not hangs it
        order = _queue_order(study=study, annotator=people["ann_c"])  # commits here
        assert QueueOrder.objects.filter(pk=order.pk).exists()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        finish.set()
        thread.join(30)
    assert not failures, failures
    assert not OutcomeWaiting.objects.filter(study=study).exists()
