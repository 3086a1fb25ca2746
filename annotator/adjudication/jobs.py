"""Celery jobs of annotation. Each takes ids, is idempotent and only calls services.

Named ``jobs`` (not ``tasks``): in Claimgate's language annotation work is not a task.
Retried with backoff on database errors; ``acks_late`` with ``reject_on_worker_lost`` so a
worker killed mid-job leaves the message to be redelivered, which is safe because every
step checks what is already done (the ledger holds one entry per record digest).
"""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError, transaction

from annotator.adjudication.services import label_outcome, unit_state_recompute
from annotator.labelling.models import Label
from audit.archive.models import Study
from audit.ledger.models import LedgerEntry
from audit.ledger.services import gate_recompute

logger = logging.getLogger("claimgate.jobs")

RETRY = {
    "autoretry_for": (DatabaseError,),
    "retry_backoff": 2,
    "retry_backoff_max": 120,
    "retry_jitter": True,
    "max_retries": 10,
    "acks_late": True,
    "reject_on_worker_lost": True,
}


def enqueue(job, *args: object) -> None:
    """Queue ``job`` once the current transaction commits. If the broker cannot be reached
    the submission still stands; the periodic sweep picks its outcome up later."""

    def send() -> None:
        if job.app.conf.task_always_eager:
            # The embedded default (make demo): run here, now. A failure is logged, not
            # raised: the data is committed, and the sweep computes what is missing.
            try:
                job.apply(args=args, throw=True)
            except Exception:
                logger.exception("job %s%r failed; the sweep will catch up", job.name, args)
            return
        try:
            job.apply_async(args=args, retry=False)
        except Exception:  # the broker is down or refuses: never lose the submission
            logger.warning("could not queue %s%r; the sweep will catch up", job.name, args)

    transaction.on_commit(send)


@shared_task(name="claimgate.label_submitted", **RETRY)
def label_submitted(label_id: int) -> str:
    """Outcome of the new label, the unit's adjudication state, a consensus record and its
    outcome when the labels agree, then the study's gate."""
    label = Label.objects.select_related("unit").get(pk=label_id)
    delay = getattr(settings, "CLAIMGATE_JOB_DELAY_SECONDS", 0)
    if delay:  # failure drills only: leaves time to kill a worker mid-job
        time.sleep(delay)
    label_outcome(label=label)
    state, consensus = unit_state_recompute(unit=label.unit)
    if consensus is not None:
        label_outcome(label=consensus)
    enqueue(study_gate_refresh, label.study_id)
    from metrics.jobs import study_report_refresh  # metrics.jobs imports this module

    enqueue(study_report_refresh, label.study_id)
    return state


@shared_task(name="claimgate.label_adjudicated", **RETRY)
def label_adjudicated(label_id: int) -> None:
    label = Label.objects.select_related("unit").get(pk=label_id)
    label_outcome(label=label)
    enqueue(study_gate_refresh, label.study_id)


@shared_task(name="claimgate.study_gate_refresh", **RETRY)
def study_gate_refresh(study_id: int) -> str | None:
    return gate_recompute(study=Study.objects.select_related("codebook").get(pk=study_id)).reached


@shared_task(name="claimgate.outcomes_sweep", **RETRY)
def outcomes_sweep(limit: int = 1000) -> int:
    """Labels that have no ledger entry yet (their job was never queued, e.g. the broker
    was down, or it was lost): process them now. Runs periodically (beat)."""
    recorded = LedgerEntry.objects.values("record_digest")
    missing = list(Label.objects.exclude(record_digest__in=recorded).order_by("id")[:limit])
    studies = set()
    for label in missing:
        if label.kind == "independent":
            label_submitted.run(label.pk)
        else:
            label_outcome(label=label)
        studies.add(label.study_id)
    for study_id in studies:
        study_gate_refresh.run(study_id)
    return len(missing)
