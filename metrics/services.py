"""Writes of reliability reports: request (the debounce), claim (one run per study at a
time), compute (fetch → pure computation → store, with committed progress).

How concurrent refreshes behave:

* ``report_request`` adds a ``queued`` row unless the study already has one (a partial
  unique constraint makes this race-safe): requests while one is queued do nothing more.
* ``report_claim`` turns the queued row into ``running`` inside a transaction that locks it
  (``SELECT … FOR UPDATE``), and only when the study has no live ``running`` row: two
  workers can never both claim, and a run never starts beside another one of its study.
* ``report_refresh`` requests, then claims and computes until nothing is queued, so a run
  that finishes picks up the request that arrived while it ran (nothing is lost, and N
  requests during a run cost one more run, not N).

A ``running`` row started more than ``REPORT_STALE_SECONDS`` ago belongs to a worker that
died (a report takes seconds): the next claim marks it failed and takes over.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.archive.models import Study
from metrics.models import ReportStatus, StudyReport
from metrics.report_build import report_build
from metrics.selectors import gate_stage, labels_mark, report_inputs_fetch

logger = logging.getLogger("claimgate.metrics")

REPORT_STALE_SECONDS = 15 * 60
#: Runs one refresh may chain before it leaves the rest to the next job.
MAX_RUNS_PER_REFRESH = 5


def bootstrap_resamples() -> int:
    return int(getattr(settings, "RELIABILITY_BOOTSTRAP", 1000))


def report_request(*, study: Study) -> tuple[StudyReport, bool]:
    """The study's queued report, created now unless one is already queued."""
    existing = StudyReport.objects.filter(study=study, status=ReportStatus.QUEUED).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            return StudyReport.objects.create(study=study, status=ReportStatus.QUEUED), True
    except IntegrityError:  # another request queued one in between
        return StudyReport.objects.get(study=study, status=ReportStatus.QUEUED), False


def report_claim(*, study: Study) -> StudyReport | None:
    """Take the study's queued report for a run; None when nothing is queued or another
    run of the study is alive."""
    now = timezone.now()
    with transaction.atomic():
        queued = (
            StudyReport.objects.select_for_update()
            .filter(study=study, status=ReportStatus.QUEUED)
            .first()
        )
        if queued is None:
            return None
        running = StudyReport.objects.select_for_update().filter(
            study=study, status=ReportStatus.RUNNING
        )
        stale_before = now - timedelta(seconds=REPORT_STALE_SECONDS)
        for other in running:
            if (other.started_at or other.created_at) >= stale_before:
                return None  # a live run: it will pick this request up when it ends
            StudyReport.objects.filter(pk=other.pk).update(
                status=ReportStatus.FAILED, error="abandoned (no progress)", finished_at=now
            )
        StudyReport.objects.filter(pk=queued.pk).update(
            status=ReportStatus.RUNNING, started_at=now, progress=0
        )
    queued.refresh_from_db()
    return queued


def _progress(report: StudyReport, percent: int) -> None:
    # Autocommit (no transaction is open here), so the page's poll sees it at once.
    report.progress = min(100, max(0, percent))
    StudyReport.objects.filter(pk=report.pk).update(progress=report.progress)


def report_compute(*, study: Study, report: StudyReport | None = None) -> StudyReport:
    """Compute the study's report now into ``report`` (a claimed, running row; a new one
    when None) and store it as done, or as failed with the error."""
    if report is None:
        report = StudyReport.objects.create(
            study=study, status=ReportStatus.RUNNING, started_at=timezone.now()
        )
    study = Study.objects.select_related("codebook").get(pk=study.pk)
    try:
        mark = labels_mark(study=study)  # before the labels: see labels_mark
        inputs = report_inputs_fetch(study=study)
        _progress(report, 10)
        last = [10]

        def progress(done: int, total: int) -> None:
            percent = 10 + int(85 * done / total)
            if percent >= last[0] + 5:
                last[0] = percent
                _progress(report, percent)

        value = report_build(inputs, n_boot=bootstrap_resamples(), progress=progress)
    except Exception as exc:  # stored for the page; the job still fails loudly
        logger.exception("report %s of study %s failed", report.pk, study.slug)
        StudyReport.objects.filter(pk=report.pk).update(
            status=ReportStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        raise
    StudyReport.objects.filter(pk=report.pk).update(
        status=ReportStatus.DONE,
        progress=100,
        codebook_name=study.codebook.name,
        codebook_version=study.codebook.version,
        labels_digest=inputs.labels_digest,
        labels_mark=mark,
        stage=gate_stage(study=study),
        report=value,
        finished_at=timezone.now(),
    )
    report.refresh_from_db()
    return report


def report_refresh(*, study: Study) -> StudyReport | None:
    """Request a report and run every queued one this worker may claim; the last report
    computed here, or None when another run has it (or it was already done)."""
    report_request(study=study)
    last = None
    for _ in range(MAX_RUNS_PER_REFRESH):
        claimed = report_claim(study=study)
        if claimed is None:
            break
        last = report_compute(study=study, report=claimed)
    return last
