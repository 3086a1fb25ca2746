"""Service markers: a test marked ``postgres``, ``redis`` or ``worker`` skips with its
reason when the service is absent, except under CI=true, where that is a failure."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from urllib.parse import urlparse

import pytest

CI = os.environ.get("CI", "").strip().lower() == "true"


def _postgres_problem() -> str | None:
    from django.db import connection

    if connection.vendor != "postgresql":
        return f"DATABASE_URL is not PostgreSQL (the database is {connection.vendor})"
    return None


def _redis_problem() -> str | None:
    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url.startswith("redis"):
        return "CELERY_BROKER_URL does not point at Redis"
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), 1):
            return None
    except OSError as exc:
        return f"Redis at {parsed.hostname}:{parsed.port} is unreachable ({exc.strerror})"


SERVICES: dict[str, Callable[[], str | None]] = {
    "postgres": _postgres_problem,
    "redis": _redis_problem,
    "worker": _redis_problem,
}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, problem_of in SERVICES.items():
        if item.get_closest_marker(marker) is None:
            continue
        problem = problem_of()
        if problem is None:
            continue
        if CI:
            pytest.fail(f"CI=true needs {marker}: {problem}", pytrace=False)
        pytest.skip(f"needs {marker}: {problem}")


@pytest.fixture
def celery_worker_process():
    """A real Celery worker process against the configured broker, stopped afterwards."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings.test")
    name = f"test-{os.getpid()}-{time.monotonic_ns()}@%h"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "-n",
            name,
        ],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(autouse=True, scope="session")
def _flush_despite_append_only_triggers():
    """Let Django empty append-only tables between transactional tests on SQLite."""
    from django.test import TransactionTestCase

    from audit.triggers import maintenance

    original = TransactionTestCase._fixture_teardown

    def teardown(self):
        with maintenance():
            original(self)

    TransactionTestCase._fixture_teardown = teardown
    yield
    TransactionTestCase._fixture_teardown = original
