"""Celery jobs of adjudication: a new label's outcome, its unit's adjudication state and
consensus, and the sweep that catches up on labels whose job was lost. Each takes ids, is
idempotent and only calls services; follow-up work is queued by name (audit.queueing).

Named ``jobs`` (not ``tasks``): in Claimgate's language annotation work is not a task.
Every job retries as ``audit.queueing.RETRY`` says, which is safe because every step
checks what is already done (the ledger holds one entry per record digest).
"""

from __future__ import annotations

import time

from celery import shared_task
from django.conf import settings

from annotator.adjudication.services import label_outcome, unit_state_recompute
from annotator.labelling.models import Label, LabelKind
from audit.ledger.models import LedgerEntry
from audit.queueing import (
    LABEL_ADJUDICATED,
    LABEL_SUBMITTED,
    OUTCOMES_SWEEP,
    RETRY,
    STUDY_OUTCOMES_REFRESH,
    STUDY_REPORT_REFRESH,
    queue_gate_refresh,
    queue_job,
    queue_job_once,
)


@shared_task(name=LABEL_SUBMITTED, **RETRY)
def label_submitted(label_id: int) -> str:
    """Outcome of the new label, the unit's adjudication state, a consensus record and its
    outcome when the labels agree, then the study's gate."""
    label = Label.objects.select_related("unit").get(pk=label_id)
    if label.kind == LabelKind.GOLD:  # scored against its key: no outcome, no unit state
        return label.unit.state
    delay = getattr(settings, "CLAIMGATE_JOB_DELAY_SECONDS", 0)
    if delay:  # failure drills only: leaves time to kill a worker mid-job
        time.sleep(delay)
    label_outcome(label=label)
    state, consensus = unit_state_recompute(unit=label.unit)
    if consensus is not None:
        label_outcome(label=consensus)
    queue_job(STUDY_REPORT_REFRESH, label.study_id)  # which refreshes the gate once done
    queue_gate_refresh(label.study_id)
    queue_job_once(STUDY_OUTCOMES_REFRESH, label.study_id)
    return state


@shared_task(name=LABEL_ADJUDICATED, **RETRY)
def label_adjudicated(label_id: int) -> None:
    label = Label.objects.select_related("unit").get(pk=label_id)
    label_outcome(label=label)
    queue_gate_refresh(label.study_id)
    queue_job_once(STUDY_OUTCOMES_REFRESH, label.study_id)


@shared_task(name=OUTCOMES_SWEEP, **RETRY)
def outcomes_sweep(limit: int = 1000) -> int:
    """Labels that have no ledger entry yet (their job was never queued, e.g. the broker
    was down, or it was lost): process them now. Runs periodically (beat)."""
    recorded = LedgerEntry.objects.values("record_digest")
    # Gold labels are scored against their key, never given an outcome.
    missing = list(
        Label.objects.exclude(record_digest__in=recorded)
        .exclude(kind=LabelKind.GOLD)
        .order_by("id")[:limit]
    )
    studies = set()
    for label in missing:
        if label.kind == "independent":
            label_submitted.run(label.pk)
        else:
            label_outcome(label=label)
        studies.add(label.study_id)
    for study_id in sorted(studies):
        queue_gate_refresh(study_id)
    return len(missing)
