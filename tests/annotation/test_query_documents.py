"""Query–document grades in the engine (seed 002): the form with one copy of every
per-document field per document and the set-level relations, refusals named next to the
field and document, drafts, the read-only page, adjudication per (field, document) and
reliability with one item per (unit, document). Through HTTP and the API, on the
database CI runs (PostgreSQL) and on SQLite."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.adjudication.jobs import label_outcome, unit_state_recompute
from annotator.labelling.models import Label, LabelKind
from audit.archive.models import UnitState
from metrics.services import report_compute
from tests.annotation.conftest import add_people, assign
from tests.engine.documents import graded, make_documents_study


@pytest.fixture(autouse=True)
def _fresh_throttle_history():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def study(db):
    return make_documents_study()


@pytest.fixture
def people(study):
    return add_people(study)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def units_of(study):
    return list(study.units.order_by("id"))


def api_submit(user, assignment, annotation):
    api = APIClient()
    api.force_authenticate(user)
    return api.post(
        reverse("api-assignment-labels", args=[assignment.pk]),
        {"annotation": annotation, "client_submission_id": str(uuid.uuid4())},
        format="json",
    )


def settle(label_id: int) -> None:
    """What the label_submitted job does, called directly (idempotent)."""
    label = Label.objects.get(pk=label_id)
    label_outcome(label=label)
    _, consensus = unit_state_recompute(unit=label.unit)
    if consensus is not None:
        label_outcome(label=consensus)


def label_through_api(user, unit, annotation) -> Label:
    response = api_submit(user, assign(unit, user), annotation)
    assert response.status_code == 201, response.json()
    label = Label.objects.get(unit=unit, annotator=user, kind=LabelKind.INDEPENDENT)
    settle(label.pk)
    return label


def problems_of(html: str, name: str) -> str:
    match = re.search(
        rf'<ul class="field-problems" id="field-{name}-problems"[^>]*>(.*?)</ul>', html, re.S
    )
    assert match, f"no problem list for {name}"
    return match.group(1)


def test_the_form_repeats_each_document_field_per_document(study, people):
    unit = units_of(study)[0]
    assignment = assign(unit, people["ann_a"])
    response = client_for(people["ann_a"]).get(reverse("assignment-form", args=[assignment.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    # Documents in rank order, each a card with its text and its own copy of the fields.
    for n in range(3):
        assert f'data-snapshot="document:{n}"' in html
        assert f'name="field-support-{n}" value="2"' in html
        assert f'name="field-support-{n}" value="U"' in html
        assert f'name="field-authority-{n}" value="3"' in html
        assert (
            f'data-field="support-{n}" data-type="grade" data-base="support" data-document="{n}"'
            in html
        )
    cards = re.findall(r'<article class="document-card has-fields" id="document-(\d)"', html)
    assert cards == ["0", "1", "2"]
    first = html.index('id="document-0"')
    assert html.index("A forum post says", first) < html.index('id="document-1"')  # rank 1
    # The set-level editors, after the documents.
    assert 'data-link-editor="contradictions"' in html
    assert 'data-group-editor="redundancy"' in html
    assert html.index('id="document-2"') < html.index('data-link-editor="contradictions"')
    data = json.loads(
        re.search(r'<script id="annotate-data"[^>]*>(.*?)</script>', html, re.S).group(1)
    )
    assert data["documents"] == 3
    assert data["texts"]["document:0"].startswith("A forum post says")


def test_a_refused_submission_names_the_field_and_document(study, people):
    unit = units_of(study)[0]
    assignment = assign(unit, people["ann_a"])
    annotation = graded([2, 1, 0], contradictions=[{"document": 1, "by": 1}])
    del annotation["documents"][1]["values"]["support"]
    annotation["documents"][2]["values"]["authority"] = "7"
    response = client_for(people["ann_a"]).post(
        reverse("assignment-submit", args=[assignment.pk]),
        {"annotation": json.dumps(annotation), "client_submission_id": str(uuid.uuid4())},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Answer support a(q,d) is missing; choose a value, or U if unresolved" in problems_of(
        html, "support-1"
    )
    assert problems_of(html, "support-0").count("<li") == 0
    assert "7" in problems_of(html, "authority-2")
    assert "cannot contradict itself" in problems_of(html, "contradictions")
    assert "Nothing was stored: 3 problems, each named next to the document and field" in html
    assert "annotation.documents[1]" not in html  # no contract paths in the page's words
    assert not Label.objects.exists()


def test_a_stored_label_shows_per_document_on_the_read_only_page(study, people):
    unit = units_of(study)[0]
    annotation = graded(
        [2, None, 0],
        contradictions=[{"document": 2, "by": 0}],
        redundancy=[{"representative": 0, "members": [0, 1]}],
    )
    annotation["documents"][0]["reasons"] = {"support": "states the certification"}
    label = label_through_api(people["ann_a"], unit, annotation)
    assert label.annotation["documents"][1]["values"]["support"] is None
    assignment = label.unit.assignments.get(annotator=people["ann_a"])
    html = client_for(people["ann_a"]).get(reverse("assignment-form", args=[assignment.pk]))
    html = html.content.decode()
    assert "already submitted" in html
    assert re.search(r"<dt>Document 1 · Answer support a\(q,d\)</dt><dd[^>]*>2 ", html)
    assert re.search(r"<dt>Document 2 · Answer support a\(q,d\)</dt><dd[^>]*>U</dd>", html)
    assert "states the certification" in html
    assert "Document 3 contradicted by document 1" in html
    assert "Document 1 represents document 2" in html


def test_two_annotators_a_dispute_per_document_and_its_adjudication(study, people):
    agreed, disputed = units_of(study)
    # Relations listed in another order are the same judgment.
    groups_a = [{"representative": 0, "members": [0, 2]}]
    groups_b = [{"representative": 0, "members": [2, 0]}]
    label_through_api(people["ann_a"], agreed, graded([2, 1, 0], redundancy=groups_a))
    label_through_api(people["ann_b"], agreed, graded([2, 1, 0], redundancy=groups_b))
    agreed.refresh_from_db()
    assert agreed.state == UnitState.AGREED
    consensus = Label.objects.get(unit=agreed, kind=LabelKind.CONSENSUS)
    assert [d["values"]["support"] for d in consensus.annotation["documents"]] == [2, 1, 0]

    first = label_through_api(people["ann_a"], disputed, graded([2, 1, 0]))
    second = label_through_api(
        people["ann_b"], disputed, graded([2, 2, 0], contradictions=[{"document": 2, "by": 0}])
    )
    disputed.refresh_from_db()
    assert disputed.state == UnitState.DISPUTED

    client = client_for(people["adj"])
    url = reverse("adjudication-unit", args=[disputed.pk])
    html = client.get(url).content.decode()
    # Side by side per document: the differing (field, document) and relation are marked.
    assert re.search(r'<tr class="field-row kind-grade differs[^"]*" data-field="support:1"', html)
    assert re.search(r'<tr class="field-row kind-grade" data-field="support:0"', html)
    assert re.search(
        r'<tr class="field-row kind-links differs[^"]*" data-field="contradictions"', html
    )
    assert "Document 2 · Answer support a(q,d)" in html
    digests = re.findall(r'name="pick-support:1" value="([0-9a-f]{64})"', html)
    assert sorted(digests) == sorted([first.record_digest, second.record_digest])
    unpicked = client.post(url, {"rationale": "checked", "client_submission_id": str(uuid.uuid4())})
    assert unpicked.status_code == 400
    assert "Document 2 · Answer support a(q,d): the labels differ" in unpicked.content.decode()
    done = client.post(
        url,
        {
            "pick-support:1": second.record_digest,
            "pick-contradictions": first.record_digest,
            "rationale": "document 2 supplies the answer; no contradiction on reading",
            "client_submission_id": str(uuid.uuid4()),
        },
    )
    assert done.status_code == 302, done.content.decode()[:3000]
    final = Label.objects.get(unit=disputed, kind=LabelKind.ADJUDICATED)
    assert [d["values"]["support"] for d in final.annotation["documents"]] == [2, 2, 0]
    assert final.annotation["values"]["contradictions"] == []
    assert sorted(final.parents) == sorted([first.record_digest, second.record_digest])


def test_reliability_has_one_item_per_unit_and_document(study, people):
    one, two = units_of(study)
    for unit, (a, b) in ((one, ([2, 1, 0], [2, 1, 0])), (two, ([2, None, 1], [1, 2, 1]))):
        label_through_api(people["ann_a"], unit, graded(a))
        label_through_api(people["ann_b"], unit, graded(b))
    report = report_compute(study=study).report
    group = report["versions"][0]["groups"][0]
    items = {item["key"]: item for item in group["items"]}
    assert group["documents"] == 6  # two units x three documents
    support = items["support"]
    assert support["per"] == "document"
    assert support["level"] == "ordinal"
    assert support["u_category"]["n_pairable_units"] == 6
    assert support["u_missing"]["n_pairable_units"] == 5  # the U leaves its document one value
    assert support["u_missing"]["level"] == "ordinal"
    assert "U" in support["u_category"]["categories"]
    assert items["authority"]["u_category"]["n_pairable_units"] == 6
    # Unit-level items are the fields with a value: none here besides the relations.
    assert [i["key"] for i in group["items"] if i.get("per") != "document"] == []
