"""Outcomes in batches: one job takes every label of a study waiting for its outcome, in
bulk, in a number of queries that does not grow with the batch; it writes what one job
per label wrote (same ledger fields, same states, same consensus records), chained so
that the ledger verifies; and a burst of submissions queues one job, not one per label.
(A real worker runs them in tests/ledger/test_worker.py.)"""

from __future__ import annotations

import uuid

import pytest
from celery import current_app
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from annotator.adjudication.jobs import outcomes_process_job
from annotator.adjudication.services import outcomes_process
from annotator.labelling.models import Label, LabelKind, OutcomeWaiting
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit import queueing
from audit.archive.models import Unit, UnitState
from audit.ledger.chain import ledger_verify
from audit.ledger.models import LedgerEntry
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(db):
    return make_study("batches", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)


@pytest.fixture
def people(study):
    return add_people(study)


def submit(study, user, values=(1, 1, 1, 0)) -> Label:
    assignment = assignment_next(study=study, annotator=user)
    return label_submit(
        assignment=assignment,
        annotation=source_risk(unit_content(unit=assignment.unit), values=values),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label


def queries_of(study) -> int:
    with CaptureQueriesContext(connection) as captured:
        outcomes_process(study_id=study.pk)
    return len(captured.captured_queries)


def test_one_batch_takes_every_waiting_label_in_a_fixed_number_of_queries(study, people):
    submit(study, people["ann_a"])
    submit(study, people["ann_b"])
    small = queries_of(study)
    for _ in range(4):
        for name in ("ann_a", "ann_b", "ann_c"):
            submit(study, people[name], values=(1, 1, 1, 0) if name != "ann_c" else (0, 1, 1, 0))

    assert OutcomeWaiting.objects.filter(study=study).count() == 12
    assert queries_of(study) == small  # 12 labels, consensus records included, as for 2
    assert not OutcomeWaiting.objects.exists()
    independent = Label.objects.filter(study=study, kind=LabelKind.INDEPENDENT)
    assert (
        LedgerEntry.objects.filter(record_digest__in=independent.values("record_digest")).count()
        == independent.count()
    )
    assert ledger_verify() == (LedgerEntry.objects.count(), None)


def test_a_batch_decides_states_and_consensus_as_one_label_at_a_time_did(study, people):
    agreed = submit(study, people["ann_a"], (1, 1, 1, 0))
    submit(study, people["ann_b"], (1, 1, 1, 0))  # agrees: a consensus record
    disputed = submit(study, people["ann_a"], (1, 1, 1, 0))
    submit(study, people["ann_b"], (1, 0, 1, 0))  # differs: disputed
    partial = submit(study, people["ann_c"], (None, 1, 1, 0))

    assert outcomes_process(study_id=study.pk) == 5

    units = dict(Unit.objects.filter(study=study).values_list("pk", "state"))
    assert units[agreed.unit_id] == UnitState.AGREED
    assert units[disputed.unit_id] == UnitState.DISPUTED
    assert units[partial.unit_id] == UnitState.PARTIALLY_LABELLED
    consensus = Label.objects.get(kind=LabelKind.CONSENSUS)
    assert consensus.unit_id == agreed.unit_id
    entry = LedgerEntry.objects.get(record_digest=consensus.record_digest)
    assert (entry.kind, entry.endpoint, entry.action) == ("consensus", 1, "CONTEXTUALIZE")
    unresolved = LedgerEntry.objects.get(record_digest=partial.record_digest)
    assert (unresolved.endpoint, unresolved.action) == (None, "REVIEW")
    assert Unit.objects.get(pk=agreed.unit_id).priority is not None
    # Run again: nothing waits, nothing is appended twice.
    before = LedgerEntry.objects.count()
    assert outcomes_process(study_id=study.pk) == 0
    assert LedgerEntry.objects.count() == before


def test_a_label_whose_outcome_is_already_recorded_is_not_appended_again(study, people):
    first = submit(study, people["ann_a"])
    outcomes_process(study_id=study.pk)
    # A waiting row left behind (a job that died after the ledger's commit cannot, but a
    # replayed message may find its label done): it is taken and dropped, not appended.
    OutcomeWaiting.objects.create(label=first, study=study, created_at=first.created_at)

    assert outcomes_process(study_id=study.pk) == 1
    assert LedgerEntry.objects.filter(record_digest=first.record_digest).count() == 1
    assert ledger_verify()[1] is None


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_submissions_queues_one_outcomes_job(monkeypatch):
    study = make_study("burst", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    sent = []
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setattr(queueing, "_send", lambda name, args: sent.append((name, args)))

    for name in ("ann_a", "ann_b", "ann_c"):
        with transaction.atomic():
            submit(study, people[name])

    assert sent == [(queueing.OUTCOMES_PROCESS, (study.pk,))]
    assert OutcomeWaiting.objects.filter(study=study).count() == 3

    # The job clears the mark as it starts: a submission after that queues the next run.
    assert outcomes_process_job.run(study.pk) == 3
    assert set(sent[1:]) == {  # the follow-ups, once for the whole batch
        (queueing.STUDY_REPORT_REFRESH, (study.pk,)),
        (queueing.STUDY_GATE_REFRESH, (study.pk,)),
        (queueing.STUDY_OUTCOMES_REFRESH, (study.pk,)),
        (queueing.STUDY_QUALITY_REFRESH, (study.pk,)),
        (queueing.STUDY_COMPARISON_FOLLOW, (study.pk,)),
    }
    sent.clear()
    with transaction.atomic():
        submit(study, people["ann_a"])
    assert (queueing.OUTCOMES_PROCESS, (study.pk,)) in sent


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_write_marks_nothing(monkeypatch):
    study = make_study("rollback", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    sent = []
    monkeypatch.setattr(queueing, "_send", lambda name, args: sent.append((name, args)))

    def failing_write() -> None:
        with transaction.atomic():
            queueing.queue_job_once(queueing.STUDY_GATE_REFRESH, study.pk)
            raise RuntimeError("the write fails")

    with pytest.raises(RuntimeError):
        failing_write()
    with transaction.atomic():
        queueing.queue_job_once(queueing.STUDY_GATE_REFRESH, study.pk)

    assert sent == [(queueing.STUDY_GATE_REFRESH, (study.pk,))]


@pytest.mark.django_db(transaction=True)
def test_refreshes_after_outcomes_wait_and_run_once_per_delay(monkeypatch, settings):
    """The report, gate and outcome counts follow outcomes REFRESH_DELAY_SECONDS later: a
    second batch while they wait queues none of them again."""
    study = make_study("delay", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    settings.REFRESH_DELAY_SECONDS = 10
    sent = []
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setattr(
        current_app, "send_task", lambda name, **options: sent.append((name, options))
    )

    for name in ("ann_a", "ann_b"):
        with transaction.atomic():
            submit(study, people[name])
        outcomes_process_job.run(study.pk)

    refreshes = [(name, options) for name, options in sent if name != queueing.OUTCOMES_PROCESS]
    assert sorted(refreshes) == [
        (job, {"args": (study.pk,), "retry": False, "countdown": 10.0})
        for job in sorted(
            (
                queueing.STUDY_GATE_REFRESH,
                queueing.STUDY_OUTCOMES_REFRESH,
                queueing.STUDY_QUALITY_REFRESH,
                queueing.STUDY_REPORT_REFRESH,
                queueing.STUDY_COMPARISON_FOLLOW,
            )
        )
    ]
    assert [name for name, _ in sent].count(queueing.OUTCOMES_PROCESS) == 2


@pytest.mark.django_db(transaction=True)
def test_a_submission_queues_its_outcomes_job_to_start_after_the_delay(monkeypatch, settings):
    """The outcomes job starts OUTCOMES_DELAY_SECONDS after the submission that queued
    it, so that the submissions meanwhile join its batch; they queue nothing more."""
    study = make_study("gather", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    settings.OUTCOMES_DELAY_SECONDS = 0.5
    sent = []
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setattr(
        current_app, "send_task", lambda name, **options: sent.append((name, options))
    )

    for name in ("ann_a", "ann_b", "ann_c"):
        with transaction.atomic():
            submit(study, people[name])

    assert sent == [
        (queueing.OUTCOMES_PROCESS, {"args": (study.pk,), "retry": False, "countdown": 0.5})
    ]
    assert outcomes_process_job.run(study.pk) == 3
