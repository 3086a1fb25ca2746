"""The researcher's quality page and API, through HTTP: access, the 8-of-10 annotator
with its interval, charts, marking gold, the plan, pause and resume, and a fixed number
of queries whatever the number of labels."""

from __future__ import annotations

import io
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotator.labelling.models import Assignment
from annotator.memberships.models import Membership, Role
from annotator.quality.models import GoldItem, QualityPlan
from annotator.quality.services import gold_mark_from_file, quality_plan_set
from audit.archive.models import Unit, UnitState
from tests.quality.conftest import RIGHT, WRONG, answer, key_file

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _api(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.fixture
def scored(study, people, units):
    """ann_a right on 8 of 10 qualification units; ann_b and ann_c on one real unit each."""
    gold_mark_from_file(study=study, data=key_file(units[:10], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=10, qualification_threshold=0.8)
    for index in range(10):
        answer(study, people["ann_a"], RIGHT if index < 8 else WRONG)
    return study


def test_only_researchers_see_the_quality_page_and_the_study_page_links_it(study, people):
    url = f"/studies/{study.slug}/quality/"
    assert _client(people["ann_a"]).get(url).status_code == 403
    assert _client(people["adj"]).get(url).status_code == 403
    page = _client(people["res"]).get(f"/studies/{study.slug}/")
    assert url.encode() in page.content
    assert url.encode() not in _client(people["ann_a"]).get(f"/studies/{study.slug}/").content


def test_the_page_shows_0_8_with_its_wilson_interval_and_the_drift_charts(scored, people):
    page = _client(people["res"]).get(f"/studies/{scored.slug}/quality/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "95% Wilson score interval" in html
    row = html[html.index(f'id="annotator-{people["ann_a"].pk}"') :]
    row = row[: row.index("</tr>")]
    assert "0.80" in row
    assert "[0.49, 0.94]" in row
    assert "8/10" in row
    assert "passed" in row
    assert '<svg class="chart drift"' in html
    assert "Accuracy on gold, 1–10: 8/10 = 0.80 [0.49, 0.94]" in html
    # No external chart library: the SVG is drawn here, and nothing (script, style sheet
    # or link) comes from another host. Not a search for "cdn" in the page: a random CSRF
    # token may hold those letters.
    assert re.findall(r'(?:src|href)="(?:https?:)?//[^"]*"', html) == []


def test_the_page_reads_in_a_fixed_number_of_queries(study, people, units):
    researcher = _client(people["res"])
    gold_mark_from_file(study=study, data=key_file(units[:6], qualification=False))
    quality_plan_set(study=study, gold_rate=0.5, qualification_size=0, qualification_threshold=0.8)
    answer(study, people["ann_a"])
    answer(study, people["ann_b"])
    with CaptureQueriesContext(connection) as few:
        researcher.get(f"/studies/{study.slug}/quality/")
    for _ in range(3):
        for name in ("ann_a", "ann_b", "ann_c"):
            answer(study, people[name])
    with CaptureQueriesContext(connection) as many:
        assert researcher.get(f"/studies/{study.slug}/quality/").status_code == 200

    assert len(many) == len(few)


def test_marking_gold_from_a_key_file_on_the_page_lists_every_bad_line(study, people, units):
    researcher = _client(people["res"])
    data = key_file(units[:1], qualification=False) + b'{"unit": "x", "key": {}}\n'
    upload = io.BytesIO(data)
    upload.name = "key.jsonl"

    refused = researcher.post(
        f"/studies/{study.slug}/quality/", {"action": "gold-from-file", "file": upload}
    )

    assert refused.status_code == 400
    assert b"Line 2: key: the key must be a non-empty JSON object" in refused.content
    assert not GoldItem.objects.exists()
    upload = io.BytesIO(key_file(units[:2], qualification=True))
    upload.name = "key.jsonl"
    done = researcher.post(
        f"/studies/{study.slug}/quality/", {"action": "gold-from-file", "file": upload}
    )
    assert done.status_code == 302
    assert GoldItem.objects.filter(qualification=True).count() == 2


def test_the_plan_is_set_on_the_page_and_refused_with_its_reason(study, people, units):
    researcher = _client(people["res"])
    url = f"/studies/{study.slug}/quality/"
    refused = researcher.post(
        url,
        {
            "action": "plan",
            "gold_rate": "0.1",
            "qualification_size": "3",
            "qualification_threshold": "0.8",
        },
    )
    assert refused.status_code == 400
    assert b"needs as many qualification units" in refused.content
    saved = researcher.post(
        url,
        {
            "action": "plan",
            "gold_rate": "0.1",
            "qualification_size": "0",
            "qualification_threshold": "0.8",
        },
    )
    assert saved.status_code == 302
    assert QualityPlan.objects.get(study=study).gold_rate == 0.1


def test_pause_and_resume_on_the_page(study, people):
    a = people["ann_a"]
    held = _client(a).post(f"/studies/{study.slug}/annotate/")
    assert held.status_code == 302
    researcher = _client(people["res"])
    url = f"/studies/{study.slug}/quality/annotators/{a.pk}/pause"

    researcher.post(url, {"action": "pause"})

    assert Membership.objects.get(study=study, user=a, role=Role.ANNOTATOR).paused_at
    assert not Assignment.objects.filter(annotator=a).exists()
    refused = _client(a).post(f"/studies/{study.slug}/annotate/", follow=True)
    assert b"paused by its researcher" in refused.content
    page = researcher.get(f"/studies/{study.slug}/quality/")
    assert b"Resume ann_a" in page.content

    researcher.post(url, {"action": "resume"})

    assert Membership.objects.get(study=study, user=a, role=Role.ANNOTATOR).paused_at is None
    assert _client(a).post(f"/studies/{study.slug}/annotate/").status_code == 302
    assert Assignment.objects.filter(annotator=a).count() == 1


def test_the_api_reports_0_8_with_its_wilson_interval(scored, people):
    body = _api(people["res"]).get(f"/api/studies/{scored.slug}/quality/").json()

    assert body["interval"] == "95% Wilson score interval"
    (a,) = [row for row in body["annotators"] if row["username"] == "ann_a"]
    assert a["gold"]["k"] == 8
    assert a["gold"]["n"] == 10
    assert a["gold"]["rate"] == 0.8
    assert a["gold"]["low"] == pytest.approx(0.4902, abs=1e-4)
    assert a["gold"]["high"] == pytest.approx(0.9433, abs=1e-4)
    assert a["gold_by_50_items"][0]["period"] == "1–10"
    assert len(a["gold_by_week"]) == 1
    assert a["qualification"]["passed"] is True
    assert _api(people["ann_a"]).get(f"/api/studies/{scored.slug}/quality/").status_code == 403


def test_a_script_marks_gold_from_final_records_and_sets_the_plan(study, people, units):
    api = _api(people["res"])
    first, _ = answer(study, people["ann_a"])
    answer(study, people["ann_b"])
    unit = Unit.objects.get(pk=first.unit_id)
    assert unit.state == UnitState.AGREED
    # A unit nobody labelled: the seeded queue may have handed out any unit first.
    unlabelled = next(other for other in reversed(units) if other.pk != unit.pk)

    marked = api.post(
        f"/api/studies/{study.slug}/gold/",
        {"units": [unit.digest], "qualification": True},
        format="json",
    )
    refused = api.post(
        f"/api/studies/{study.slug}/gold/", {"units": [unlabelled.digest]}, format="json"
    )
    plan = api.put(
        f"/api/studies/{study.slug}/quality/",
        {"gold_rate": 0.2, "qualification_size": 1, "qualification_threshold": 1.0},
        format="json",
    )
    listing = api.get(f"/api/studies/{study.slug}/gold/").json()

    assert marked.status_code == 200
    assert marked.json()["created"] == 1
    assert refused.status_code == 400
    assert refused.json()["reason"] == "no_final_record"
    assert refused.json()["problems"][0]["unit"] == unlabelled.digest
    assert "has no final record yet" in refused.json()["problems"][0]["message"]
    assert plan.status_code == 200
    assert plan.json()["plan"]["qualification_size"] == 1
    assert listing["units"] == 1
    assert listing["items"][0]["key"]["I"] == "1"
    assert listing["items"][0]["source"] == "adjudicated"


def test_a_script_marks_gold_from_a_key_file_and_pauses_an_annotator(study, people, units):
    api = _api(people["res"])
    upload = io.BytesIO(key_file(units[:3], qualification=False))
    upload.name = "key.jsonl"
    marked = api.post(f"/api/studies/{study.slug}/gold/file/", {"file": upload})
    bad = io.BytesIO(b"{}\n")
    bad.name = "bad.jsonl"
    refused = api.post(f"/api/studies/{study.slug}/gold/file/", {"file": bad})
    paused = api.post(
        f"/api/studies/{study.slug}/annotators/{people['ann_a'].pk}/pause/",
        {"paused": True},
        format="json",
    )
    nxt = _api(people["ann_a"]).post(f"/api/studies/{study.slug}/assignments/next/")
    not_annotator = api.post(
        f"/api/studies/{study.slug}/annotators/{people['adj'].pk}/pause/",
        {"paused": True},
        format="json",
    )

    assert marked.status_code == 200
    assert marked.json()["created"] == 3
    assert refused.status_code == 400
    assert refused.json()["problems"][0]["line"] == 1
    assert paused.status_code == 200
    assert paused.json() == {"user_id": people["ann_a"].pk, "paused": True, "released": 0}
    assert nxt.status_code == 403
    assert nxt.json()["reason"] == "annotator_paused"
    assert not_annotator.status_code == 404
    assert not_annotator.json()["reason"] == "not_an_annotator"
