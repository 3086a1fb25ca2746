"""The submit limit is one count per person, whichever web process answers.

Two separate server processes share the Redis cache (``CACHE_URL``); requests alternate
between them. Under a limit of 10 per minute, exactly 10 pass and the rest are refused with
429 and a Retry-After, on both servers. The page's submit and the API's share the count.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
import uuid

import pytest
import redis
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotator.labelling.services import assignment_next
from annotator.labelling.throttling import parse_rate, take
from tests.annotation.conftest import add_people, make_study
from tests.servers import Gunicorn, database_url

LIMIT = 10


@pytest.fixture
def two_servers(transactional_db, tmp_path):
    broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DATABASE_URL=database_url(),
        CACHE_URL=broker.rsplit("/", 1)[0] + "/1",
        CACHE_KEY_PREFIX=f"test-{uuid.uuid4().hex}",
        # Per hour: the 30 requests below fall in one window on any machine, however busy.
        SUBMIT_RATE=f"{LIMIT}/hour",
        PYTHONUNBUFFERED="1",
    )
    servers = [Gunicorn(env, tmp_path / f"server-{n}.log") for n in range(2)]
    try:
        for server in servers:
            server.wait_ready()
        yield servers
    finally:
        for server in servers:
            server.stop()


@pytest.mark.postgres
@pytest.mark.redis
def test_one_annotator_cannot_pass_the_limit_by_spreading_requests_over_processes(
    two_servers,
):
    study = make_study("limit", "source-risk-1.0.0", "source-risk.jsonl")
    annotator = add_people(study)["ann_a"]
    assignment = assignment_next(study=study, annotator=annotator)
    token = Token.objects.create(user=annotator).key
    path = reverse("api-assignment-labels", kwargs={"assignment_id": assignment.pk})

    statuses: dict[int, list[int]] = {0: [], 1: []}
    retry_after = []
    for n in range(3 * LIMIT):
        which = n % 2
        # An empty body: the limit is checked before the body is read, so every request
        # that passes it answers 400 and every refused one 429.
        request = urllib.request.Request(  # noqa: S310
            f"{two_servers[which].url}{path}",
            data=b"{}",
            method="POST",
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                status, headers = response.status, response.headers
        except urllib.error.HTTPError as refused:
            status, headers = refused.code, refused.headers
        statuses[which].append(status)
        if status == 429:
            retry_after.append(int(headers["Retry-After"]))

    every = statuses[0] + statuses[1]
    assert set(every) == {400, 429}, every
    assert every.count(400) == LIMIT
    assert 429 in statuses[0]
    assert 429 in statuses[1]
    assert all(1 <= seconds <= 3600 for seconds in retry_after)


@pytest.mark.redis
def test_the_shared_log_counts_a_sliding_window(settings):
    broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": broker.rsplit("/", 1)[0] + "/1",
            "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
        }
    }
    server = redis.Redis.from_url(settings.CACHES["default"]["LOCATION"])

    def server_seconds() -> float:
        seconds, micros = server.time()  # the clock the sliding log counts by
        return seconds + micros / 1e6

    # Four requests must fall in one window to show the refusal. The window is a time,
    # and a busy machine may need longer than a second for four: then nothing was shown,
    # and the same is tried with a window twice as long.
    period = 1
    while True:
        key = f"window-{uuid.uuid4().hex}"
        began = server_seconds()
        allowed = [take(key, limit=3, period=period) for _ in range(3)]
        wait = take(key, limit=3, period=period)
        if server_seconds() - began < period:
            break
        period *= 2
    assert allowed == [None, None, None]
    assert wait is not None
    assert 0 < wait <= period
    time.sleep(wait + 0.05)  # the window slides past the first request: one more fits
    assert take(key, limit=3, period=period) is None


def test_the_embedded_default_counts_in_its_own_cache():
    key = f"local-{uuid.uuid4().hex}"
    assert [take(key, limit=2, period=60) for _ in range(2)] == [None, None]
    assert 59 < take(key, limit=2, period=60) <= 60


@pytest.mark.parametrize(
    ("rate", "expected"),
    [
        ("120/minute", (120, 60)),
        ("5/s", (5, 1)),
        ("1000/hour", (1000, 3600)),
        ("2/day", (2, 86400)),
    ],
)
def test_rates_read_as_count_and_period(rate, expected):
    assert parse_rate(rate) == expected


@pytest.mark.parametrize("rate", ["fast", "10/fortnight", "/minute", "ten/minute"])
def test_a_malformed_rate_is_named(rate):
    with pytest.raises(ValueError, match="a rate is"):
        parse_rate(rate)


def test_the_page_submit_shares_the_limit_and_keeps_the_work(db, client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"submit": "2/minute"},
    }
    study = make_study("pagelimit", "source-risk-1.0.0", "source-risk.jsonl")
    annotator = add_people(study)["ann_a"]
    assignment = assignment_next(study=study, annotator=annotator)
    client.force_login(annotator)
    url = reverse("assignment-submit", kwargs={"pk": assignment.pk})
    work = '{"predicates": {"I": 1}, "rationale": "kept"}'

    first, second, third = (
        client.post(url, {"annotation": work, "client_submission_id": str(uuid.uuid4())})
        for _ in range(3)
    )

    assert (first.status_code, second.status_code) == (400, 400)
    assert third.status_code == 429
    assert 1 <= int(third["Retry-After"]) <= 60
    page = third.content.decode()
    assert "Too many submissions in a short time; nothing was stored" in page
    assert "kept" in page
