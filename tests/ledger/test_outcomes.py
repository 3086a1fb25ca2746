"""Outcomes, adjudication state, consensus and adjudication, with the ledger behind them.
Jobs are called directly here; tests/ledger/test_worker.py runs them in a real worker."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import call_command
from django.db import connection

from annotator.adjudication.jobs import label_submitted, outcomes_sweep
from annotator.adjudication.services import AdjudicationRefused, adjudication_submit
from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.archive.models import Unit, UnitState
from audit.ledger.chain import ledger_verify
from audit.ledger.models import LedgerEntry
from audit.ledger.services import gate_recompute
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(db):
    return make_study("ledger", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)


@pytest.fixture
def people(study):
    return add_people(study)


def label(study, user, values, *, run=True):
    assignment = assignment_next(study=study, annotator=user)
    content = unit_content(unit=assignment.unit)
    submitted = label_submit(
        assignment=assignment,
        annotation=source_risk(content, values=values),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    if run:
        label_submitted.run(submitted.pk)
    return submitted


def test_agreeing_labels_make_a_consensus_record_without_an_adjudicator(study, people):
    first = label(study, people["ann_a"], (1, 1, 1, 0))
    second = label(study, people["ann_b"], (1, 1, 1, 0))

    unit = Unit.objects.get(pk=first.unit_id)
    assert unit.state == UnitState.AGREED
    consensus = Label.objects.get(unit=unit, kind=LabelKind.CONSENSUS)
    assert consensus.annotator is None
    assert consensus.parents == sorted([first.record_digest, second.record_digest])
    entries = {e.record_digest: e for e in LedgerEntry.objects.all()}
    assert set(entries) == {first.record_digest, second.record_digest, consensus.record_digest}
    assert entries[consensus.record_digest].kind == "consensus"
    assert entries[consensus.record_digest].action == "CONTEXTUALIZE"
    assert entries[consensus.record_digest].endpoint == 1
    assert unit.priority is not None


def test_one_label_leaves_the_unit_partially_labelled(study, people):
    first = label(study, people["ann_a"], (0, 1, 1, 0))
    entry = LedgerEntry.objects.get(record_digest=first.record_digest)
    assert (entry.endpoint, entry.short_circuit, entry.action) == (0, 0, "PASS")
    assert Unit.objects.get(pk=first.unit_id).state == UnitState.PARTIALLY_LABELLED


def test_disagreement_goes_to_the_adjudicator_who_writes_the_final_record(study, people):
    first = label(study, people["ann_a"], (1, 1, 1, 0))
    second = label(study, people["ann_b"], (1, 1, None, 0))
    unit = Unit.objects.get(pk=first.unit_id)
    assert unit.state == UnitState.DISPUTED
    unresolved = LedgerEntry.objects.get(record_digest=second.record_digest)
    assert (unresolved.endpoint, unresolved.action) == (None, "REVIEW")

    final = adjudication_submit(
        unit=unit,
        adjudicator=people["adj"],
        annotation=first.annotation,
        rationale="The review page states the commission; materiality holds.",
        client_submission_id=uuid.uuid4(),
    )
    from annotator.adjudication.jobs import label_adjudicated

    label_adjudicated.run(final.pk)

    assert Unit.objects.get(pk=unit.pk).state == UnitState.ADJUDICATED
    assert final.parents == sorted([first.record_digest, second.record_digest])
    assert final.annotation["rationale"].startswith("The review page")
    assert LedgerEntry.objects.get(record_digest=final.record_digest).kind == "adjudicated"
    assert Label.objects.get(pk=first.pk).annotation == first.annotation


def test_adjudication_rules(study, people):
    first = label(study, people["ann_a"], (1, 1, 1, 0))
    label(study, people["ann_b"], (0, 1, 1, 0))
    unit = Unit.objects.get(pk=first.unit_id)

    def adjudicate(user, rationale="because"):
        return adjudication_submit(
            unit=unit,
            adjudicator=user,
            annotation=first.annotation,
            rationale=rationale,
            client_submission_id=uuid.uuid4(),
        )

    with pytest.raises(AdjudicationRefused, match="rationale"):
        adjudicate(people["adj"], rationale="  ")
    with pytest.raises(AdjudicationRefused, match="not an adjudicator"):
        adjudicate(people["ann_c"])
    from annotator.memberships.models import Membership, Role

    Membership.objects.create(study=study, user=people["ann_a"], role=Role.ADJUDICATOR)
    with pytest.raises(AdjudicationRefused, match="labelled this unit yourself"):
        adjudicate(people["ann_a"])


def test_a_retried_job_appends_nothing_twice(study, people):
    first = label(study, people["ann_a"], (1, 1, 1, 0))
    label(study, people["ann_b"], (1, 1, 1, 0))
    before = LedgerEntry.objects.count()
    label_submitted.run(first.pk)
    label_submitted.run(first.pk)
    assert LedgerEntry.objects.count() == before == 3


def test_the_sweep_computes_outcomes_that_were_never_queued(study, people):
    first = label(study, people["ann_a"], (1, 1, 1, 0), run=False)
    assert not LedgerEntry.objects.exists()
    assert outcomes_sweep.run() == 1
    assert LedgerEntry.objects.filter(record_digest=first.record_digest).exists()
    assert outcomes_sweep.run() == 0


def test_the_gate_advances_as_labels_arrive(study, people):
    report = gate_recompute(study=study)
    assert report.reached == "conformance"
    label(study, people["ann_a"], (1, 1, 1, 0))
    report = gate_recompute(study=study)
    stages = {s.name: s for s in report.stages}
    assert report.reached == "structural"
    assert not stages["independent_labels"].met
    assert stages["independent_labels"].counts["fully_labelled"] == 0
    assert "of 35 units" in stages["independent_labels"].why


def _tamper(statement: str) -> None:
    """Change the ledger behind the application's back: without the triggers."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # As a superuser with psql would: replica mode fires no ordinary trigger.
            cursor.execute("SET session_replication_role = replica")
            cursor.execute(statement)
            cursor.execute("SET session_replication_role = origin")
        else:
            cursor.execute("DROP TRIGGER audit_ledgerentry_refuse_update")
            cursor.execute("DROP TRIGGER audit_ledgerentry_refuse_delete")
            cursor.execute(statement)


