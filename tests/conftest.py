"""Service markers: a test marked ``postgres``, ``redis`` or ``worker`` skips with its
reason when the service is absent, except under CI=true, where that is a failure."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import pytest
from hypothesis import settings as hypothesis_settings

CI = os.environ.get("CI", "").strip().lower() == "true"

# Property tests check values, never time: on a busy 2-core machine one example of a
# canonical-JSON property once took longer than hypothesis's default 200 ms deadline and
# failed a run. Speed is measured by bench/, not by tests.
hypothesis_settings.register_profile("claimgate", deadline=None, print_blob=True)
hypothesis_settings.load_profile("claimgate")


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


#: A ceiling for a process or a condition that never comes (a hang), not a measure of
#: speed: the waits below end as soon as what they wait for happens, and fail at once when
#: the process they wait on dies.
HANG_SECONDS = 600


def wait_until(
    condition: Callable[[], bool],
    *,
    what: str,
    alive: Callable[[], bool] = lambda: True,
    log: Callable[[], str] = lambda: "",
) -> None:
    """Poll ``condition`` until it holds. Fails when ``alive()`` turns false (the process
    that should make it hold has died) or after HANG_SECONDS."""
    import time

    deadline = time.monotonic() + HANG_SECONDS
    while not condition():
        if not alive():
            raise AssertionError(f"the process died while waiting for {what}\n{log()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never came (hung?)\n{log()[-3000:]}")
        time.sleep(0.1)


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

    def wait_until(self, condition: Callable[[], bool], *, what: str) -> None:
        """Wait for ``condition`` while this worker lives (its log goes with a failure)."""
        wait_until(condition, what=what, alive=self.alive, log=self.log)

    def wait_ready(self) -> Worker:
        """Wait until the worker consumes from its queue (it logs "ready.")."""
        self.wait_until(lambda: " ready." in self.log(), what="the worker to be ready")
        return self

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
                self.process.wait(timeout=20)  # else killed: no test depends on a warm stop
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


class PrivateRedis:
    """A redis-server of the test's own on a free port, in a directory of its own, with
    no persistence. Tests that stop a broker stop this one (by its process), never the
    Redis that CELERY_BROKER_URL names, which other runs on the machine may share."""

    def __init__(self, directory) -> None:
        self.directory = directory
        self.port = 0
        self.process = None
        self._log = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self) -> PrivateRedis:
        """Start on a free port (or on its port again after ``stop``) and wait until it
        answers PING."""
        import subprocess

        # A port found free can be taken by another process before the server binds it:
        # the server then exits, and another port is tried.
        for _ in range(1 if self.port else 20):
            port = self.port or _free_port()
            self._log = open(self.directory / "redis.log", "ab")  # noqa: SIM115 - closed in stop()
            self.process = subprocess.Popen(
                [
                    *("redis-server", "--port", str(port), "--bind", "127.0.0.1"),
                    *("--save", "", "--appendonly", "no", "--dir", str(self.directory)),
                ],
                stdout=self._log,
                stderr=subprocess.STDOUT,
            )
            wait_until(
                lambda port=port: not self.alive() or _answers_ping(port),
                what="the private Redis to answer",
                log=self.log,
            )
            if self.alive():
                self.port = port
                return self
            self.stop()
        raise AssertionError(f"the private Redis did not start\n{self.log()[-3000:]}")

    def stop(self) -> None:
        """Stop this server (its own process, by its id) and wait until it is gone."""
        import subprocess

        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=HANG_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), 5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture
def private_redis(tmp_path):
    """A started :class:`PrivateRedis`, stopped after the test whatever happened."""
    directory = tmp_path / "redis"
    directory.mkdir()
    server = PrivateRedis(directory).start()
    yield server
    server.stop()


ROOT = Path(__file__).resolve().parent.parent


def service_env(**extra: str) -> dict[str, str]:
    """The environment of a process the test starts (a worker, a web process): this one's,
    with the test settings and the test database (DATABASE_URL rewritten to it)."""
    from django.db import connection

    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings.test")
    settings_dict = connection.settings_dict
    if connection.vendor == "postgresql":
        env["DATABASE_URL"] = (
            f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:"
            f"{settings_dict['PORT']}/{settings_dict['NAME']}"
        )
    env.update(extra)
    return env


@pytest.fixture
def celery_workers(tmp_path):
    """Start real Celery workers: ``start(**env)`` returns a :class:`Worker`. Workers use
    the test database (DATABASE_URL is rewritten to it) and are stopped afterwards."""
    started: list[Worker] = []

    def start(**extra: str) -> Worker:
        worker = Worker(ROOT, service_env(**extra), tmp_path / f"worker-{len(started)}.log")
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture(autouse=True, scope="session")
def _flush_despite_append_only_triggers():
    """Let Django empty append-only tables between transactional tests: on SQLite through
    the maintenance flag of audit.triggers; on PostgreSQL, where Django empties them with
    the TRUNCATE that the history tables refuse, as a superuser in replica mode (no
    ordinary trigger fires; only a superuser may set it, so the suite's login must be one,
    as CI's is)."""
    from django.db import connections
    from django.test import TransactionTestCase

    from audit.triggers import maintenance

    original = TransactionTestCase._fixture_teardown

    def teardown(self):
        postgres = [
            connections[alias]
            for alias in self._databases_names(include_mirrors=False)
            if connections[alias].vendor == "postgresql"
        ]
        for connection in postgres:
            with connection.cursor() as cursor:
                cursor.execute("SET session_replication_role = replica")
        try:
            with maintenance():
                original(self)
        finally:
            for connection in postgres:
                with connection.cursor() as cursor:
                    cursor.execute("RESET session_replication_role")

    TransactionTestCase._fixture_teardown = teardown
    yield
    TransactionTestCase._fixture_teardown = original


@pytest.fixture(autouse=True)
def _fresh_local_cache():
    """Each test starts with an empty local-memory cache (the embedded default and CI's
    web processes in one pytest process): the submit limit's log and the debounce marks
    are keyed by ids that a database hands out again after a test's rollback. A shared
    cache (CACHE_URL) is never cleared here."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["default"], LocMemCache):
        caches["default"].clear()
    from audit.queueing import marks_clear

    # The coalescing marks kept beside a Redis broker's queue (this database's only); with
    # no broker reachable nothing was marked there either.
    with contextlib.suppress(Exception):
        marks_clear()


@pytest.fixture(autouse=True, scope="session")
def _queue_seed_from_environment():
    """``CLAIMGATE_TEST_QUEUE_SEED=N`` gives every study of the run the queue seed N
    instead of a random one. A test that depends on which unit a seeded queue reaches
    first (instead of assigning the unit it is about) fails for some seeds only: running
    the suite under a few seeds (``make test-seeds``) finds it."""
    value = os.environ.get("CLAIMGATE_TEST_QUEUE_SEED", "").strip()
    if not value:
        yield
        return
    import types

    from annotator.labelling import models

    # The field's default stays the callable (the migration check compares it): the
    # callable's source of randomness answers N instead.
    before = models.secrets
    models.secrets = types.SimpleNamespace(randbits=lambda bits: int(value))
    try:
        yield
    finally:
        models.secrets = before
