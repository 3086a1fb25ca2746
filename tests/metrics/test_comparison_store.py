"""The stored comparison (Table II) of a large setting: computed by a worker, shown with
when, recomputed once when a label puts it behind; a small setting computes inline."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit import queueing
from audit.archive.models import Study
from audit.queueing import STUDY_COMPARISON_FOLLOW, STUDY_COMPARISON_REFRESH, debounce_release
from fixtures.demo import protocol
from metrics import protocol_selectors as ps
from metrics.jobs import study_comparison_refresh
from metrics.models import ComparisonSetting, ComparisonSummary
from metrics.services import comparison_setting_store
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
    # One query reads the setting's studies with their last label of each kind, nothing
    # else reads labels; nothing counts units or observations (the setting is stored).
    assert len(labels) == 1
    assert labels[0].count('FROM "annotator_label"') == len(ps.MARK_KINDS) * 1
    assert not [q for q in more if "COUNT(" in q["sql"].upper()]


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


@pytest.mark.django_db(transaction=True)
def test_new_outcomes_queue_the_recount_of_each_large_setting_that_reads_them(
    settings, monkeypatch
):
    """After the label jobs (through the follow job they queue by name), the comparison
    recount is queued (coalesced, as the outcome and quality recounts are) for each study
    whose stored setting is large and reads the labelled study; never for a small
    setting's studies or a study in no setting."""
    from celery import current_app

    from annotator.adjudication.jobs import outcomes_process_job
    from annotator.labelling.services import label_submit
    from tests.annotation.conftest import assign

    documents = make_study("docs", "query-document-grades-1.0.0", "protocol-documents.jsonl")
    rubric = make_study("rubric", "answer-rubric-1.0.0", "protocol-rubric.jsonl")
    pairs = make_study("pairs", "pairwise-1.0.0", "protocol-pairs.jsonl")
    risk = make_study("risk", "source-risk-1.0.0", "source-risk.jsonl")
    people = add_people(rubric)
    sent = []
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setattr(queueing, "_send", lambda name, args, *rest: sent.append((name, args)))
    queueing.marks_clear()

    def label_rubric(n: int) -> None:
        """Submit one rubric label, then run the outcome job as a worker would."""
        unit = units_of(rubric, protocol.EVALUATED)[n]
        label_submit(
            assignment=assign(unit, people["ann_a"]),
            annotation={"values": protocol.rubric_values(n, "evaluated"), "reasons": {}},
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
        outcomes_process_job.run(rubric.pk)
        if (STUDY_COMPARISON_FOLLOW, (rubric.pk,)) in sent:  # queued by name: run it
            current_app.tasks[STUDY_COMPARISON_FOLLOW].run(rubric.pk)

    def comparison_jobs() -> list:
        return [args for name, args in sent if name == STUDY_COMPARISON_REFRESH]

    def opened(study: Study) -> None:
        """What opening the study's comparison page does to its setting: it is kept."""
        comparison_setting_store(setting=ps.protocol_setting(study))

    opened(pairs)  # stored, but small (the default threshold): computed inline
    label_rubric(0)
    assert comparison_jobs() == []

    settings.COMPARISON_INLINE_UNITS = 3
    opened(pairs)
    opened(documents)
    sent.clear()
    label_rubric(1)
    label_rubric(2)  # the first recounts are still queued: nothing more
    assert sorted(comparison_jobs()) == [(documents.pk,), (pairs.pk,)]

    debounce_release(STUDY_COMPARISON_REFRESH, pairs.pk)  # the job for pairs started
    label_rubric(3)
    assert sorted(comparison_jobs()) == [(documents.pk,), (pairs.pk,), (pairs.pk,)]
    assert ps.comparison_followers(risk.pk) == []
    assert ps.comparison_followers(rubric.pk) == [documents.pk, pairs.pk]


def test_a_release_takes_the_stored_comparison_when_it_is_current(
    setting_studies, large, settings, tmp_path, monkeypatch
):
    """comparison.json of a frozen study's release: the stored comparison when its mark is
    the setting's now, byte for byte what computing it afresh gives; computed otherwise."""
    from audit.archive.models import Unit
    from audit.partitions.services import study_freeze
    from audit.releases import formats as rf
    from audit.releases.services import release_build

    _documents, _rubric, pairs = setting_studies
    settings.RELEASES_ROOT = tmp_path / "releases"
    researcher = add_people(pairs)["res"]
    ev, base = pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE)
    study_comparison_refresh.run(pairs.pk)
    before_freeze = ComparisonSummary.objects.get(study=pairs).mark
    Unit.objects.filter(study=pairs).update(partition="calibration")
    study_freeze(study=pairs, user=researcher)
    pairs = Study.objects.select_related("codebook").get(pk=pairs.pk)
    fresh = ps.comparisons_for_release(pairs)
    assert ps.protocol_setting(pairs).mark != before_freeze  # the freeze moved it on
    assert study_comparison_refresh.run(pairs.pk) == {"computed": 1, "current": 0}

    computed = []
    real_fetch = ps.comparison_fetch
    monkeypatch.setattr(
        ps, "comparison_fetch", lambda *a, **k: computed.append(a) or real_fetch(*a, **k)
    )
    from_store = ps.comparisons_for_release(pairs)
    assert computed == []  # taken as stored
    assert rf.canonical_json(from_store) == rf.canonical_json(fresh)

    assert from_store["comparisons"][0]["evaluated"]["id"] == ev
    assert from_store["comparisons"][0]["baseline"]["id"] == base
    release = release_build(study=pairs, name="v1")
    assert release.status == "ready", release.error
    bundle = (settings.RELEASES_ROOT / "pairs" / "v1" / rf.COMPARISON).read_bytes()
    assert computed == []
    assert bundle == rf.canonical_json(fresh) + b"\n"

    # A stored comparison that is behind is not taken: the release computes it.
    stored = ComparisonSummary.objects.get(study=pairs)
    ComparisonSummary.objects.filter(pk=stored.pk).update(mark="behind")
    assert rf.canonical_json(ps.comparisons_for_release(pairs)) == rf.canonical_json(fresh)
    assert len(computed) == 1


