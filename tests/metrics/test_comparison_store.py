"""The stored comparison (Table II) of a large setting: computed by a worker, shown with
when, recomputed once when a label puts it behind; a small setting computes inline."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit import queueing
from audit.archive.models import Study
from audit.queueing import STUDY_COMPARISON_REFRESH, debounce_release
from fixtures.demo import protocol
from metrics import protocol_selectors as ps
from metrics.jobs import study_comparison_refresh
from metrics.models import ComparisonSummary
from tests.annotation.conftest import add_people, make_study
from tests.metrics.test_protocol_selectors import (
    label_setting,
    pipeline_id,
    units_of,
    write_final,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def setting_studies(db) -> tuple[Study, Study, Study]:
    documents = make_study("docs", "query-document-grades-1.0.0", "protocol-documents.jsonl")
    rubric = make_study("rubric", "answer-rubric-1.0.0", "protocol-rubric.jsonl")
    pairs = make_study("pairs", "pairwise-1.0.0", "protocol-pairs.jsonl")
    label_setting(documents, rubric, pairs)
    return documents, rubric, pairs


@pytest.fixture
def large(settings):
    """Every setting counts as large: the page shows what a worker stored."""
    settings.COMPARISON_INLINE_UNITS = 3


def page(client, slug: str, **params):
    return client.get(reverse("study-comparison", args=[slug]), params)


def csv(client, slug: str, evaluated: int, baseline: int):
    url = reverse("study-comparison-csv", args=[slug])
    return client.get(url, {"evaluated": evaluated, "baseline": baseline})


def test_the_stored_comparison_equals_a_fresh_computation(client, setting_studies, large):
    _documents, _rubric, pairs = setting_studies
    client.force_login(add_people(pairs)["res"])
    ev, base = pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE)

    waiting = page(client, "pairs")
    assert waiting.status_code == 200
    assert waiting.context["shown"].computing
    html = waiting.content.decode()
    assert "computing it now" in html
    assert 'hx-trigger="every 5s"' in html  # fills in by itself
    busy = csv(client, "pairs", ev, base)
    assert busy.status_code == 503
    assert busy["Retry-After"] == "10"

    assert study_comparison_refresh.run(pairs.pk) == {"computed": 1, "current": 0}
    setting = ps.protocol_setting(pairs)
    fresh = json.loads(json.dumps(ps.comparison_data(setting, ev, base)))
    stored = ComparisonSummary.objects.get(study=pairs, evaluated_id=ev, baseline_id=base)
    assert stored.data == fresh
    assert stored.data["comparison"]["rows"][-1]["good"] == 6

    shown = page(client, "pairs")
    assert shown.context["shown"].computed_at == stored.computed_at
    assert not shown.context["shown"].stale
    html = shown.content.decode()
    assert "Computed by a worker at" in html
    assert "with every label so far" in html
    assert "hx-trigger" not in html
    for text in ("Acc_qd", "PassR_ans", "+33.3 %", "6 / 4 / 2", "<svg"):
        assert text in html
    download = csv(client, "pairs", ev, base)
    assert download.status_code == 200
    assert "-as-of-" in download["Content-Disposition"]
    lines = download.content.decode().splitlines()
    assert lines[5].startswith("PassR_ans,pp,83.33,10,12,54.55,6,11,28.79,")


def test_a_new_label_makes_it_stale_and_the_job_recomputes_it_once(client, setting_studies, large):
    _documents, rubric, pairs = setting_studies
    client.force_login(add_people(pairs)["res"])
    ev, base = pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE)
    study_comparison_refresh.run(pairs.pk)
    before = ComparisonSummary.objects.get(study=pairs)

    # Adjudicated fails for the evaluated pipeline's first answers (10 of 12 passed).
    fail = {"values": dict.fromkeys(protocol.RUBRIC_FIELDS, 0)}
    for unit in units_of(rubric, protocol.EVALUATED)[:3]:
        write_final(unit, fail)
    behind = page(client, "pairs")
    assert behind.context["shown"].stale
    assert "a newer comparison (with newer labels) is being computed" in behind.content.decode()
    assert behind.context["comparison"] == before.data["comparison"]  # the stored one meanwhile

    assert study_comparison_refresh.run(pairs.pk) == {"computed": 1, "current": 0}
    assert study_comparison_refresh.run(pairs.pk) == {"computed": 0, "current": 1}
    after = ComparisonSummary.objects.get(study=pairs)
    setting = ps.protocol_setting(pairs)
    assert after.data == json.loads(json.dumps(ps.comparison_data(setting, ev, base)))
    passes = {row["metric"]: row for row in after.data["comparison"]["rows"]}["pass_r"]
    assert passes["evaluated"]["numerator"] < 10
    assert not page(client, "pairs").context["shown"].stale


def test_a_pair_asked_for_is_computed_and_a_burst_of_requests_queues_one_job(
    client, setting_studies, large, monkeypatch, django_capture_on_commit_callbacks
):
    _documents, _rubric, pairs = setting_studies
    client.force_login(add_people(pairs)["res"])
    ev, base = pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE)
    sent = []
    monkeypatch.setattr(queueing, "_send", lambda name, args, *rest: sent.append((name, args)))
    debounce_release(STUDY_COMPARISON_REFRESH, pairs.pk)
    with django_capture_on_commit_callbacks(execute=True):
        page(client, "pairs", evaluated=base, baseline=ev)
        page(client, "pairs", evaluated=base, baseline=ev)
        csv(client, "pairs", base, ev)
    assert sent == [(STUDY_COMPARISON_REFRESH, (pairs.pk,))]
    debounce_release(STUDY_COMPARISON_REFRESH, pairs.pk)
    # The reversed pair (asked for) and the setting's own pair are both computed.
    assert study_comparison_refresh.run(pairs.pk) == {"computed": 2, "current": 0}
    reversed_pair = page(client, "pairs", evaluated=base, baseline=ev).context["comparison"]
    assert reversed_pair["evaluated"]["id"] == base
    assert reversed_pair["rows"][0]["delta"] == pytest.approx(
        -ps.comparison_fetch(ps.protocol_setting(pairs), ev, base)["rows"][0]["delta"]
    )


def test_the_pages_query_count_does_not_grow_with_the_labels(client, setting_studies, large):
    _documents, rubric, pairs = setting_studies
    client.force_login(add_people(pairs)["res"])
    study_comparison_refresh.run(pairs.pk)
    page(client, "pairs")  # warm the session and the caches
    with CaptureQueriesContext(connection) as few:
        assert page(client, "pairs").status_code == 200
    for unit in units_of(rubric, protocol.BASELINE)[:6]:
        write_final(unit, {"values": dict.fromkeys(protocol.RUBRIC_FIELDS, 2)})
    study_comparison_refresh.run(pairs.pk)
    with CaptureQueriesContext(connection) as more:
        assert page(client, "pairs").status_code == 200
    assert len(more) == len(few)
    labels = [q["sql"] for q in more if 'FROM "annotator_label"' in q["sql"]]
    assert len(labels) == 3  # the last label of each study of the setting, nothing more


def test_a_small_setting_is_computed_in_the_request_and_stores_nothing(client, setting_studies):
    _documents, _rubric, pairs = setting_studies
    client.force_login(add_people(pairs)["res"])
    shown = page(client, "pairs").context["shown"]
    assert shown.data is not None
    assert shown.computed_at is None
    assert not ComparisonSummary.objects.exists()
    ComparisonSummary.objects.create(
        study=pairs,
        evaluated_id=pipeline_id(protocol.EVALUATED),
        baseline_id=pipeline_id(protocol.BASELINE),
    )
    assert study_comparison_refresh.run(pairs.pk) == {"computed": 0, "current": 0}
    assert not ComparisonSummary.objects.exists()
