"""/healthz: can this process reach the database, the broker and a worker?"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

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


def _workers(broker_ok: bool) -> dict[str, Any]:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"ok": True, "count": 0, "detail": "eager mode needs no worker"}
    if not broker_ok:
        return {"ok": False, "count": 0, "detail": "broker unreachable"}
    try:
        replies = celery_app.control.ping(timeout=1.0) or []
    except Exception as exc:
        return {"ok": False, "count": 0, "error": type(exc).__name__}
    names = sorted(name for reply in replies for name in reply)
    return {"ok": bool(names), "count": len(names), "names": names}


def healthz(request: HttpRequest) -> JsonResponse:
    database = _database()
    broker = _broker()
    workers = _workers(broker["ok"])
    ok = database["ok"] and broker["ok"] and workers["ok"]
    body = {"ok": ok, "database": database, "broker": broker, "workers": workers}
    return JsonResponse(body, status=200 if ok else 503)
