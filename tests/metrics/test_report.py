"""Reliability reports: matrices from independent heads, U both ways, sealing, the
debounced one-run-per-study refresh, the page, its CSV and the gate. Jobs are called
directly (``.run``), never through Celery's eager mode."""

from __future__ import annotations

import csv
import io
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotator.adjudication.jobs import label_submitted
from annotator.adjudication.services import adjudication_submit
from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from annotator.memberships.services import pseudonym_of
from audit.archive.models import Partition, Unit
from audit.ledger.services import gate_recompute
from metrics.jobs import study_report_refresh
from metrics.matrices import ClaimSpan, claims_match
from metrics.models import ReportStatus, StudyReport
from metrics.report_build import claim_tables
from metrics.selectors import (
    labels_digest,
    latest_report,
    report_inputs_fetch,
    report_out_of_date,
)
from metrics.services import report_claim, report_compute, report_request
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people, assign, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _few_resamples(settings):
    settings.RELIABILITY_BOOTSTRAP = 40


@pytest.fixture
def study(db):
    return make_study("rel", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)


@pytest.fixture
def people(study):
    return add_people(study)


def submit(study, user, values, *, parent=None, assignment=None, rationale=None):
    assignment = assignment or assignment_next(study=study, annotator=user)
    label = label_submit(
        assignment=assignment,
        annotation=source_risk(
            unit_content(unit=assignment.unit), values=values, rationale=rationale
        ),
        client_submission_id=uuid.uuid4(),
        parent_digest=parent,
    ).label
    return label


def both(study, people, a_values, b_values):
    first = submit(study, people["ann_a"], a_values)
    second = submit(study, people["ann_b"], b_values)
    assert first.unit_id == second.unit_id
    label_submitted.run(first.pk)
    label_submitted.run(second.pk)
    return first, second


def heads_by_coder(study):
    inputs = report_inputs_fetch(study=study)
    return inputs, {(h.unit_id, h.coder): h for h in inputs.heads}


# --- matrices ------------------------------------------------------------------------------


def test_matrices_use_each_annotators_latest_independent_revision_only(study, people):
    first, _second = both(study, people, (1, 1, 1, 0), (0, 1, 1, 0))
    # A revises: revision 2 replaces revision 1 in the matrix.
    revised = submit(
        study,
        people["ann_a"],
        (0, 1, 1, 0),
        parent=first.record_digest,
        assignment=first.assignment,
    )
    assert revised.revision == 2
    label_submitted.run(revised.pk)  # agreement now: a consensus record exists
    assert Label.objects.filter(unit_id=first.unit_id, kind=LabelKind.CONSENSUS).exists()
    # Another unit, disputed then adjudicated: the adjudicated label is no coder.
    third, _fourth = both(study, people, (1, 1, 1, 0), (1, 1, 1, 1))
    adjudication_submit(
        unit=Unit.objects.get(pk=third.unit_id),
        adjudicator=people["adj"],
        annotation=third.annotation,
        rationale="checked",
        client_submission_id=uuid.uuid4(),
    )

    inputs, heads = heads_by_coder(study)
    a = pseudonym_of(study=study, user=people["ann_a"])
    b = pseudonym_of(study=study, user=people["ann_b"])
    assert len(inputs.heads) == 4
    assert {h.coder for h in inputs.heads} == {a, b}
    assert heads[(first.unit_id, a)].record_digest == revised.record_digest
    assert heads[(first.unit_id, a)].values[:4] == ("0", "1", "1", "0")
    assert heads[(third.unit_id, b)].values[3] == "1"
    used = {h.record_digest for h in inputs.heads}
    finals = Label.objects.exclude(kind=LabelKind.INDEPENDENT).values_list(
        "record_digest", flat=True
    )
    assert used.isdisjoint(finals)
    assert first.record_digest not in used


