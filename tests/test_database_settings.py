"""The app's PostgreSQL sessions run without JIT compilation (config.settings.base):
PostgreSQL would compile, on every execution, a statement whose estimated cost passes
jit_above_cost, branches that never run included (docs/benchmarks.md, "The started-unit
walk under a backlog")."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.db import connection

from tests.conftest import ROOT

pytestmark = pytest.mark.django_db


@pytest.mark.postgres
def test_the_apps_sessions_run_without_jit():
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


def _options(environment: dict[str, str]) -> str:
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.DATABASES['default'].get('OPTIONS', {}).get('options', ''))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            **environment,
        },
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def test_the_option_is_sent_to_postgresql_only_and_db_jit_leaves_it():
    url = "postgres://someone@db.invalid:5432/claimgate"
    assert _options({"DATABASE_URL": url}) == "-c jit=off"
    assert _options({"DATABASE_URL": url, "DB_JIT": "1"}) == ""
    assert _options({}) == ""  # the embedded default (SQLite)
