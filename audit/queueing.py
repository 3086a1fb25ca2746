"""Background work, queued by job name: the one seam between a write and its jobs.

A service (or a page, or a job) that must start background work calls
``queue_job(NAME, *ids)``: the job is sent by its registered name once the current
transaction commits, so the caller never imports a ``jobs`` module. Jobs import
services; nothing imports jobs (import-linter contract). The names below are the
strings Celery registers, that queued messages and the beat schedule carry: renaming
one strands every message already queued under it.

If the broker cannot be reached the write still stands; the periodic sweep
(``claimgate.outcomes_sweep``) picks its outcome up later. With no broker configured
(``make demo``, the embedded default) Celery runs eagerly: the job runs here, now, as
``apply()``; a failure is logged, not raised, for the same reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta

from celery import current_app
from django.core.cache import cache
from django.db import DatabaseError, transaction
from django.db.models import Q
from django.utils import timezone

from audit.ledger.models import StudyGate

logger = logging.getLogger("claimgate.jobs")

LABEL_SUBMITTED = "claimgate.label_submitted"
LABEL_ADJUDICATED = "claimgate.label_adjudicated"
OUTCOMES_SWEEP = "claimgate.outcomes_sweep"
STUDY_GATE_REFRESH = "claimgate.study_gate_refresh"
STUDY_REPORT_REFRESH = "claimgate.study_report_refresh"
RELEASE_BUILD = "claimgate.release_build"
STUDY_OUTCOMES_REFRESH = "claimgate.study_outcomes_refresh"
#: Every job name; each is registered by one ``jobs`` module listed in CELERY_IMPORTS.
JOBS = (
    LABEL_SUBMITTED,
    LABEL_ADJUDICATED,
    OUTCOMES_SWEEP,
    STUDY_GATE_REFRESH,
    STUDY_REPORT_REFRESH,
    RELEASE_BUILD,
    STUDY_OUTCOMES_REFRESH,
)

#: How every job retries: with backoff on database errors; ``acks_late`` with
#: ``reject_on_worker_lost`` so that a worker killed mid-job leaves the message to be
#: redelivered, which is safe because every job checks what is already done.
RETRY = {
    "autoretry_for": (DatabaseError,),
    "retry_backoff": 2,
    "retry_backoff_max": 120,
    "retry_jitter": True,
    "max_retries": 10,
    "acks_late": True,
    "reject_on_worker_lost": True,
}


def _run_here(name: str, args: tuple[object, ...]) -> None:
    """Eager mode: look the job up by name (loading the jobs modules the worker would
    load, CELERY_IMPORTS, on first use) and apply it in this process."""
    app = current_app
    if name not in app.tasks:
        app.loader.import_default_modules()
    job = app.tasks[name]
    try:
        job.apply(args=args, throw=True)
    except Exception:
        logger.exception("job %s%r failed; the sweep will catch up", name, args)


#: Inside :func:`jobs_deferred`: the jobs committed and not yet sent, in order and as a set.
_deferred: ContextVar[tuple[list[tuple[str, tuple]], set[tuple[str, tuple]]] | None] = ContextVar(
    "claimgate_jobs_deferred", default=None
)


@contextmanager
def jobs_deferred() -> Iterator[None]:
    """Collect the jobs queued inside (once committed), each distinct job once, and send
    them when the block ends, in order. In eager mode the jobs a deferred job queues are
    collected too, so that a bulk write (``load_demo``'s labels) runs each follow-up once —
    one reliability report and one gate refresh after every label's own job — instead
    of once per label."""
    state: tuple[list[tuple[str, tuple]], set[tuple[str, tuple]]] = ([], set())
    token = _deferred.set(state)
    try:
        yield
        pending, waiting = state
        while pending:
            name, args = pending.pop(0)
            waiting.discard((name, args))  # queued again from now on, it runs again
            _send(name, args)
    finally:
        _deferred.reset(token)


def _send(name: str, args: tuple) -> None:
    if current_app.conf.task_always_eager:
        _run_here(name, args)
        return
    try:
        current_app.send_task(name, args=args, retry=False)
    except Exception:  # the broker is down or refuses: never lose the write
        logger.warning("could not queue %s%r; the sweep will catch up", name, args)


def queue_job(name: str, *args: object) -> None:
    """Queue the job registered as ``name`` once the current transaction commits."""
    deferred = _deferred.get()
    if deferred is not None:
        pending, waiting = deferred

        def collect() -> None:
            if (name, args) not in waiting:
                waiting.add((name, args))
                pending.append((name, args))

        transaction.on_commit(collect)
        return

    def send() -> None:
        _send(name, args)

    transaction.on_commit(send)


#: How long a queued debounced job keeps others of its name and study from queueing.
DEBOUNCE_SECONDS = 60


def debounce_key(name: str, study_id: int) -> str:
    return f"claimgate:queued:{name}:{study_id}"


def queue_job_once(name: str, study_id: int) -> bool:
    """Queue ``name(study_id)`` unless one is already queued (and not yet started) for the
    study: a burst of events queues one job, not one per event. The job calls
    ``debounce_release`` as it starts, so an event during its run queues the next one.
    The mark lives in the cache (shared Redis in production) and expires by itself,
    so a lost message delays the work by at most DEBOUNCE_SECONDS. True when queued."""
    if not cache.add(debounce_key(name, study_id), 1, timeout=DEBOUNCE_SECONDS):
        return False
    queue_job(name, study_id)
    return True


def debounce_release(name: str, study_id: int) -> None:
    cache.delete(debounce_key(name, study_id))


#: A gate refresh queued this long ago and still not started is taken as lost (the
#: broker was down, the message dropped): the next request queues another.
GATE_REFRESH_STALE_SECONDS = 300


def queue_gate_refresh(study_id: int) -> bool:
    """Queue the study's gate refresh (``STUDY_GATE_REFRESH``) unless one is already
    queued and not yet started. Every event that can change a gate calls this — a
    submission, an adjudication, a report, a partition change, a freeze — so a burst of
    a thousand submissions queues one refresh, not a thousand: the first request marks
    the study's gate row (one conditional UPDATE, in the caller's transaction), the rest
    find the mark and queue nothing, and the job clears the mark when it starts, so that a
    change committed during a run is refreshed by a run of its own. True when queued."""
    now = timezone.now()
    stale = now - timedelta(seconds=GATE_REFRESH_STALE_SECONDS)
    marked = (
        StudyGate.objects.filter(study_id=study_id)
        .filter(Q(refresh_requested_at__isnull=True) | Q(refresh_requested_at__lt=stale))
        .update(refresh_requested_at=now)
    )
    if not marked and StudyGate.objects.filter(study_id=study_id).exists():
        return False  # a refresh is queued and has not started: it will see this change
    queue_job(STUDY_GATE_REFRESH, study_id)
    return True