def test_u_is_a_category_in_the_headline_and_missing_in_the_sensitivity(study, people):
    both(study, people, (1, None, 1, 0), (1, 0, 1, 0))
    both(study, people, (1, 1, 1, 0), (1, 1, 1, 0))
    both(study, people, (1, 0, 1, 0), (1, 0, 1, 0))
    report = report_compute(study=study).report
    group = report["versions"][0]["groups"][0]
    adoption = next(item for item in group["items"] if item["key"] == "A")
    assert "U" in adoption["u_category"]["categories"]
    assert "U" not in adoption["u_missing"]["categories"]
    assert adoption["u_category"]["n_pairable"] == 6
    assert adoption["u_missing"]["n_pairable"] == 4  # the unit with a U has one value left
    assert adoption["u_missing"]["alpha"]["value"] == pytest.approx(1.0)
    assert adoption["u_category"]["alpha"]["value"] < 1.0
    assert adoption["confusion"]["pairs"] == 3
    coverage = {row["coder"]: row for row in adoption["unresolved"]}
    a = pseudonym_of(study=study, user=people["ann_a"])
    assert coverage[a]["unresolved"] == 1
    assert coverage[a]["coded"] == 3


def test_claims_are_matched_by_half_the_shorter_span():
    a = [ClaimSpan(0, 20, ("true", "true")), ClaimSpan(30, 40, ("true", "true"))]
    b = [ClaimSpan(5, 15, ("true", "true")), ClaimSpan(36, 60, ("false", "true"))]
    # 10 of the shorter 10 overlap: matched; 4 of the shorter 10: not matched.
    assert claims_match(a, b) == [(0, 0)]
    assert claims_match(a, [ClaimSpan(35, 60, ("U", "U"))]) == [(1, 0)]


def test_answer_claims_report_aligns_claims_and_counts_failed_attempts(db):
    study = make_study("relc", "answer-claims-1.0.0", "answer-claims.jsonl")
    people = add_people(study)
    # Two answers with sources (each gets a claim), whatever order the queue would take.
    units = [u for u in study.units.order_by("id") if unit_content(unit=u).sources][:2]
    for unit in units:
        for who in ("ann_a", "ann_b"):
            assignment = assign(unit, people[who])
            label = label_submit(
                assignment=assignment,
                annotation=answer_claims(unit_content(unit=assignment.unit)),
                client_submission_id=uuid.uuid4(),
                parent_digest=None,
            ).label
            label_submitted.run(label.pk)
    report = report_compute(study=study).report
    group = report["versions"][0]["groups"][0]
    assert group["claims"]["matched_pairs"] == 2
    assert [row["unmatched"] for row in group["claims"]["per_coder"]] == [0, 0]
    metrics = report["claim_metrics"]
    rows = metrics["rows"]
    failed = [row for row in rows if row["status"] == "failed"]
    assert metrics["failed_attempts"] == len(failed) > 0
    assert sum(1 for row in rows if row.get("record") == "consensus") == 2
    assert metrics["awaiting_final"] == len(rows) - len(failed) - 2
    # VeriScore's K per domain from the cohort of answers with a final record, stored.
    cohort = metrics["veriscore_cohort"]
    assert sum(entry["answers"] for entry in cohort.values()) == 2
    assert set(cohort) <= {row["domain"] for row in rows}
    # The tables of all rows are stored with the report, as the page would compute them,
    # and the unfiltered page shows the stored ones.
    n_boot = report["bootstrap"]["n_boot"]
    assert metrics["tables"] == claim_tables(rows, cohort=cohort, n_boot=n_boot)
    client = Client()
    client.force_login(people["res"])
    shown = client.get(f"/studies/{study.slug}/reliability/").context["claims"]
    assert shown["evaluate"] == metrics["tables"]["evaluate"]
    assert shown["by_position"] == metrics["tables"]["by_position"]


