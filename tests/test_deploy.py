"""The production settings path: `check --deploy` is clean, and a weak key is refused."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "CACHE_URL"}}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        CACHE_URL="redis://127.0.0.1:6379/1",
    )
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_passes_at_warning_level():
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=secrets.token_urlsafe(64)
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_refuses_a_missing_secret_key():
    result = manage("check")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_refuses_the_development_key():
    result = manage("check", SECRET_KEY="django-insecure-claimgate-development-only")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_refuses_a_cache_that_each_process_keeps_to_itself():
    result = manage("check", SECRET_KEY=secrets.token_urlsafe(64), CACHE_URL="")
    assert result.returncode != 0
    assert "CACHE_URL must name a Redis server" in result.stderr


@pytest.mark.parametrize(
    "entry",
    [
        ["manage.py", "check"],
        ["-c", "import config.wsgi"],
        ["-c", "import config.asgi"],
        ["-c", "from config.celery import app; app.loader.import_default_modules()"],
    ],
    ids=["manage.py", "wsgi", "asgi", "celery"],
)
def test_without_a_settings_module_every_entry_point_fails_closed(entry):
    """Unset DJANGO_SETTINGS_MODULE means production: no DEBUG, no public key."""
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "DJANGO_SETTINGS_MODULE", "DEBUG"}
    }
    result = subprocess.run(
        [sys.executable, *entry],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
