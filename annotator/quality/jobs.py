"""Celery job of quality control: a large study's agreement counts (takes an id, is
idempotent and only calls a service)."""

from __future__ import annotations

from celery import shared_task

from annotator.quality.services import quality_summary_refresh
from audit.archive.models import Study
from audit.queueing import RETRY, STUDY_QUALITY_REFRESH, debounce_release


@shared_task(name=STUDY_QUALITY_REFRESH, **RETRY)
def study_quality_refresh(study_id: int) -> str:
    """Recount a large study's agreement (queued once per burst: audit.queueing)."""
    debounce_release(STUDY_QUALITY_REFRESH, study_id)
    study = Study.objects.select_related("codebook").get(pk=study_id)
    return quality_summary_refresh(study=study)