def test_a_service_filter_never_changes_veriscore_k(db):
    study = make_study("relk", "answer-claims-1.0.0", "answer-claims.jsonl")
    people = add_people(study)
    for _ in range(3):
        for who in ("ann_a", "ann_b"):
            assignment = assignment_next(study=study, annotator=people[who])
            label = label_submit(
                assignment=assignment,
                annotation=answer_claims(unit_content(unit=assignment.unit)),
                client_submission_id=uuid.uuid4(),
                parent_digest=None,
            ).label
            label_submitted.run(label.pk)
    report = report_compute(study=study).report
    rows = [r for r in report["claim_metrics"]["rows"] if r.get("record")]
    client = Client()
    client.force_login(people["res"])
    whole = client.get(f"/studies/{study.slug}/reliability/").context["claims"]
    one = rows[0]["service"]
    filtered = client.get(f"/studies/{study.slug}/reliability/?service={one}").context["claims"]
    assert filtered["cohort"] == whole["cohort"] == report["claim_metrics"]["veriscore_cohort"]
    for entry in filtered["veriscore"]["per_response"]:
        # An answer of a domain with no final record yet has no K (and no score).
        assert entry["K"] == (whole["cohort"].get(entry["domain"] or "") or {}).get("K")


# --- sealing -------------------------------------------------------------------------------


def test_test_partition_labels_stay_out_until_the_freeze(study, people):
    first, _ = both(study, people, (1, 1, 1, 0), (1, 1, 1, 0))
    second, _ = both(study, people, (0, 1, 1, 0), (1, 1, 1, 0))
    Unit.objects.filter(pk=first.unit_id).update(partition=Partition.TEST)
    Unit.objects.filter(pk=second.unit_id).update(partition=Partition.CALIBRATION)
    report = report_compute(study=study)
    assert report.report["sealed_partitions"] == ["test"]
    assert report.report["labels"] == 2
    assert {h.unit_id for h in report_inputs_fetch(study=study).heads} == {second.unit_id}

    client = Client()
    client.force_login(people["res"])
    page = client.get(f"/studies/{study.slug}/reliability/").content.decode()
    assert "sealed until the study is frozen" in page


# --- refresh: debounce and one run at a time -----------------------------------------------


def test_a_second_request_while_one_is_queued_adds_nothing(study, people):
    first, created = report_request(study=study)
    again, created_again = report_request(study=study)
    assert created
    assert not created_again
    assert again.pk == first.pk
    assert StudyReport.objects.filter(study=study, status=ReportStatus.QUEUED).count() == 1


def test_a_refresh_while_a_run_is_alive_only_queues_and_the_run_picks_it_up(study, people):
    both(study, people, (1, 1, 1, 0), (1, 1, 1, 0))
    report_request(study=study)
    running = report_claim(study=study)
    assert running.status == ReportStatus.RUNNING

    assert study_report_refresh.run(study.pk) == "debounced"
    assert study_report_refresh.run(study.pk) == "debounced"
    statuses = list(StudyReport.objects.filter(study=study).values_list("status", flat=True))
    assert sorted(statuses) == ["queued", "running"]  # no second run, one queued request
    assert report_claim(study=study) is None  # nobody may claim beside the live run

    # The live run finishes, then drains the queued request: one more run, not two.
    from metrics.services import report_refresh

    report_compute(study=study, report=running)
    report_refresh(study=study)
    assert sorted(StudyReport.objects.filter(study=study).values_list("status", flat=True)) == [
        "done",
        "done",
    ]


def test_a_stale_run_is_taken_over(study, people):
    from datetime import timedelta

    from django.utils import timezone

    report_request(study=study)
    dead = report_claim(study=study)
    StudyReport.objects.filter(pk=dead.pk).update(started_at=timezone.now() - timedelta(hours=1))
    assert study_report_refresh.run(study.pk) == "done"
    assert StudyReport.objects.get(pk=dead.pk).status == ReportStatus.FAILED


# --- gate ----------------------------------------------------------------------------------


