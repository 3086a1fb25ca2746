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


def test_the_ledger_filters_offer_known_values_without_reading_the_ledger(
    admin_client_with_ledger,
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client, _ = admin_client_with_ledger
    url = reverse("admin:audit_ledgerentry_changelist")
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url)
    assert page.status_code == 200
    assert not [q["sql"] for q in queries if "DISTINCT" in q["sql"].upper()]
    html = page.content.decode()
    for query in ("?kind=adjudicated", "?endpoint=none", "?action=REVIEW", "?stage=frozen"):
        assert query in html
    total = LedgerEntry.objects.count()
    counts = {
        query: client.get(url + query).context["cl"].result_count
        for query in ("?kind=independent", "?kind=consensus", "?endpoint=1", "?stage=none")
    }
    assert counts == {
        "?kind=independent": LedgerEntry.objects.filter(kind="independent").count(),
        "?kind=consensus": LedgerEntry.objects.filter(kind="consensus").count(),
        "?endpoint=1": LedgerEntry.objects.filter(endpoint=1).count(),
        "?stage=none": LedgerEntry.objects.filter(stage__isnull=True).count(),
    }
    assert counts["?kind=independent"] + counts["?kind=consensus"] == total


def test_a_person_with_labels_is_not_deleted_from_the_admin(admin_client_with_ledger):
    client, _ = admin_client_with_ledger
    model = get_user_model()
    labeller = model.objects.get(username="ann_a")
    idle = model.objects.create_user("idle", password="pw")

    assert client.get(reverse("admin:auth_user_delete", args=[labeller.pk])).status_code == 403
    page = client.get(reverse("admin:auth_user_change", args=[labeller.pk]))
    assert page.status_code == 200
    assert reverse("admin:auth_user_delete", args=[labeller.pk]) not in page.content.decode()
    assert client.get(reverse("admin:auth_user_delete", args=[idle.pk])).status_code == 200


def test_a_study_with_labels_is_not_deleted_from_the_admin(admin_client_with_ledger):
    from audit.models import Study

    client, study = admin_client_with_ledger
    empty = Study.objects.create(slug="empty", title="empty", codebook=study.codebook)

    assert client.get(reverse("admin:audit_study_delete", args=[study.pk])).status_code == 403
    page = client.get(reverse("admin:audit_study_change", args=[study.pk]))
    assert page.status_code == 200
    assert reverse("admin:audit_study_delete", args=[study.pk]) not in page.content.decode()
    assert client.get(reverse("admin:audit_study_delete", args=[empty.pk])).status_code == 200
