"""Admin: the ledger is read-only and filterable; the gate shows its claim boundary."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.ledger.models import LedgerEntry, StudyGate
from audit.ledger.services import gate_recompute
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_with_ledger(client):
    study = make_study("adm", "source-risk-1.0.0", "source-risk.jsonl")
    people = add_people(study)
    for name in ("ann_a", "ann_b"):
        assignment = assignment_next(study=study, annotator=people[name])
        label = label_submit(
            assignment=assignment,
            annotation=source_risk(unit_content(unit=assignment.unit)),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(label.pk)
    gate_recompute(study=study)
    admin = get_user_model().objects.create_superuser("root", "root@example.invalid", "pw")
    client.force_login(admin)
    return client, study


def test_the_ledger_list_filters_and_searches(admin_client_with_ledger):
    client, study = admin_client_with_ledger
    url = reverse("admin:audit_ledgerentry_changelist")
    entry = LedgerEntry.objects.filter(kind="consensus").get()

    page = client.get(url, {"action": "CONTEXTUALIZE", "study__id__exact": study.pk})
    assert page.status_code == 200
    assert entry.record_digest[:16] in page.content.decode()
    found = client.get(url, {"q": entry.record_digest})
    assert found.context["cl"].result_count == 1
    none = client.get(url, {"endpoint": "0"})
    assert none.context["cl"].result_count == 0


def test_the_ledger_cannot_be_changed_from_the_admin(admin_client_with_ledger):
    client, _ = admin_client_with_ledger
    entry = LedgerEntry.objects.first()
    assert client.get(reverse("admin:audit_ledgerentry_add")).status_code == 403
    assert client.get(reverse("admin:audit_ledgerentry_delete", args=[entry.pk])).status_code == 403
    detail = client.post(reverse("admin:audit_ledgerentry_change", args=[entry.pk]), {"ok": False})
    assert detail.status_code == 403
    assert LedgerEntry.objects.get(pk=entry.pk).ok is True


def test_the_gate_page_shows_stages_and_the_claim_boundary(admin_client_with_ledger):
    client, study = admin_client_with_ledger
    gate = StudyGate.objects.get(study=study)
    page = client.get(reverse("admin:audit_studygate_change", args=[gate.pk])).content.decode()
    assert "independent_labels" in page
    assert "not met" in page
    assert "May not claim yet" in page
    assert "prevalence" in page