def test_gate_reliability_reported_reads_the_current_report_then_out_of_date(study, people):
    both(study, people, (1, 1, 1, 0), (1, 1, 1, 0))
    assert gate_recompute(study=study).stages[3].reason == "no_report"
    study_report_refresh.run(study.pk)
    report = StudyReport.objects.get(study=study, status=ReportStatus.DONE)
    assert report.labels_digest == labels_digest(study=study)
    # Current, but one doubly-labelled unit defines no alpha: a reason, not a pass.
    current = gate_recompute(study=study).stages[3]
    assert (current.met, current.reason) == (False, "alpha_undefined")
    assert "I: no_pairable_values" in current.items or "I: single_category" in current.items
    assert latest_report(study)["up_to_date"] is True

    submit(study, people["ann_a"], (0, 0, 0, 1))
    assert gate_recompute(study=study).stages[3].reason == "report_outdated"
    assert latest_report(study)["up_to_date"] is False
    client = Client()
    client.force_login(people["res"])
    assert "Out of date" in client.get(f"/studies/{study.slug}/reliability/").content.decode()


def test_the_labels_mark_says_out_of_date_exactly_when_the_digest_does(study, people):
    """The page tells staleness by the mark (two short queries), not by reading every
    label: through new labels, a revision, a label in the sealed partition, a partition
    change and the freeze, it must agree with the digest of every label."""

    def agrees() -> bool:
        fresh = Unit.objects.get(pk=first.unit_id).study  # a new instance: no cached freeze
        report = StudyReport.objects.filter(study=study, status=ReportStatus.DONE).first()
        by_digest = report.labels_digest != labels_digest(study=fresh)
        assert report_out_of_date(study=fresh, report=report) == by_digest
        return by_digest

    first, _ = both(study, people, (1, 1, 1, 0), (1, 1, 1, 0))
    study_report_refresh.run(study.pk)
    assert not agrees()
    submit(
        study,
        people["ann_a"],
        (0, 1, 1, 0),
        parent=first.record_digest,
        assignment=first.assignment,
    )
    assert agrees()
    study_report_refresh.run(study.pk)
    assert not agrees()
    # A labelled unit moved into the sealed test partition leaves the report's labels.
    sealed = submit(study, people["ann_b"], (1, 0, 1, 0))
    assert agrees()
    Unit.objects.filter(pk=sealed.unit_id).update(partition=Partition.TEST)  # the trigger
    study_report_refresh.run(study.pk)
    assert not agrees()
    # Moving a labelled unit out of the sealed partition makes the report out of date.
    Unit.objects.filter(pk=sealed.unit_id).update(partition=Partition.CALIBRATION)
    assert agrees()


# --- pages ---------------------------------------------------------------------------------


@pytest.fixture
def reported(study, people):
    both(study, people, (1, 1, 1, 0), (1, None, 1, 0))
    both(study, people, (0, 1, 1, 0), (1, 1, 1, 0))
    both(study, people, (1, 1, 0, 0), (1, 1, 0, 0))
    study_report_refresh.run(study.pk)
    return StudyReport.objects.get(study=study, status=ReportStatus.DONE)


