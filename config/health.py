"""/healthz: can this process reach the database, the broker and a worker?

Anyone (a load balancer, a monitor) learns up or down: ``{"ok": true|false}`` with 200 or
503. Staff see what stands behind it: each dependency, the workers' names, how many jobs
wait in the queue, and how many labels wait for their outcome and for how long (the lag).
Names of hosts and queues are nobody else's business.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from annotator.labelling.selectors import outcomes_backlog
from config.celery import app as celery_app


def _database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return {"ok": False, "vendor": connection.vendor, "error": type(exc).__name__}
    return {"ok": True, "vendor": connection.vendor}


def _broker() -> dict[str, Any]:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"ok": True, "mode": "eager", "detail": "no broker: tasks run in the web process"}
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        return {"ok": False, "mode": "broker", "error": type(exc).__name__}
    return {"ok": True, "mode": "broker"}


def _queue_depth() -> int | None:
    """Jobs waiting in the app's queue (Redis broker only), None when it cannot be read."""
    try:
        with celery_app.connection_for_read() as conn:
            client = getattr(conn.default_channel, "client", None)
            if client is None:
                return None
            return int(client.llen(settings.CELERY_TASK_DEFAULT_QUEUE))
    except Exception:
        return None


#: A ping waits this long for workers' replies (it cannot know how many will answer).
PING_SECONDS = 1.0
#: How long the workers' answer is reused: a monitor polling every second costs the
#: workers one ping per this many seconds, and each caller waits for at most one ping.
WORKERS_CACHE_SECONDS = 10
WORKERS_CACHE_KEY = "claimgate:healthz:workers"


def _ping() -> dict[str, Any]:
    try:
        replies = celery_app.control.ping(timeout=PING_SECONDS) or []
    except Exception as exc:
        return {"ok": False, "count": 0, "error": type(exc).__name__}
    names = sorted(name for reply in replies for name in reply)
    return {"ok": bool(names), "count": len(names), "names": names}


def _workers(broker_ok: bool) -> dict[str, Any]:
    """The workers that answered a ping, as seen at most WORKERS_CACHE_SECONDS ago (the
    cache is shared by every web process in production), with when they were asked."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"ok": True, "count": 0, "detail": "eager mode needs no worker"}
    if not broker_ok:
        return {"ok": False, "count": 0, "detail": "broker unreachable"}
    seen = cache.get(WORKERS_CACHE_KEY)
    if seen is None:
        seen = {**_ping(), "checked_at": timezone.now().isoformat()}
        cache.set(WORKERS_CACHE_KEY, seen, timeout=WORKERS_CACHE_SECONDS)
    return seen


def _outcomes() -> dict[str, Any]:
    """Labels waiting for their outcome and how long the oldest has waited (seconds): the
    background work's lag, beside the queue's depth."""
    try:
        backlog = outcomes_backlog()
    except Exception as exc:
        return {"error": type(exc).__name__}
    lag = (timezone.now() - backlog.oldest).total_seconds() if backlog.oldest else 0.0
    return {"waiting": backlog.waiting, "lag_seconds": round(max(lag, 0.0), 1)}


def healthz(request: HttpRequest) -> JsonResponse:
    database = _database()
    broker = _broker()
    workers = _workers(broker["ok"])
    ok = database["ok"] and broker["ok"] and workers["ok"]
    status = 200 if ok else 503
    if not (request.user.is_authenticated and request.user.is_staff):
        return JsonResponse({"ok": ok}, status=status)
    if broker["ok"] and broker.get("mode") == "broker":
        broker["queued"] = _queue_depth()
    body = {
        "ok": ok,
        "database": database,
        "broker": broker,
        "workers": workers,
        "outcomes": _outcomes() if database["ok"] else {"error": "database unreachable"},
    }
    return JsonResponse(body, status=status)