@pytest.fixture
def ledger(study, people):
    label(study, people["ann_a"], (1, 1, 1, 0))
    label(study, people["ann_b"], (1, 1, 1, 0))
    label(study, people["ann_a"], (0, 0, 0, 1))
    assert LedgerEntry.objects.count() == 4


def test_verify_ledger_passes_on_an_intact_ledger(ledger, capsys):
    call_command("verify_ledger")
    assert "ledger ok: 4 entries" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("statement", "seq", "kind"),
    [
        ("UPDATE audit_ledgerentry SET action = 'PASS' WHERE seq = 3", 3, "edited"),
        ("DELETE FROM audit_ledgerentry WHERE seq = 2", 3, "removed"),
        ("DELETE FROM audit_ledgerentry WHERE seq = 4", 4, "removed"),
        ("UPDATE audit_ledgerentry SET seq = seq + 10 WHERE seq = 2", 3, "removed"),
    ],
)
def test_verify_ledger_names_the_first_tampered_entry(ledger, capsys, statement, seq, kind):
    _tamper(statement)
    assert ledger_verify()[1].kind == kind
    with pytest.raises(SystemExit) as exit_info:
        call_command("verify_ledger")
    assert exit_info.value.code == 1
    assert f"entry {seq}: {kind}" in capsys.readouterr().err


def test_the_database_refuses_to_edit_the_ledger(ledger):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE audit_ledgerentry SET action = 'PASS'")
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_ledgerentry")
