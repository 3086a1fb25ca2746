"""A large study's agreement with the others is counted by a worker and stored with the
mark of the labels it counted: the page and the API show the stored counts (the same
numbers as counted in the request), say when they were counted and whether newer labels
are being counted, and queue the recount. A small study is counted in the request."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotator.quality.jobs import study_quality_refresh
from annotator.quality.models import QualitySummary
from annotator.quality.reports import quality_of_annotators, quality_shown
from annotator.quality.scoring import Proportion
from annotator.quality.services import quality_summary_refresh
from audit.queueing import STUDY_QUALITY_REFRESH
from tests.quality.conftest import RIGHT, WRONG, answer

pytestmark = pytest.mark.django_db


def _agreement(people) -> dict[str, tuple]:
    return {p.username: (p.agreement, p.agreement_by_week, p.agreement_by_block) for p in people}


def _label_pairs(study, people, values) -> None:
    """One unit per value, labelled by ann_a (RIGHT) and ann_b (the value)."""
    for value in values:
        answer(study, people["ann_a"], RIGHT)
        answer(study, people["ann_b"], value)


@pytest.fixture
def large(settings, study, people):
    """The study counts as large from its second independent label on."""
    settings.QUALITY_INLINE_LABELS = 1
    return study


def test_a_large_studys_agreement_is_stored_with_the_same_numbers_as_counted_now(large, people):
    _label_pairs(large, people, [RIGHT, WRONG, RIGHT])

    before = quality_shown(study=large)
    assert before.counting
    assert _agreement(before.people)["ann_a"][0] == Proportion(0, 0)

    assert quality_summary_refresh(study=large) == "counted"
    shown = quality_shown(study=large)
    assert not shown.counting
    assert not shown.stale
    assert shown.counted_at is not None
    exact = _agreement(quality_of_annotators(study=large))
    assert _agreement(shown.people) == exact
    assert exact["ann_a"][0] == Proportion(2, 3)
    assert quality_summary_refresh(study=large) == "current"

    # A new label leaves the stored counts behind until the worker counts again.
    _label_pairs(large, people, [WRONG])
    assert quality_shown(study=large).stale
    assert study_quality_refresh.run(large.pk) == "counted"
    shown = quality_shown(study=large)
    assert not shown.stale
    assert _agreement(shown.people) == _agreement(quality_of_annotators(study=large))
    assert _agreement(shown.people)["ann_b"][0] == Proportion(2, 4)


def test_a_small_study_is_counted_in_the_request_and_stores_nothing(settings, study, people):
    settings.QUALITY_INLINE_LABELS = 1
    _label_pairs(study, people, [RIGHT])
    quality_summary_refresh(study=study)
    assert QualitySummary.objects.filter(study=study).exists()

    settings.QUALITY_INLINE_LABELS = 20_000
    assert quality_summary_refresh(study=study) == "inline"
    assert not QualitySummary.objects.filter(study=study).exists()
    shown = quality_shown(study=study)
    assert (shown.counted_at, shown.stale, shown.counting) == (None, False, False)
    assert _agreement(shown.people)["ann_a"][0] == Proportion(1, 1)


def test_the_page_and_the_api_say_when_it_was_counted_and_queue_the_recount(
    large, people, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    monkeypatch.setattr(
        "audit.queueing.queue_job", lambda name, *args, **kwargs: queued.append((name, args))
    )
    monkeypatch.setattr("audit.queueing._mark", lambda *args: True)
    _label_pairs(large, people, [RIGHT, WRONG])
    page = Client()
    page.force_login(people["res"])
    api = APIClient()
    api.force_authenticate(people["res"])
    url = f"/studies/{large.slug}/quality/"

    with django_capture_on_commit_callbacks(execute=True):
        html = page.get(url).content.decode()
    assert "It is counting it now" in html
    assert queued == [(STUDY_QUALITY_REFRESH, (large.pk,))]

    quality_summary_refresh(study=large)
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        html = page.get(url).content.decode()
        body = api.get(f"/api/studies/{large.slug}/quality/").json()
    assert "Agreement counted by a worker at" in html
    assert "with every label so far" in html
    assert queued == []
    assert body["agreement_stale"] is False
    assert body["agreement_counting"] is False
    assert body["agreement_counted_at"] is not None
    ann_a = next(a for a in body["annotators"] if a["username"] == "ann_a")
    assert (ann_a["agreement"]["k"], ann_a["agreement"]["n"]) == (1, 2)

    _label_pairs(large, people, [RIGHT])
    with django_capture_on_commit_callbacks(execute=True):
        html = page.get(url).content.decode()
        body = api.get(f"/api/studies/{large.slug}/quality/").json()
    assert "newer labels are being counted" in html
    assert body["agreement_stale"] is True
    assert queued == [(STUDY_QUALITY_REFRESH, (large.pk,))] * 2
