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
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from celery import current_app
from django.core.cache import cache
from django.db import DatabaseError, connection, transaction

logger = logging.getLogger("claimgate.jobs")

LABEL_SUBMITTED = "claimgate.label_submitted"
OUTCOMES_PROCESS = "claimgate.outcomes_process"
LABEL_ADJUDICATED = "claimgate.label_adjudicated"
OUTCOMES_SWEEP = "claimgate.outcomes_sweep"
STUDY_GATE_REFRESH = "claimgate.study_gate_refresh"
STUDY_REPORT_REFRESH = "claimgate.study_report_refresh"
RELEASE_BUILD = "claimgate.release_build"
STUDY_OUTCOMES_REFRESH = "claimgate.study_outcomes_refresh"
STUDY_QUALITY_REFRESH = "claimgate.study_quality_refresh"
STUDY_COMPARISON_REFRESH = "claimgate.study_comparison_refresh"
#: New outcomes of a study's labels: queue the recount of each large protocol setting's
#: stored comparisons that read them (metrics decides which; the label jobs cannot).
STUDY_COMPARISON_FOLLOW = "claimgate.study_comparison_follow"
#: Annotators added, or units imported: draw the study's queue orders that are missing
#: (or empty) ahead of their first request (annotator.labelling.services).
QUEUE_ORDERS_DRAW = "claimgate.queue_orders_draw"
#: Every job name; each is registered by one ``jobs`` module listed in CELERY_IMPORTS.
JOBS = (
    LABEL_SUBMITTED,
    OUTCOMES_PROCESS,
    LABEL_ADJUDICATED,
    OUTCOMES_SWEEP,
    STUDY_GATE_REFRESH,
    STUDY_REPORT_REFRESH,
    RELEASE_BUILD,
    STUDY_OUTCOMES_REFRESH,
    STUDY_QUALITY_REFRESH,
    STUDY_COMPARISON_REFRESH,
    STUDY_COMPARISON_FOLLOW,
    QUEUE_ORDERS_DRAW,
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


def _send(name: str, args: tuple, countdown: float = 0) -> None:
    if current_app.conf.task_always_eager:
        _run_here(name, args)  # no waiting in eager mode: the job runs now
        return
    try:
        if countdown:
            current_app.send_task(name, args=args, retry=False, countdown=countdown)
        else:
            current_app.send_task(name, args=args, retry=False)
    except Exception:  # the broker is down or refuses: never lose the write
        logger.warning("could not queue %s%r; the sweep will catch up", name, args)


def queue_job(name: str, *args: object, countdown: float = 0) -> None:
    """Queue the job registered as ``name`` once the current transaction commits; with a
    ``countdown``, for a worker to start it that many seconds later."""
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
        if countdown:
            _send(name, args, countdown)
        else:
            _send(name, args)

    transaction.on_commit(send)


#: How long a queued coalesced job keeps others of its name and study from queueing: a
#: message lost on the way (the broker restarted) delays the work by at most this long,
#: since the next event after it queues again (and the sweep catches outcomes up).
DEBOUNCE_SECONDS = 60
MARK_PREFIX = "claimgate:queued"

_mark_clients: dict[str, Any] = {}


def _marks_redis() -> Any | None:
    """Where the marks live: the broker's own Redis, beside the queue they describe, so
    that every web process and every worker that shares the queue shares the marks. None
    in eager mode (the job runs in this process: the local cache will do) or with a broker
    that is not Redis (then the cache, which production requires to be a shared Redis)."""
    if current_app.conf.task_always_eager:
        return None
    url = str(current_app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    client = _mark_clients.get(url)
    if client is None:
        import redis

        client = _mark_clients[url] = redis.Redis.from_url(
            url, socket_timeout=2, socket_connect_timeout=2
        )
    return client


def debounce_key(name: str, study_id: int) -> str:
    # The database's name too: a study id means something only in its database.
    return f"{MARK_PREFIX}:{connection.settings_dict['NAME']}:{name}:{study_id}"


def _mark(name: str, study_id: int, seconds: int) -> bool:
    key = debounce_key(name, study_id)
    client = _marks_redis()
    if client is None:
        return bool(cache.add(key, 1, timeout=seconds))
    return bool(client.set(key, 1, nx=True, ex=seconds))


def queue_job_once(name: str, study_id: int, *, delay: float = 0) -> None:
    """Queue ``name(study_id)`` once the current transaction commits, unless one is
    already queued (and not yet started) for the study: a burst of events queues one
    job, not one per event. This is the one coalescing mechanism for every per-study
    refresh — outcomes, the gate, the reliability report, the outcome counts, the
    stored comparisons (Table II).

    The mark is taken after the commit (a rolled-back write marks nothing) with one
    atomic SET NX in the broker's Redis (:func:`_marks_redis`), so it adds no database
    statement and no lock to the caller's transaction. The job calls
    :func:`debounce_release` as it starts, so an event during its run queues the next
    one; the mark expires by itself DEBOUNCE_SECONDS after the job was due.

    ``delay``: the job starts that many seconds after the first event (none in eager
    mode), so that a refresh whose cost grows with the study runs at most once per
    ``delay`` while people label, whatever the rate of events."""

    def mark_and_queue() -> None:
        try:
            marked = _mark(name, study_id, DEBOUNCE_SECONDS + math.ceil(delay))
        except Exception:  # a mark that cannot be taken must not lose the work
            logger.warning("could not mark %s(%s) as queued; queueing it anyway", name, study_id)
            marked = True
        if marked:
            queue_job(name, study_id, countdown=delay)  # after the commit: sent at once

    transaction.on_commit(mark_and_queue)


def queue_jobs_once(names: tuple[str, ...], study_id: int, *, delay: float = 0) -> None:
    """:func:`queue_job_once` for each of ``names`` (a job's follow-ups), their marks
    taken together after the commit: one round trip to the broker's Redis for all of
    them instead of one each, which a worker otherwise pays after every batch."""

    def mark_and_queue() -> None:
        seconds = DEBOUNCE_SECONDS + math.ceil(delay)
        try:
            marked = _marks(names, study_id, seconds)
        except Exception:  # a mark that cannot be taken must not lose the work
            logger.warning("could not mark %s(%s) as queued; queueing them", names, study_id)
            marked = [True] * len(names)
        for name, taken in zip(names, marked, strict=True):
            if taken:
                queue_job(name, study_id, countdown=delay)  # after the commit: sent at once

    transaction.on_commit(mark_and_queue)


def _marks(names: tuple[str, ...], study_id: int, seconds: int) -> list[bool]:
    client = _marks_redis()
    if client is None:
        return [_mark(name, study_id, seconds) for name in names]
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.set(debounce_key(name, study_id), 1, nx=True, ex=seconds)
    return [bool(taken) for taken in pipe.execute()]


def debounce_release(name: str, study_id: int) -> None:
    """Called by a coalesced job as it starts: from now on an event queues another run."""
    key = debounce_key(name, study_id)
    try:
        client = _marks_redis()
        if client is None:
            cache.delete(key)
        else:
            client.delete(key)
    except Exception:  # the mark then expires by itself
        logger.warning("could not clear the queued mark of %s(%s)", name, study_id)


def marks_clear() -> int:
    """Forget every queued mark of this database (tests: ids come back after a rollback)."""
    client = _marks_redis()
    if client is None:
        return 0
    keys = list(client.scan_iter(f"{MARK_PREFIX}:{connection.settings_dict['NAME']}:*"))
    return client.delete(*keys) if keys else 0


def queue_gate_refresh(study_id: int) -> None:
    """Queue the study's gate refresh (``STUDY_GATE_REFRESH``), coalesced as every
    per-study refresh is (:func:`queue_job_once`). Every event that can change a gate
    calls this — outcomes, an adjudication, a report, a partition change, a freeze."""
    queue_job_once(STUDY_GATE_REFRESH, study_id)


def queue_orders_draw(study_id: int) -> None:
    """Queue the drawing of the study's missing (or empty) queue orders
    (``QUEUE_ORDERS_DRAW``, coalesced as every per-study job is): after annotators are
    added, and after an import added units (its interfaces call this; the archive's core
    knows no person)."""
    queue_job_once(QUEUE_ORDERS_DRAW, study_id)
