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

from annotator.adjudication.services import (
    OUTCOME_BATCH,
    label_outcome,
    outcomes_process,
    unit_state_recompute,
)
from annotator.labelling.models import Label, LabelKind, OutcomeWaiting
from audit.archive.models import Unit
from audit.ledger.models import LedgerEntry
from audit.queueing import (
    LABEL_ADJUDICATED,
    LABEL_SUBMITTED,
    OUTCOMES_PROCESS,
    OUTCOMES_SWEEP,
    RETRY,
    STUDY_COMPARISON_FOLLOW,
    STUDY_GATE_REFRESH,
    STUDY_OUTCOMES_REFRESH,
    STUDY_QUALITY_REFRESH,
    STUDY_REPORT_REFRESH,
    debounce_release,
    queue_gate_refresh,
    queue_job_once,
    queue_jobs_once,
)

#: What new outcomes change, in the order they are queued (their marks taken together).
FOLLOW_UPS = (
    STUDY_REPORT_REFRESH,
    STUDY_GATE_REFRESH,
    STUDY_OUTCOMES_REFRESH,
    STUDY_QUALITY_REFRESH,
    STUDY_COMPARISON_FOLLOW,
)


def _follow_ups(study_id: int) -> None:
    """What new outcomes change: the reliability report (which refreshes the gate once
    done), the gate, a large study's outcome and agreement counts and the stored
    comparisons of the large protocol settings it is in (metrics' follow job finds them),
    each coalesced per study and started REFRESH_DELAY_SECONDS after the first outcome
    that asks for it: while people label, each runs at most once per that many seconds
    (their cost grows with the study) and the worker stays free for outcomes."""
    delay = float(getattr(settings, "REFRESH_DELAY_SECONDS", 0))
    queue_jobs_once(FOLLOW_UPS, study_id, delay=delay)


@shared_task(name=OUTCOMES_PROCESS, **RETRY)
def outcomes_process_job(study_id: int) -> int:
    """Every label of the study waiting for its outcome, in bulk (queued once per burst of
    submissions: audit.queueing): outcomes, adjudication states and consensus records,
    then the follow-ups once for the whole batch. Returns how many labels it took."""
    debounce_release(OUTCOMES_PROCESS, study_id)
    delay = getattr(settings, "CLAIMGATE_JOB_DELAY_SECONDS", 0)
    if delay:  # failure drills only: leaves time to kill a worker mid-job
        time.sleep(delay)
    total = 0
    while True:
        taken = outcomes_process(study_id=study_id)
        total += taken
        if taken < OUTCOME_BATCH:
            break
    if total:
        _follow_ups(study_id)
    return total


@shared_task(name=LABEL_SUBMITTED, **RETRY)
def label_submitted(label_id: int) -> str:
    """One label's outcome (messages queued before outcomes were batched, and the sweep):
    the label's study's waiting labels in bulk, or this label alone if it never waited."""
    label = Label.objects.select_related("unit").get(pk=label_id)
    if label.kind == LabelKind.GOLD:  # scored against its key: no outcome, no unit state
        return label.unit.state
    if OutcomeWaiting.objects.filter(label_id=label_id).exists():
        outcomes_process(study_id=label.study_id)
    else:
        label_outcome(label=label)
        _state, consensus = unit_state_recompute(unit=label.unit)
        if consensus is not None:
            label_outcome(label=consensus)
    _follow_ups(label.study_id)
    return Unit.objects.filter(pk=label.unit_id).values_list("state", flat=True).get()


@shared_task(name=LABEL_ADJUDICATED, **RETRY)
def label_adjudicated(label_id: int) -> None:
    label = Label.objects.select_related("unit").get(pk=label_id)
    label_outcome(label=label)
    queue_gate_refresh(label.study_id)
    queue_job_once(STUDY_OUTCOMES_REFRESH, label.study_id)
    queue_job_once(STUDY_COMPARISON_FOLLOW, label.study_id)


@shared_task(name=OUTCOMES_SWEEP, **RETRY)
def outcomes_sweep(limit: int = 1000) -> int:
    """Labels that have no ledger entry yet (their job was never queued, e.g. the broker
    was down, or it was lost): process them now. Runs periodically (beat)."""
    recorded = LedgerEntry.objects.values("record_digest")
    missing = list(
        Label.objects.select_related("unit")
        .exclude(record_digest__in=recorded)
        .exclude(kind=LabelKind.GOLD)  # scored against their key, never given an outcome
        .order_by("id")[:limit]
    )
    waiting = set(
        OutcomeWaiting.objects.filter(label_id__in=[label.pk for label in missing]).values_list(
            "label_id", flat=True
        )
    )
    studies = set()
    for label in missing:
        studies.add(label.study_id)
        if label.pk in waiting:
            continue  # taken in bulk below
        label_outcome(label=label)
        if label.kind == "independent":
            _state, consensus = unit_state_recompute(unit=label.unit)
            if consensus is not None:
                label_outcome(label=consensus)
    for study_id in sorted(studies):
        while outcomes_process(study_id=study_id) == OUTCOME_BATCH:
            pass
        _follow_ups(study_id)
    return len(missing)
