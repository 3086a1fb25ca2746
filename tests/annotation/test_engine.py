"""The generic engine through HTTP and its services, on a codebook no code knows
(tests/engine/studies.py): the form, its validation naming each field, the annotation
API, agreement, adjudication by picks, and the ledger for a codebook without R_O."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.adjudication.services import (
    AdjudicationRefused,
    adjudication_submit_picks,
    independent_heads,
    label_outcome,
    unit_state_recompute,
)
from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.archive.models import UnitState
from audit.ledger.models import LedgerEntry
from audit.releases.services import release_build
from metrics.services import report_compute
from tests.annotation.conftest import add_people, assign
from tests.engine.studies import make_generic_study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttle_history():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def study():
    return make_generic_study()


@pytest.fixture
def people(study):
    return add_people(study)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def sound(assignment, *, civility=2, target="none", harmful=False) -> dict:
    """A sound annotation of the generic codebook: a span for the resolved grade."""
    text = unit_content(unit=assignment.unit).answer["text"]
    spans = []
    if civility is not None:
        spans.append({"field": "civility", "snapshot": "answer", "start": 0, "end": 12})
        spans[0]["quote"] = text[0:12]
    return {
        "values": {"civility": civility, "target": target, "harmful": harmful},
        "reasons": {"target": "nobody is named"},
        "spans": spans,
        "rationale": None,
    }


def submit(assignment, annotation: dict) -> Label:
    """Submit, then what the label_submitted job does (called directly, as tests call
    jobs' services; idempotent, so an eager run before it changes nothing)."""
    label = label_submit(
        assignment=assignment,
        annotation=annotation,
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    label_outcome(label=label)
    _, consensus = unit_state_recompute(unit=label.unit)
    if consensus is not None:
        label_outcome(label=consensus)
    return label


def field_problems(html: str, code: str) -> str:
    match = re.search(
        rf'<ul class="field-problems" id="field-{code}-problems"[^>]*>(.*?)</ul>', html, re.S
    )
    assert match, f"no problem list for {code}"
    return match.group(1)


def test_the_form_is_generated_from_the_fields(study, people):
    # An answer with sources, whatever the queue's seeded order hands out first.
    answered = next(u for u in study.units.order_by("id") if unit_content(unit=u).sources)
    assignment = assign(answered, people["ann_a"])
    response = client_for(people["ann_a"]).get(reverse("assignment-form", args=[assignment.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    # Grades and choices are radio groups with their keys shown; U where allowed.
    for value in ("0", "1", "2", "U"):
        assert f'name="field-civility" value="{value}"' in html
    for code in ("person", "group", "organisation", "none", "U"):
        assert f'name="field-target" value="{code}"' in html
    assert 'name="field-harmful" value="true"' in html
    assert '<kbd title="Key to go to this field">c</kbd>' in html
    assert 'data-key="g"' in html
    # Each grade's anchor is shown beside its name.
    assert "<dt>Toxic</dt><dd>Insults, slurs, threats" in html
    # A reason box where one is asked for; the spans toolbar offers the evidence fields.
    assert re.search(r'for="reason-target"[^>]*>Reason <span class="muted">\(required\)', html)
    assert 'data-attach="civility"' in html
    assert 'data-attach="target"' not in html
    # The unit's panes by kind: an answer with its sources, named as spans name them.
    assert 'data-snapshot="source:0"' in html
    data = json.loads(
        re.search(r'<script id="annotate-data"[^>]*>(.*?)</script>', html, re.S).group(1)
    )
    assert data["form"] == "fields"
    assert "source:0" in data["texts"]


def test_a_refused_submission_names_every_problem_next_to_its_field(study, people):
    assignment = assignment_next(study=study, annotator=people["ann_a"])
    client = client_for(people["ann_a"])
    annotation = {"values": {"civility": 2, "target": "martians"}, "reasons": {}, "spans": []}
    response = client.post(
        reverse("assignment-submit", args=[assignment.pk]),
        {"annotation": json.dumps(annotation), "client_submission_id": str(uuid.uuid4())},
    )
    assert response.status_code == 400
    html = response.content.decode()
    target = field_problems(html, "target")
    assert "martians" in target
    assert "needs a reason" in target
    assert "missing" in field_problems(html, "harmful")
    assert field_problems(html, "civility").count("<li") == 0
    assert not Label.objects.exists()


def test_a_sound_submission_is_stored_and_its_outcome_has_no_endpoint(study, people):
    assignment = assignment_next(study=study, annotator=people["ann_a"])
    response = client_for(people["ann_a"]).post(
        reverse("assignment-submit", args=[assignment.pk]),
        {"annotation": json.dumps(sound(assignment)), "client_submission_id": str(uuid.uuid4())},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    label = Label.objects.get()
    assert label.annotation["values"] == {"civility": 2, "target": "none", "harmful": False}
    label_outcome(label=label)
    entry = LedgerEntry.objects.get(record_digest=label.record_digest)
    assert entry.ok is True
    assert entry.endpoint is None  # a codebook without R_O has no endpoint


def test_the_api_takes_a_format_2_annotation_and_refuses_naming_the_field(study, people):
    assignment = assignment_next(study=study, annotator=people["ann_a"])
    api = APIClient()
    api.force_authenticate(people["ann_a"])
    url = reverse("api-assignment-labels", args=[assignment.pk])
    bad = sound(assignment)
    bad["values"]["civility"] = 7
    refused = api.post(
        url, {"annotation": bad, "client_submission_id": str(uuid.uuid4())}, format="json"
    )
    assert refused.status_code == 400
    body = refused.json()
    assert body["reason"] == "invalid_field"
    assert "annotation.values.civility" in body["message"]
    assert [p["path"] for p in body["problems"]] == ["annotation.values.civility"]
    created = api.post(
        url,
        {"annotation": sound(assignment), "client_submission_id": str(uuid.uuid4())},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["annotation"]["values"]["target"] == "none"


def test_agreeing_labels_make_a_consensus_and_differing_ones_a_dispute(study, people):
    first = assignment_next(study=study, annotator=people["ann_a"])
    submit(first, sound(first))
    second = assignment_next(study=study, annotator=people["ann_b"])
    assert second.unit_id == first.unit_id
    submit(second, {**sound(second), "reasons": {"target": "a different reason"}})
    unit = first.unit
    unit.refresh_from_db()
    assert unit.state == UnitState.AGREED
    consensus = Label.objects.get(unit=unit, kind=LabelKind.CONSENSUS)
    assert consensus.annotation["reasons"]["target"] == "nobody is named | a different reason"

    third = assignment_next(study=study, annotator=people["ann_a"])
    submit(third, sound(third, civility=0, target="group", harmful=True))
    fourth = assignment_next(study=study, annotator=people["ann_b"])
    submit(fourth, sound(fourth, civility=1, target="group", harmful=True))
    disputed = third.unit
    disputed.refresh_from_db()
    assert disputed.state == UnitState.DISPUTED

    heads = independent_heads(unit=disputed)
    with pytest.raises(AdjudicationRefused, match="Civility") as refused:
        adjudication_submit_picks(
            unit=disputed,
            adjudicator=people["adj"],
            picks={},
            rationale="checked",
            client_submission_id=uuid.uuid4(),
        )
    assert refused.value.code == "pick_missing"
    final = adjudication_submit_picks(
        unit=disputed,
        adjudicator=people["adj"],
        picks={"civility": heads[1].record_digest},
        rationale="borderline, not toxic",
        client_submission_id=uuid.uuid4(),
    )
    assert final.annotation["values"] == {"civility": 1, "target": "group", "harmful": True}
    assert sorted(final.parents) == sorted(h.record_digest for h in heads)
    assert [s["field"] for s in final.annotation["spans"]] == ["civility"]


def test_the_adjudication_page_marks_differences_and_takes_picks(study, people):
    units = []
    for annotator, civility in (("ann_a", 0), ("ann_b", 2)):
        assignment = assignment_next(study=study, annotator=people[annotator])
        submit(assignment, sound(assignment, civility=civility))
        units.append(assignment.unit_id)
    assert units[0] == units[1]
    client = client_for(people["adj"])
    url = reverse("adjudication-unit", args=[units[0]])
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    row = re.search(r'<tr class="field-row kind-grade differs"[^>]*data-field="civility"', html)
    assert row, "the differing field is marked"
    assert 'data-field="target"' in html
    assert "kind-choice differs" not in html
    digests = re.findall(r'name="pick-civility" value="([0-9a-f]{64})"', html)
    assert len(digests) == 2
    missing = client.post(url, {"rationale": "x", "client_submission_id": str(uuid.uuid4())})
    assert missing.status_code == 400
    assert "pick_missing" in missing.content.decode()
    done = client.post(
        url,
        {
            "pick-civility": digests[1],
            "pick-target": digests[0],
            "pick-harmful": digests[0],
            "rationale": "civil on reading",
            "client_submission_id": str(uuid.uuid4()),
        },
    )
    assert done.status_code == 302
    final = Label.objects.get(kind=LabelKind.ADJUDICATED)
    assert final.annotation["values"]["civility"] == 2


def _label_pairs(study, people, pairs) -> None:
    """Two annotators label one unit per pair of civility grades."""
    for first, second in pairs:
        for annotator, civility in (("ann_a", first), ("ann_b", second)):
            assignment = assignment_next(study=study, annotator=people[annotator])
            submit(assignment, sound(assignment, civility=civility))


def test_reliability_is_computed_per_field_at_its_level(study, people):
    _label_pairs(study, people, [(0, 0), (1, 2), (2, 2), (None, 2), (1, 1)])
    report = report_compute(study=study).report
    items = {item["key"]: item for item in report["versions"][0]["groups"][0]["items"]}
    assert list(items) == ["civility", "target", "harmful", "acceptable"]
    civility = items["civility"]
    assert civility["level"] == "ordinal"
    assert civility["u_missing"]["level"] == "ordinal"
    assert civility["u_category"]["level"] == "nominal"
    assert civility["u_missing"]["n_pairable_units"] == 4  # a U leaves its unit one value
    assert civility["u_category"]["n_pairable_units"] == 5
    assert "U" in civility["u_category"]["categories"]
    assert items["target"]["level"] == "nominal"
    # The derived value (civility >= 1) is an item too, from each label, U where civility is.
    acceptable = items["acceptable"]
    assert acceptable["level"] == "nominal"
    assert acceptable["u_category"]["categories"] == ["U", "false", "true"]
    assert acceptable["u_missing"]["n_pairable_units"] == 4
    assert acceptable["u_category"]["n_pairable_units"] == 5
    assert "claim_metrics" not in report


def test_a_release_has_one_column_per_field_and_derived_value(study, people, settings, tmp_path):
    settings.RELEASES_ROOT = tmp_path / "releases"
    _label_pairs(study, people, [(0, 2), (2, 2)])
    release = release_build(study=study, name="v1")
    assert release.status == "ready", release.error
    directory = settings.RELEASES_ROOT / study.slug / "v1"
    rows = [json.loads(line) for line in (directory / "labels_independent.jsonl").open()]
    assert len(rows) == 4
    first = rows[0]
    for column in ("civility", "target", "harmful", "acceptable", "reasons", "spans"):
        assert column in first
    by_civility = {row["civility"]: row["acceptable"] for row in rows}
    assert by_civility == {0: False, 2: True}
    header = (directory / "labels_independent.csv").read_text().splitlines()[0].split(",")
    start = header.index("civility")
    assert header[start : start + 7] == [
        "civility",
        "target",
        "harmful",
        "acceptable",
        "reasons",
        "spans",
        "rationale",
    ]
    final = [json.loads(line) for line in (directory / "labels_final.jsonl").open()]
    assert [row["kind"] for row in final] == ["consensus"]


@pytest.mark.parametrize(
    "name",
    [
        "study-detail",
        "study-outcomes",
        "study-outcomes-csv",
        "study-reliability",
        "study-reliability-csv",
        "study-releases",
        "study-partitions",
        "study-people",
    ],
)
def test_the_researchers_pages_work_for_a_codebook_without_an_endpoint(study, people, name):
    _label_pairs(study, people, [(0, 2), (2, 2), (None, 1)])
    report_compute(study=study)
    response = client_for(people["res"]).get(reverse(name, args=[study.slug]))
    assert response.status_code == 200, response.content.decode()[:3000]


def test_a_record_page_shows_a_label_of_the_codebook(study, people):
    _label_pairs(study, people, [(0, 2)])
    label = Label.objects.filter(kind=LabelKind.INDEPENDENT).first()
    response = client_for(people["res"]).get(
        reverse("study-record", args=[study.slug, label.record_digest])
    )
    assert response.status_code == 200
    assert "civility" in response.content.decode()


def test_the_form_and_the_adjudication_page_read_a_fixed_number_of_queries(
    study, people, django_assert_max_num_queries
):
    """However many fields, spans and sources: the queries do not grow with them."""
    _label_pairs(study, people, [(0, 2)])
    labelled = Label.objects.filter(kind=LabelKind.INDEPENDENT).first()
    form_client = client_for(people["ann_c"])
    assignment = assignment_next(study=study, annotator=people["ann_c"])
    form_url = reverse("assignment-form", args=[assignment.pk])
    form_client.get(form_url)  # warm the session
    with django_assert_max_num_queries(8):
        assert form_client.get(form_url).status_code == 200
    adjudicator = client_for(people["adj"])
    page_url = reverse("adjudication-unit", args=[labelled.unit_id])
    adjudicator.get(page_url)
    with django_assert_max_num_queries(14):
        assert adjudicator.get(page_url).status_code == 200


def test_a_stale_submission_shows_both_versions_field_by_field(study, people):
    assignment = assignment_next(study=study, annotator=people["ann_a"])
    first = submit(assignment, sound(assignment, civility=2))
    client = client_for(people["ann_a"])
    response = client.post(
        reverse("assignment-submit", args=[assignment.pk]),
        {
            "annotation": json.dumps(sound(assignment, civility=0)),
            "client_submission_id": str(uuid.uuid4()),
            "parent_digest": "",  # edits "nothing", but revision 1 exists
        },
    )
    assert response.status_code == 409
    html = response.content.decode()
    mine = re.search(r'data-version="mine">(.*?)</div>\s*<div class="compare-column"', html, re.S)
    assert mine
    assert re.search(r'<div class="differs"><dt>Civility</dt><dd dir="auto">0 Toxic</dd>', html)
    assert '<dt>Civility</dt><dd dir="auto">2 Civil</dd>' in html
    assert Label.objects.filter(unit=first.unit).count() == 1
