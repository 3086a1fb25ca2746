"""Celery jobs of reports. They take ids, are idempotent and only call services; follow-up
work is queued by name (audit.queueing)."""

from __future__ import annotations

from celery import shared_task

from audit.archive.models import Study
from audit.queueing import (
    RETRY,
    STUDY_COMPARISON_FOLLOW,
    STUDY_COMPARISON_REFRESH,
    STUDY_REPORT_REFRESH,
    debounce_release,
    queue_gate_refresh,
    queue_job_once,
)
from metrics.models import ReportStatus, StudyReport
from metrics.services import comparison_follow_ups, comparisons_refresh, report_refresh


@shared_task(name=STUDY_REPORT_REFRESH, **RETRY)
def study_report_refresh(study_id: int) -> str:
    """Recompute the study's reliability report, debounced: a request while one is queued
    adds nothing, and a study never has two runs at a time (metrics.services). The gate is
    refreshed afterwards (its ``reliability_reported`` stage reads the report)."""
    debounce_release(STUDY_REPORT_REFRESH, study_id)
    study = Study.objects.select_related("codebook").get(pk=study_id)
    report = report_refresh(study=study)
    if StudyReport.objects.filter(study=study, status=ReportStatus.QUEUED).exists() and (
        not StudyReport.objects.filter(study=study, status=ReportStatus.RUNNING).exists()
    ):
        queue_job_once(STUDY_REPORT_REFRESH, study_id)  # left over after MAX_RUNS_PER_REFRESH
    if report is None:
        return "debounced"
    queue_gate_refresh(study_id)
    return report.status


@shared_task(name=STUDY_COMPARISON_REFRESH, **RETRY)
def study_comparison_refresh(study_id: int) -> dict[str, int]:
    """Recompute the study's stored comparisons that are behind (queued once per burst:
    audit.queueing); one that is current is left as it is."""
    debounce_release(STUDY_COMPARISON_REFRESH, study_id)
    study = Study.objects.select_related("codebook").get(pk=study_id)
    return comparisons_refresh(study=study)


@shared_task(name=STUDY_COMPARISON_FOLLOW, **RETRY)
def study_comparison_follow(study_id: int) -> int:
    """New outcomes of the study's labels (queued by name by the label jobs, once per
    burst): queue the recount of each stored large setting that reads them, coalesced per
    setting's study. Returns how many settings were asked."""
    debounce_release(STUDY_COMPARISON_FOLLOW, study_id)
    follow_ups = comparison_follow_ups(study_id)
    for name, target in follow_ups:
        queue_job_once(name, target)
    return len(follow_ups)