def test_the_page_shows_coefficients_both_u_treatments_and_pseudonyms(study, people, reported):
    client = Client()
    client.force_login(people["res"])
    response = client.get(f"/studies/{study.slug}/reliability/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "U as its own category" in page
    assert "U excluded as missing" in page
    assert "Fleiss" in page
    assert "AC1" in page
    assert "Raw" in page
    assert "source-risk" in page
    assert "1.0.0" in page
    assert reported.finished_at.strftime("%Y-%m-%d %H:%M") in page
    assert "<svg" in page
    assert "style=" not in page
    assert pseudonym_of(study=study, user=people["ann_a"]) in page
    assert people["ann_a"].username not in page
    assert people["ann_b"].username not in page
    assert "Recompute" in page


def test_an_undefined_coefficient_says_why_and_kappa_lists_pairs(study, people, reported):
    client = Client()
    client.force_login(people["res"])
    page = client.get(f"/studies/{study.slug}/reliability/").content.decode()

    # D is 0 for everyone on every unit: one category, alpha is 0/0.
    assert "undefined: every pairable value is the same" in page
    first = pseudonym_of(study=study, user=people["ann_a"])
    second = pseudonym_of(study=study, user=people["ann_b"])
    pair = " · ".join(sorted([first, second]))
    assert pair in page
    assert "1 pairs" not in page
    assert "3 pairs" in page


def test_adjudicators_read_it_annotators_get_403_outsiders_404(study, people, reported):
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(people["adj"])
    assert client.get(f"/studies/{study.slug}/reliability/").status_code == 200
    assert client.post(f"/studies/{study.slug}/reliability/recompute/").status_code == 403
    client.force_login(people["ann_a"])
    for path in ("", "status/", "csv/"):
        assert client.get(f"/studies/{study.slug}/reliability/{path}").status_code == 403
    outsider = get_user_model().objects.create(username="outsider")
    client.force_login(outsider)
    assert client.get(f"/studies/{study.slug}/reliability/").status_code == 404
    assert client.get("/studies/no-such/reliability/").status_code == 404


def test_unknown_filter_is_a_bad_request(study, people, reported):
    client = Client()
    client.force_login(people["res"])
    assert client.get(f"/studies/{study.slug}/reliability/?sevice=x").status_code == 400
    assert client.get(f"/studies/{study.slug}/reliability/csv/?table=cohen&x=1").status_code == 400
    assert client.get(f"/studies/{study.slug}/reliability/?service=x&mode=y").status_code == 200


def test_csv_cells_that_start_like_a_formula_are_escaped(study, people, reported):
    data = reported.report
    data["versions"][0]["groups"][0]["coders"][0] = "=HYPERLINK(1)"
    StudyReport.objects.filter(pk=reported.pk).update(report=data)
    client = Client()
    client.force_login(people["res"])
    response = client.get(f"/studies/{study.slug}/reliability/csv/?table=cohen")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[1][0] == "codebook"
    assert any(cell == "'=HYPERLINK(1)" for row in rows for cell in row)
    assert not any(cell.startswith("=") for row in rows for cell in row)
    for table in ("coefficients", "confusion", "unresolved", "claim_alignment"):
        assert (
            client.get(f"/studies/{study.slug}/reliability/csv/?table={table}").status_code == 200
        )


def test_the_page_takes_a_fixed_number_of_queries(study, people, reported):
    client = Client()
    client.force_login(people["res"])
    client.get(f"/studies/{study.slug}/reliability/")
    with CaptureQueriesContext(connection) as few:
        client.get(f"/studies/{study.slug}/reliability/")
    both(study, people, (1, 1, 1, 0), (0, 1, 1, 0))
    both(study, people, (1, 1, 1, 1), (0, 1, 1, 0))
    study_report_refresh.run(study.pk)
    with CaptureQueriesContext(connection) as more:
        client.get(f"/studies/{study.slug}/reliability/")
    assert len(more) == len(few) <= 12


def test_the_status_fragment_polls_while_a_report_runs(study, people, reported):
    report_request(study=study)
    running = report_claim(study=study)
    client = Client()
    client.force_login(people["res"])
    page = client.get(f"/studies/{study.slug}/reliability/").content.decode()
    assert "<progress" in page
    assert 'hx-trigger="every 1s"' in page
    StudyReport.objects.filter(pk=running.pk).update(status=ReportStatus.DONE)
    fragment = client.get(f"/studies/{study.slug}/reliability/status/?watch={running.pk}")
    assert fragment["HX-Refresh"] == "true"


def test_recompute_button_queues_a_refresh(study, people, django_capture_on_commit_callbacks):
    client = Client()
    client.force_login(people["res"])
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(f"/studies/{study.slug}/reliability/recompute/")
    assert response.status_code == 302
    assert len(callbacks) == 1
