"""Jobs in a real Celery worker against Redis and the test database: outcomes arrive, a
worker killed mid-job leaves the job to be redelivered, and a broker that is down loses
no submission.

No wait here assumes how fast the machine is: each ends when what it waits for happens
(and fails at once when the worker it waits on dies). The broker that goes down is a
private redis-server of the test's own, never the Redis that CELERY_BROKER_URL names.
"""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from django.db import transaction
from kombu import Connection

from annotator.adjudication.jobs import outcomes_sweep
from annotator.labelling.models import Label
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.ledger.models import LedgerEntry
from config.celery import app as celery_app
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study
from tests.conftest import HANG_SECONDS, ROOT, service_env

pytestmark = [
    pytest.mark.worker,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


def purge_queue() -> None:
    with celery_app.connection_for_write() as connection:
        connection.default_channel.queue_purge(celery_app.conf.task_default_queue)


def broker_is_empty() -> bool:
    """No message of the app's queue is waiting or taken-but-unacknowledged (jobs are
    acknowledged after they finish): nothing is left that could still be delivered."""
    with celery_app.connection_for_write() as connection:
        channel = connection.default_channel
        waiting = channel.client.llen(celery_app.conf.task_default_queue)
        unacked = channel.client.hlen(channel.unacked_key)
    return waiting == 0 and unacked == 0


def submit(study, user):
    with transaction.atomic():  # committed: the job is queued on commit
        assignment = assignment_next(study=study, annotator=user)
        return label_submit(
            assignment=assignment,
            annotation=source_risk(unit_content(unit=assignment.unit)),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label


@pytest.fixture
def study():
    purge_queue()
    study = make_study("worker", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    return study, add_people(study)


def test_a_worker_computes_outcomes_and_consensus(study, celery_workers):
    study, people = study
    worker = celery_workers()
    first = submit(study, people["ann_a"])
    submit(study, people["ann_b"])

    worker.wait_until(lambda: LedgerEntry.objects.count() == 3, what="3 ledger entries")
    assert LedgerEntry.objects.filter(kind="consensus").count() == 1
    assert LedgerEntry.objects.filter(record_digest=first.record_digest).exists()


def test_a_worker_refreshes_the_gate_after_submissions(study, celery_workers):
    from audit.ledger.models import StudyGate

    study, people = study
    worker = celery_workers()
    submit(study, people["ann_a"])
    submit(study, people["ann_b"])

    def refreshed() -> bool:
        gate = StudyGate.objects.filter(study=study).first()
        if gate is None or not gate.report:
            return False
        return gate.report["stages"][1]["counts"]["records"] == 3  # two labels, a consensus

    worker.wait_until(refreshed, what="the gate refreshed after the last outcome")
    assert StudyGate.objects.get(study=study).reached == "structural"


def test_a_job_survives_its_worker_being_killed(study, celery_workers):
    study, people = study
    # The first worker waits inside every job until it is killed (the hour is never
    # reached); a short visibility timeout returns the message of a job whose worker
    # died to the queue soon after.
    drill = {
        "CLAIMGATE_JOB_DELAY_SECONDS": "3600",
        "CELERY_VISIBILITY_TIMEOUT": "5",
        "CELERY_RESTORE_INTERVAL": "1",
    }
    doomed = celery_workers(**drill)
    label = submit(study, people["ann_a"])
    doomed.wait_until(
        lambda: "claimgate.outcomes_process" in doomed.log() and "received" in doomed.log(),
        what="the worker to start the job",
    )
    doomed.kill()
    assert not LedgerEntry.objects.exists()

    rescuer = celery_workers(CELERY_VISIBILITY_TIMEOUT="5", CELERY_RESTORE_INTERVAL="1")
    rescuer.wait_until(
        lambda: LedgerEntry.objects.filter(record_digest=label.record_digest).exists(),
        what="the redelivered job",
    )
    # Every message handled and acknowledged: no duplicate delivery can come any more.
    rescuer.wait_until(broker_is_empty, what="the queue to be empty and every job acked")
    assert LedgerEntry.objects.filter(record_digest=label.record_digest).count() == 1
    assert LedgerEntry.objects.count() == 1


# A web process of its own, whose broker is the private Redis: it submits a label.
SUBMIT_ELSEWHERE = """
import sys

import django

django.setup()
from django.contrib.auth import get_user_model

from audit.archive.models import Study
from tests.ledger.test_worker import submit

study = Study.objects.get(slug=sys.argv[1])
print(submit(study, get_user_model().objects.get(username=sys.argv[2])).pk)
"""


def test_a_submission_stands_while_the_broker_is_down(study, private_redis, celery_workers):
    study, people = study
    broker = {"CELERY_BROKER_URL": private_redis.url()}
    private_redis.stop()
    result = subprocess.run(
        [sys.executable, "-c", SUBMIT_ELSEWHERE, study.slug, people["ann_a"].username],
        cwd=ROOT,
        env=service_env(**broker),
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    # The job could not be queued, and the submission stands all the same.
    assert result.returncode == 0, result.stderr
    assert "could not queue claimgate.outcomes_process" in result.stderr
    label = Label.objects.get(pk=int(result.stdout.split()[-1]))
    assert not LedgerEntry.objects.exists()

    private_redis.start()
    worker = celery_workers(**broker)
    with Connection(private_redis.url()) as connection:
        outcomes_sweep.apply_async(retry=False, connection=connection)  # what beat sends
    worker.wait_until(
        lambda: LedgerEntry.objects.filter(record_digest=label.record_digest).exists(),
        what="the sweep to compute the outcome",
    )
