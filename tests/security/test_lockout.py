"""Login lockout: a username tried from one address is locked after five failures for
fifteen minutes; the lockout page says nothing about the account; a success resets."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.test import RequestFactory
from django.urls import reverse

from annotator.security import client_ip
from tests.security.conftest import PASSWORD

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent.parent
LOGIN = "/accounts/login/"


def attempt(client, username: str, password: str, address: str = "127.0.0.1", **headers):
    return client.post(
        LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address, **headers
    )


def fail(client, username: str, times: int, address: str = "127.0.0.1") -> list:
    return [attempt(client, username, "wrong-password", address) for _ in range(times)]


def test_defaults_are_five_failures_and_fifteen_minutes(lockout):
    cool_off = lockout.AXES_COOLOFF_TIME

    assert lockout.AXES_FAILURE_LIMIT == 5
    assert cool_off == timedelta(minutes=15)
    assert lockout.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert lockout.AXES_RESET_ON_SUCCESS is True


def test_four_failures_leave_the_login_open(client, people, lockout):
    responses = fail(client, "annotator", 4)
    success = attempt(client, "annotator", PASSWORD)

    assert [r.status_code for r in responses] == [200] * 4  # the form again, with its error
    assert success.status_code == 302


def test_the_fifth_failure_locks_even_the_right_password_out(client, people, lockout):
    responses = fail(client, "annotator", 5)
    right = attempt(client, "annotator", PASSWORD)

    assert responses[-1].status_code == 429
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session
    assert b"Too many failed login attempts" in right.content
    assert right["Retry-After"] == str(15 * 60)
    assert "Content-Security-Policy" in right


def test_the_lockout_page_does_not_tell_whether_the_account_exists(client, people, lockout):
    fail(client, "annotator", 5)
    fail(client, "no-such-person", 5)

    real = attempt(client, "annotator", PASSWORD)
    unknown = attempt(client, "no-such-person", PASSWORD)

    assert real.status_code == unknown.status_code == 429
    assert real.content == unknown.content
    assert b"annotator" not in real.content
    assert b"Login paused" in real.content


def test_the_lock_is_for_the_pair_of_username_and_address(client, people, lockout):
    fail(client, "annotator", 5, address="203.0.113.7")

    from_elsewhere = attempt(client, "annotator", PASSWORD, address="198.51.100.2")
    client.logout()
    other_name_same_address = attempt(client, "researcher", PASSWORD, address="203.0.113.7")

    assert from_elsewhere.status_code == 302
    assert other_name_same_address.status_code == 302


def test_a_successful_login_resets_the_count(client, people, lockout):
    fail(client, "annotator", 4)
    assert attempt(client, "annotator", PASSWORD).status_code == 302
    client.logout()

    again = fail(client, "annotator", 4)
    success = attempt(client, "annotator", PASSWORD)

    assert [r.status_code for r in again] == [200] * 4
    assert success.status_code == 302


def test_the_lock_ends_after_the_cool_off(client, people, lockout):
    fail(client, "annotator", 5)
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=16)
    )

    assert attempt(client, "annotator", PASSWORD).status_code == 302


def test_api_clients_get_the_lockout_as_json(client, people, lockout):
    fail(client, "annotator", 5)

    response = attempt(client, "annotator", PASSWORD, HTTP_ACCEPT="application/json")

    assert response.status_code == 429
    assert response.json() == {
        "detail": "Too many failed login attempts. Logging in is paused for a while; "
        "try again later.",
        "code": "login_locked_out",
    }
    assert "Access-Control-Allow-Origin" not in response


def test_a_locked_out_login_gives_no_api_session(client, people, lockout):
    fail(client, "researcher", 5)
    attempt(client, "researcher", PASSWORD)

    assert client.get(reverse("api-studies")).status_code in (401, 403)


def test_the_api_uses_the_session_of_a_login_that_was_not_locked(client, people, lockout):
    fail(client, "researcher", 3)
    attempt(client, "researcher", PASSWORD)

    response = client.get(reverse("api-studies"))

    assert response.status_code == 200
    assert [study["slug"] for study in response.json()] == ["routers"]


def test_the_admin_login_is_locked_too(client, people, lockout):
    url = reverse("admin:login")
    for _ in range(5):
        client.post(url, {"username": "admin", "password": "wrong"})

    response = client.post(url, {"username": "admin", "password": PASSWORD})

    assert response.status_code == 429


def test_limit_and_duration_come_from_the_environment():
    code = (
        "from django.conf import settings as s; "
        "print(s.AXES_FAILURE_LIMIT, int(s.AXES_COOLOFF_TIME.total_seconds()))"
    )
    environment = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY=secrets.token_urlsafe(64),
        CACHE_URL="redis://127.0.0.1:6379/1",
        LOGIN_FAILURE_LIMIT="3",
        LOGIN_LOCKOUT_MINUTES="60",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["3", "3600"]


def test_the_client_address_is_remote_addr_without_a_trusted_proxy(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="203.0.113.9")

    assert client_ip(request) == "10.0.0.5"


def test_behind_a_proxy_the_address_it_saw_counts_not_what_the_client_claims(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    request = RequestFactory().get(
        "/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="1.2.3.4, 203.0.113.9"
    )
    bare = RequestFactory().get("/", REMOTE_ADDR="10.0.0.5")

    assert client_ip(request) == "203.0.113.9"
    assert client_ip(bare) == "10.0.0.5"


def test_the_login_page_warns_before_the_lockout_and_says_how_long_it_lasts(
    client, people, lockout
):
    first, second, third = (r.content.decode() for r in fail(client, "annotator", 3))

    assert "attempts left" not in first + second  # 4 and 3 left: no alarm yet
    assert (
        "2 attempts left</strong> before logging in as this user is paused for 15 minutes" in third
    )
    fourth = fail(client, "annotator", 1)[0].content.decode()
    assert "1 attempt left</strong>" in fourth
