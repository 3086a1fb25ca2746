"""A real web server for tests that must see the app as a deployment does: gunicorn with
the production settings (DEBUG off, WhiteNoise, Redis cache), one sync worker, against the
test database (the test must use ``transactional_db`` so that the server sees its rows)."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import quote

from django.db import connection

from tests.conftest import HANG_SECONDS

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def database_url() -> str:
    s = connection.settings_dict
    password = f":{quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    return (
        f"postgres://{quote(s['USER'] or '')}{password}@{s['HOST'] or '127.0.0.1'}:"
        f"{s['PORT'] or 5432}/{s['NAME']}"
    )


def production_env(**extra: str) -> dict[str, str]:
    """The environment of ``make serve`` (config.settings.production), over plain HTTP on
    127.0.0.1, with the test's database and a cache namespace of its own."""
    broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    return dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY=secrets.token_urlsafe(64),
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=broker,
        CACHE_URL=broker,
        CACHE_KEY_PREFIX=f"test-{uuid.uuid4().hex}",
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="false",
        PYTHONUNBUFFERED="1",
        **extra,
    )


class Gunicorn:
    """``gunicorn config.wsgi`` with one worker; ``worker_pid`` is that worker's process."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self._log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "1",
                "--timeout",
                "300",
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self) -> Gunicorn:
        """Until the API answers (401 to an anonymous request: the app is loaded)."""
        deadline = time.monotonic() + HANG_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited:\n{self.log()[-3000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/api/studies/", timeout=10)  # noqa: S310
            except urllib.error.HTTPError as exc:
                if exc.code == 401:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"gunicorn never answered\n{self.log()[-3000:]}")

    @property
    def worker_pid(self) -> int:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        pids = [int(pid) for pid in children.read_text().split()]
        assert len(pids) == 1, pids
        return pids[0]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


def memory_kib(pid: int, field: str) -> int:
    """``VmRSS`` (resident now) or ``VmHWM`` (the peak so far) of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for process {pid}")