def test_the_setting_is_read_as_stored_until_an_import_and_then_read_again(
    setting_studies, django_assert_num_queries
):
    """A stored setting is read in two queries (the row; its studies with their marks)
    and is the setting read afresh; a new label moves the comparisons' mark, not the
    setting; a new study on the same queries (an import) makes it read afresh."""
    _documents, rubric, pairs = setting_studies
    fresh = ps.protocol_setting(pairs)
    assert fresh.read is not None
    comparison_setting_store(setting=fresh)
    assert ComparisonSetting.objects.get(study=pairs).units == fresh.units == 60

    with django_assert_num_queries(2):
        stored = ps.protocol_setting(pairs)
    assert stored.read is None
    for name in ("studies", "pairs", "units", "mark"):
        assert getattr(stored, name) == getattr(fresh, name), name
    assert [(p.pk, p.name, p.version) for p in stored.pipelines] == [
        (p.pk, p.name, p.version) for p in fresh.pipelines
    ]

    write_final(units_of(rubric, protocol.BASELINE)[0], {"values": {}})
    with django_assert_num_queries(2):
        labelled = ps.protocol_setting(pairs)
    assert labelled.mark != stored.mark
    assert labelled.studies == stored.studies

    newer = make_study("rubric-2", "answer-rubric-1.0.0", "protocol-rubric.jsonl")
    again = ps.protocol_setting(pairs)
    assert again.read is not None
    assert again.studies["rubric"] == newer
    comparison_setting_store(setting=again)
    assert ComparisonSetting.objects.get(study=pairs).rubric_id == newer.pk
    assert ps.protocol_setting(pairs).read is None
