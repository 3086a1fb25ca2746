"""/healthz tells whether the database, the broker and a worker can be reached."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.django_db


def test_healthz_reports_each_dependency(client):
    response = client.get("/healthz")

    body = response.json()
    assert set(body) == {"ok", "database", "broker", "workers"}
    assert body["database"]["ok"] is True
    assert response.status_code == (200 if body["ok"] else 503)


@pytest.mark.redis
def test_healthz_reaches_the_redis_broker(client):
    body = client.get("/healthz").json()
    assert body["broker"] == {"ok": True, "mode": "broker"}


@pytest.mark.worker
def test_healthz_sees_a_running_worker(client, celery_workers):
    worker = celery_workers()
    deadline = time.monotonic() + 60
    body = client.get("/healthz").json()
    while body["workers"]["count"] == 0 and time.monotonic() < deadline:
        assert worker.alive(), worker.log()
        time.sleep(0.5)
        body = client.get("/healthz").json()
    assert body["workers"]["ok"] is True
    assert body["workers"]["count"] >= 1
    assert body["ok"] is True
