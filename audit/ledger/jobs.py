"""Celery job of the validation gate: takes an id, is idempotent, only calls the service."""

from __future__ import annotations

from celery import shared_task

from audit.archive.models import Study
from audit.ledger.services import gate_recompute
from audit.queueing import RETRY, STUDY_GATE_REFRESH


@shared_task(name=STUDY_GATE_REFRESH, **RETRY)
def study_gate_refresh(study_id: int) -> str | None:
    return gate_recompute(study=Study.objects.select_related("codebook").get(pk=study_id)).reached
