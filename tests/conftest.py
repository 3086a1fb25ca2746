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


class Worker:
    """One real Celery worker process; its output goes to a file the test can read."""

    def __init__(self, root, env: dict[str, str], log_path) -> None:
        import subprocess
        import sys
        import time

        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        name = f"test-{os.getpid()}-{time.monotonic_ns()}@%h"
        self.process = subprocess.Popen(
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
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "-n",
                name,
            ],
            cwd=root,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: the worker dies at once, in the middle of whatever it does."""
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        import signal
        import subprocess

        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


@pytest.fixture
def celery_workers(tmp_path):
    """Start real Celery workers: ``start(**env)`` returns a :class:`Worker`. Workers use
    the test database (DATABASE_URL is rewritten to it) and are stopped afterwards."""
    from pathlib import Path

    from django.db import connection

    root = Path(__file__).resolve().parent.parent
    started: list[Worker] = []

    def start(**extra: str) -> Worker:
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings.test")
        settings_dict = connection.settings_dict
        if connection.vendor == "postgresql":
            env["DATABASE_URL"] = (
                f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:"
                f"{settings_dict['PORT']}/{settings_dict['NAME']}"
            )
        env.update(extra)
        worker = Worker(root, env, tmp_path / f"worker-{len(started)}.log")
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


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
