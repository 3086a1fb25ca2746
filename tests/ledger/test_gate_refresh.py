"""The gate refreshes itself: after a submission, an adjudication, a report, a partition
change and a freeze, with no Recompute click, one queued refresh per study at a time —
and the demo, walked through as the README says, reaches ``frozen`` that way.

Jobs run eagerly here (as in ``make demo``), after each commit (transactional tests);
the real worker's run is in test_worker.py.
"""

from __future__ import annotations

import uuid

import pytest
from celery import current_app
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.urls import reverse

from annotator.adjudication.services import adjudication_submit
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit import queueing
from audit.archive.models import Study, Unit, UnitState
from audit.ledger.models import StudyGate
from audit.partitions.services import partition_rule_apply, study_freeze
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study
from tests.partitions.conftest import SPLIT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def eager(monkeypatch, settings):
    monkeypatch.setitem(current_app.conf, "task_always_eager", True)
    settings.RELIABILITY_BOOTSTRAP = 200


def reached(study) -> str | None:
    return StudyGate.objects.get(study=study).reached


def submit(study, user, values=(1, 1, 1, 0)):
    with transaction.atomic():
        assignment = assignment_next(study=study, annotator=user)
        return label_submit(
            assignment=assignment,
            annotation=source_risk(unit_content(unit=assignment.unit), values=values),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label


def test_a_submission_refreshes_the_gate_by_itself():
    study = make_study("refresh", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    assert not StudyGate.objects.filter(study=study).exists()

    submit(study, people["ann_a"])

    gate = StudyGate.objects.get(study=study)
    assert gate.reached == "structural"
    stages = {stage["name"]: stage for stage in gate.report["stages"]}
    assert stages["structural"]["why"] == "all 1 records conform to the contract"
    assert stages["independent_labels"]["reason"] == "units_short"

    submit(study, people["ann_a"])

    stages = {s["name"]: s for s in StudyGate.objects.get(study=study).report["stages"]}
    assert stages["structural"]["why"] == "all 2 records conform to the contract"


def test_a_burst_of_requests_queues_one_refresh(monkeypatch):
    study = make_study("burst", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    call_command("recompute_gate", "--study", study.slug)  # the gate row exists
    sent = []
    monkeypatch.setattr(queueing, "_send", lambda name, args: sent.append((name, args)))

    with transaction.atomic():
        for _ in range(1000):
            queueing.queue_gate_refresh(study.pk)
    with transaction.atomic():  # another burst while the first is still queued
        queueing.queue_gate_refresh(study.pk)

    assert sent == [(queueing.STUDY_GATE_REFRESH, (study.pk,))]
    # The job clears the mark when it starts: the next change queues again.
    current_app.tasks[queueing.STUDY_GATE_REFRESH].run(study.pk)
    with transaction.atomic():
        queueing.queue_gate_refresh(study.pk)
    assert sent == [(queueing.STUDY_GATE_REFRESH, (study.pk,))] * 2


def test_the_demo_reaches_frozen_after_the_readme_walk_through_without_a_click(client):
    """README: label the first item as annotator1 and, differently, as annotator2; resolve
    it as adjudicator; as researcher split the study into partitions and freeze it."""
    call_command("load_demo", "--allow-without-debug", stdout=None)
    study = Study.objects.select_related("codebook").get(slug="demo-source-risk")
    users = {user.username: user for user in get_user_model().objects.all()}
    assert study.overlap >= 2
    # Every unit but one has its two labels, and they agree.
    assert Unit.objects.filter(study=study, submitted_count__lt=2).count() == 1

    first = submit(study, users["annotator1"], values=(1, 1, 1, 0))
    submit(study, users["annotator2"], values=(1, 0, 1, 0))
    unit = Unit.objects.get(pk=first.unit_id)
    assert unit.state == UnitState.DISPUTED
    assert reached(study) == "reliability_reported"  # one disagreement left

    adjudication_submit(
        unit=unit,
        adjudicator=users["adjudicator"],
        annotation=first.annotation,
        rationale="The answer adopts the review's wording.",
        client_submission_id=uuid.uuid4(),
    )
    assert reached(study) == "adjudicated"

    partition_rule_apply(study=study, rule=SPLIT)
    study_freeze(study=study, user=users["researcher"])

    gate = StudyGate.objects.get(study=study)
    assert gate.reached == "frozen"
    stages = {stage["name"]: stage for stage in gate.report["stages"]}
    assert stages["independent_labels"]["counts"]["k"] == 2
    reliability = stages["reliability_reported"]
    assert reliability["met"]
    assert reliability["counts"]["fields"] >= 6  # I, A, M, D, passage support, source role
    client.force_login(users["researcher"])
    page = client.get(reverse("study-detail", args=[study.slug])).content.decode()
    assert "Stage reached: <strong>Frozen</strong>" in page


def test_a_freeze_refreshes_the_report_and_the_gate():
    study = make_study("freeze", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    submit(study, people["ann_a"])
    partition_rule_apply(study=study, rule=SPLIT)
    before = StudyGate.objects.get(study=study).computed_run

    study_freeze(study=study, user=people["res"])

    gate = StudyGate.objects.get(study=study)
    assert gate.computed_run > before
    frozen = next(stage for stage in gate.report["stages"] if stage["name"] == "frozen")
    assert frozen["met"]
    assert gate.report["stages"][3]["counts"]["tentative"] == 0.667
