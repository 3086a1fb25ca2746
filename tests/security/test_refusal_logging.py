"""Every refused request leaves a log record with the user id, the method and the path,
and never the request body."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponseForbidden
from django.test import Client, RequestFactory
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotator.security import RefusalLogMiddleware

pytestmark = pytest.mark.django_db

SECURITY = "claimgate.security"


def refusals(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == SECURITY]


def test_a_view_refusal_is_logged_with_user_method_and_path(client, study, people, caplog):
    client.force_login(people["annotator"])
    url = reverse("study-people", args=[study.slug])

    with caplog.at_level(logging.WARNING):
        response = client.post(url, {"action": "overlap-set", "overlap": "7"})

    assert response.status_code == 403
    [record] = refusals(caplog)
    message = record.getMessage()
    assert record.levelno == logging.WARNING
    assert "status=403" in message
    assert f"user={people['annotator'].pk}" in message
    assert "method=POST" in message
    assert repr(url) in message
    # access.py says why; the body (here: the k someone tried to set) is in neither.
    assert any(r.name == "claimgate.access" for r in caplog.records)
    assert not any("overlap" in r.getMessage() and "7" in r.getMessage() for r in caplog.records)


def test_an_anonymous_api_request_is_logged(client, caplog):
    with caplog.at_level(logging.WARNING):
        response = client.get(reverse("api-studies"))

    assert response.status_code in (401, 403)
    [record] = refusals(caplog)
    assert f"status={response.status_code}" in record.getMessage()
    assert "user=None" in record.getMessage()
    assert "method=GET" in record.getMessage()


def test_a_bad_token_is_logged_without_the_token(client, caplog):
    with caplog.at_level(logging.WARNING):
        response = client.get(reverse("api-studies"), HTTP_AUTHORIZATION="Token not-a-real-token")

    assert response.status_code in (401, 403)
    [record] = refusals(caplog)
    assert "not-a-real-token" not in record.getMessage()


def test_a_drf_permission_refusal_names_the_token_user(client, study, people, caplog):
    token = Token.objects.create(user=people["annotator"])
    url = reverse("api-study-import", args=[study.slug])
    secret = "body-content-that-must-not-be-logged"

    with caplog.at_level(logging.WARNING):
        response = client.post(url, {"note": secret}, HTTP_AUTHORIZATION=f"Token {token.key}")

    assert response.status_code == 403
    [record] = refusals(caplog)
    assert f"user={people['annotator'].pk}" in record.getMessage()
    assert "method=POST" in record.getMessage()
    assert all(secret not in r.getMessage() for r in caplog.records)
    assert all(token.key not in r.getMessage() for r in caplog.records)


def test_a_csrf_failure_is_logged(study, people, caplog):
    client = Client(enforce_csrf_checks=True)
    client.force_login(people["researcher"])

    with caplog.at_level(logging.WARNING):
        response = client.post(
            reverse("study-people", args=[study.slug]), {"action": "overlap-set", "overlap": 3}
        )

    assert response.status_code == 403
    [record] = refusals(caplog)
    assert f"user={people['researcher'].pk}" in record.getMessage()


def test_a_hostile_path_cannot_forge_a_log_line(caplog):
    request = RequestFactory().get("/studies/x%0A2026-01-01 WARNING forged/")
    request.user = AnonymousUser()
    middleware = RefusalLogMiddleware(lambda request: HttpResponseForbidden())

    with caplog.at_level(logging.WARNING):
        middleware(request)

    [record] = refusals(caplog)
    assert "\n" not in record.getMessage()
    assert "\\n2026-01-01" in record.getMessage()


def test_allowed_requests_are_not_logged_as_refusals(client, study, people, caplog):
    client.force_login(people["researcher"])

    with caplog.at_level(logging.WARNING):
        client.get(reverse("study-people", args=[study.slug]))

    assert refusals(caplog) == []
