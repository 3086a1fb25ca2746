"""The Content-Security-Policy is enforced, exactly as written, on every kind of page and
in every environment."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent.parent

POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
    "base-uri": ["'none'"],
    "object-src": ["'none'"],
}


def directives(header: str) -> dict[str, list[str]]:
    """The header as directive → sources (django-csp does not fix the directives' order)."""
    parsed: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *sources = part.split()
        assert name not in parsed, f"directive {name} twice"
        parsed[name] = sources
    return parsed


def assert_enforced(response) -> None:
    assert "Content-Security-Policy-Report-Only" not in response
    assert directives(response["Content-Security-Policy"]) == POLICY


def test_policy_on_the_login_page(client):
    response = client.get(reverse("login"))

    assert response.status_code == 200
    assert_enforced(response)


def test_policy_on_the_admin_login(client):
    response = client.get(reverse("admin:login"))

    assert response.status_code == 200
    assert_enforced(response)


def test_policy_on_pages_of_a_signed_in_researcher(client, study, people):
    client.force_login(people["researcher"])

    for url in (
        reverse("home"),
        reverse("study-detail", args=[study.slug]),
        reverse("study-people", args=[study.slug]),
        reverse("admin:index"),  # not staff: the admin's own login page
    ):
        response = client.get(url)
        assert response.status_code in (200, 302), url
        assert_enforced(response)


def test_policy_on_the_admin_of_a_superuser(client, people):
    client.force_login(people["admin"])

    for url in (reverse("admin:index"), reverse("admin:auth_user_changelist")):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_enforced(response)


def test_policy_on_the_api(client, people):
    token = Token.objects.create(user=people["researcher"])

    response = client.get(reverse("api-studies"), HTTP_AUTHORIZATION=f"Token {token.key}")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert_enforced(response)


def test_policy_on_the_swagger_ui_and_its_script(client, people):
    client.force_login(people["researcher"])

    page = client.get(reverse("api-docs"))
    script = client.get(reverse("api-docs") + "?script=")

    assert page.status_code == 200
    assert_enforced(page)
    # The page loads its init script from a URL (no inline script) and has no inline style.
    assert b"<style" not in page.content
    assert b'src="/api/docs/?script="' in page.content
    assert script["Content-Type"].startswith("application/javascript")
    assert_enforced(script)


def test_policy_on_refusals_and_errors(client, study, people):
    client.force_login(people["annotator"])

    forbidden = client.get(reverse("study-people", args=[study.slug]))
    missing = client.get("/no/such/page/")

    assert forbidden.status_code == 403
    assert_enforced(forbidden)
    assert missing.status_code == 404
    assert_enforced(missing)


def settings_of(module: str) -> dict:
    """Selected settings as another settings module defines them, read in a fresh process."""
    code = (
        "import json; from django.conf import settings as s; print(json.dumps({"
        "'csp': s.CONTENT_SECURITY_POLICY, "
        "'csp_ro': getattr(s, 'CONTENT_SECURITY_POLICY_REPORT_ONLY', None), "
        "'middleware': s.MIDDLEWARE, 'backends': s.AUTHENTICATION_BACKENDS, "
        "'axes_enabled': getattr(s, 'AXES_ENABLED', True), "
        "'failure_limit': s.AXES_FAILURE_LIMIT, "
        "'cooloff_seconds': s.AXES_COOLOFF_TIME.total_seconds(), "
        "'session_samesite': s.SESSION_COOKIE_SAMESITE, "
        "'csrf_samesite': s.CSRF_COOKIE_SAMESITE, "
        "'session_secure': s.SESSION_COOKIE_SECURE, 'csrf_secure': s.CSRF_COOKIE_SECURE, "
        "'session_age': s.SESSION_COOKIE_AGE}))"
    )
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"LOGIN_FAILURE_LIMIT", "LOGIN_LOCKOUT_MINUTES", "SESSION_COOKIE_AGE"}
    }
    environment.update(
        DJANGO_SETTINGS_MODULE=module,
        SECRET_KEY=secrets.token_urlsafe(64),
        CACHE_URL="redis://127.0.0.1:6379/1",
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
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "module", ["config.settings.dev", "config.settings.test", "config.settings.production"]
)
def test_every_environment_enforces_the_same_policy(module):
    values = settings_of(module)

    assert values["csp"]["DIRECTIVES"] == POLICY
    assert "EXCLUDE_URL_PREFIXES" not in values["csp"]
    assert values["csp_ro"] is None
    assert "config.csp.CSPMiddleware" in values["middleware"]  # django-csp's, cached
    assert values["middleware"][-1] == "axes.middleware.AxesMiddleware"
    assert values["backends"][0] == "axes.backends.AxesStandaloneBackend"
