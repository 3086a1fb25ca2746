"""/healthz tells anyone up or down, and staff whether the database, the broker and a
worker can be reached."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_healthz_reports_each_dependency_to_staff(admin_client):
    response = admin_client.get("/healthz")

    body = response.json()
    assert set(body) == {"ok", "database", "broker", "workers", "outcomes"}
    assert body["database"]["ok"] is True
    assert body["outcomes"] == {"waiting": 0, "lag_seconds": 0.0}
    assert response.status_code == (200 if body["ok"] else 503)


@pytest.mark.parametrize("who", ["anonymous", "annotator"])
def test_healthz_tells_everyone_else_only_up_or_down(client, django_user_model, who):
    if who == "annotator":
        client.force_login(django_user_model.objects.create_user("ann", password="pw"))

    response = client.get("/healthz")

    assert set(response.json()) == {"ok"}
    assert response.status_code == (200 if response.json()["ok"] else 503)


@pytest.mark.redis
def test_healthz_reaches_the_redis_broker_and_counts_the_queue(admin_client):
    body = admin_client.get("/healthz").json()
    assert body["broker"]["ok"] is True
    assert body["broker"]["mode"] == "broker"
    assert isinstance(body["broker"]["queued"], int)


@pytest.mark.worker
def test_healthz_sees_a_running_worker(admin_client, celery_workers):
    client = admin_client
    worker = celery_workers().wait_ready()
    # A ready worker answers the ping, though on a busy machine maybe not within the
    # ping's second: ask again until it does.
    answers: list[dict] = []

    def counted() -> bool:
        answers.append(client.get("/healthz").json())
        return answers[-1]["workers"]["count"] >= 1

    worker.wait_until(counted, what="/healthz to count the worker")
    body = answers[-1]
    assert body["workers"]["ok"] is True
    assert body["workers"]["count"] >= 1
    assert body["ok"] is True


@pytest.mark.redis
def test_the_workers_answer_is_reused_for_a_few_seconds(admin_client):
    """A ping waits its whole timeout for replies; a monitor polling every second must
    not cost every caller that wait (nor the workers a ping each time)."""
    from django.core.cache import cache

    from config.health import WORKERS_CACHE_KEY

    cache.delete(WORKERS_CACHE_KEY)
    first = admin_client.get("/healthz").json()["workers"]
    second = admin_client.get("/healthz").json()["workers"]
    assert "checked_at" in first
    assert second == first  # the same answer, asked once
    cache.delete(WORKERS_CACHE_KEY)
    assert admin_client.get("/healthz").json()["workers"]["checked_at"] >= first["checked_at"]


def test_healthz_shows_staff_the_labels_waiting_for_their_outcome(admin_client):
    """The background work's lag: labels submitted whose outcome is not in the ledger yet,
    and how long the oldest has waited."""
    from datetime import timedelta

    from django.utils import timezone

    from annotator.labelling.models import OutcomeWaiting
    from tests.annotation.conftest import add_people, make_study
    from tests.ledger.test_outcome_batches import submit

    study = make_study("health", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    for name in ("ann_a", "ann_b"):
        submit(study, people[name])  # the test's transaction never commits: no job runs
    OutcomeWaiting.objects.update(created_at=timezone.now() - timedelta(seconds=30))

    outcomes = admin_client.get("/healthz").json()["outcomes"]

    assert outcomes["waiting"] == 2
    assert 30 <= outcomes["lag_seconds"] < 60
