"""Celery jobs of the validation gate and of a large study's outcome counts: each takes
an id, is idempotent and only calls a service."""

from __future__ import annotations

from celery import shared_task

from audit.archive.models import Study
from audit.ledger.services import gate_recompute, outcomes_summary_refresh
from audit.queueing import RETRY, STUDY_GATE_REFRESH, STUDY_OUTCOMES_REFRESH, debounce_release


@shared_task(name=STUDY_GATE_REFRESH, **RETRY)
def study_gate_refresh(study_id: int) -> str | None:
    """Recompute the study's gate (queued once per burst: audit.queueing)."""
    debounce_release(STUDY_GATE_REFRESH, study_id)
    return gate_recompute(study=Study.objects.select_related("codebook").get(pk=study_id)).reached


@shared_task(name=STUDY_OUTCOMES_REFRESH, **RETRY)
def study_outcomes_refresh(study_id: int) -> str:
    """Recount a large study's outcomes (queued once per burst: audit.queueing)."""
    debounce_release(STUDY_OUTCOMES_REFRESH, study_id)
    study = Study.objects.select_related("codebook").get(pk=study_id)
    return outcomes_summary_refresh(study=study)
