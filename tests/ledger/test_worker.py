"""Jobs in a real Celery worker against Redis and the test database: outcomes arrive, a
worker killed mid-job leaves the job to be redelivered, and a broker that is down loses
no submission."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from urllib.parse import urlparse

import pytest
from django.db import transaction

from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.ledger.models import LedgerEntry
from config.celery import app as celery_app
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study

pytestmark = [
    pytest.mark.worker,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


def wait_for(condition, *, timeout: float, what: str, worker=None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f} s waiting for {what}"
                + (f"\nworker log:\n{worker.log()[-3000:]}" if worker else "")
            )
        time.sleep(0.2)


def purge_queue() -> None:
    with celery_app.connection_for_write() as connection:
        connection.default_channel.queue_purge(celery_app.conf.task_default_queue)


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

    wait_for(lambda: LedgerEntry.objects.count() == 3, timeout=60, what="3 entries", worker=worker)
    assert LedgerEntry.objects.filter(kind="consensus").count() == 1
    assert LedgerEntry.objects.filter(record_digest=first.record_digest).exists()


def test_a_job_survives_its_worker_being_killed(study, celery_workers):
    study, people = study
    # The first worker waits inside every job; a short visibility timeout returns the
    # message of a job whose worker died to the queue soon after.
    drill = {
        "CLAIMGATE_JOB_DELAY_SECONDS": "30",
        "CELERY_VISIBILITY_TIMEOUT": "5",
        "CELERY_RESTORE_INTERVAL": "1",
    }
    doomed = celery_workers(**drill)
    label = submit(study, people["ann_a"])
    wait_for(
        lambda: "claimgate.label_submitted" in doomed.log() and "received" in doomed.log(),
        timeout=60,
        what="the worker to start the job",
        worker=doomed,
    )
    doomed.kill()
    assert not LedgerEntry.objects.exists()

    rescuer = celery_workers(CELERY_VISIBILITY_TIMEOUT="5", CELERY_RESTORE_INTERVAL="1")
    wait_for(
        lambda: LedgerEntry.objects.filter(record_digest=label.record_digest).exists(),
        timeout=90,
        what="the redelivered job",
        worker=rescuer,
    )
    time.sleep(2)  # a duplicate delivery would land now
    assert LedgerEntry.objects.filter(record_digest=label.record_digest).count() == 1
    assert LedgerEntry.objects.count() == 1


def _redis_command() -> tuple[list[str], str, int]:
    url = urlparse(os.environ["CELERY_BROKER_URL"])
    host, port = url.hostname or "127.0.0.1", url.port or 6379
    return ["redis-cli", "-h", host, "-p", str(port)], host, port


def _start_redis(host: str, port: int, directory) -> None:
    subprocess.run(
        [
            "redis-server",
            "--daemonize",
            "yes",
            "--bind",
            host,
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
        ],
        check=True,
        timeout=30,
    )
    cli, _, _ = _redis_command()
    wait_for(
        lambda: subprocess.run([*cli, "ping"], capture_output=True).stdout.strip() == b"PONG",
        timeout=30,
        what="Redis to come back",
    )


def test_a_submission_stands_while_the_broker_is_down(study, celery_workers, tmp_path):
    study, people = study
    cli, host, port = _redis_command()
    subprocess.run([*cli, "shutdown", "nosave"], capture_output=True, timeout=30)
    try:
        started = time.monotonic()
        label = submit(study, people["ann_a"])
        assert time.monotonic() - started < 15, "a down broker must not stall a submission"
        assert not LedgerEntry.objects.exists()
    finally:
        _start_redis(host, port, tmp_path)

    worker = celery_workers()
    from annotator.adjudication.jobs import outcomes_sweep

    outcomes_sweep.apply_async(retry=False)  # what beat sends every minute
    wait_for(
        lambda: LedgerEntry.objects.filter(record_digest=label.record_digest).exists(),
        timeout=60,
        what="the sweep to compute the outcome",
        worker=worker,
    )
