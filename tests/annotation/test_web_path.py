"""The loop's trimmed web path gives what DRF's and django-csp's own path gives.

Next and submit skip content negotiation when the request leaves no choice, submit
validates the plain shape of a submission without the serializer, and the CSP middleware
builds its header once per settings value (docs/benchmarks.md, "Follow-up: the web
process"): each compared here with the path it replaces.
"""

from __future__ import annotations

import uuid

import pytest
from csp.middleware import CSPMiddleware as LibraryCSPMiddleware
from csp.utils import build_policy
from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.test import APIRequestFactory

from annotator.labelling import api
from config.csp import CSPMiddleware

UUID = str(uuid.uuid4())

PLAIN = [
    {"annotation": {"kind": "x", "claims": [{"a": 1}], "n": None}, "client_submission_id": UUID},
    {"annotation": {}, "client_submission_id": UUID.upper()},
    {"annotation": {"a": 1}, "client_submission_id": UUID.replace("-", ""), "other": 3},
    {"annotation": {"assisted": {"model": "judge-1"}}, "client_submission_id": UUID},
    {"annotation": {"assisted": "text"}, "client_submission_id": f"urn:uuid:{UUID}"},
    {
        "annotation": {"assisted": {"model": "m" * api.ASSISTED_MODEL_MAX}},
        "client_submission_id": UUID,
    },
]
NOT_PLAIN = [
    [],
    "text",
    {"annotation": {"a": 1}, "client_submission_id": UUID, "assisted": {"model": "m"}},
    {"annotation": {"a": 1}, "client_submission_id": UUID, "assisted": None},
    {"annotation": [1], "client_submission_id": UUID},
    {"annotation": None, "client_submission_id": UUID},
    {"client_submission_id": UUID},
    {"annotation": {"a": 1}},
    {"annotation": {"a": 1}, "client_submission_id": "not-a-uuid"},
    {"annotation": {"a": 1}, "client_submission_id": 7},
    {"annotation": {"a": 1}, "client_submission_id": None},
    {
        "annotation": {"assisted": {"model": "m" * (api.ASSISTED_MODEL_MAX + 1)}},
        "client_submission_id": UUID,
    },
]


@pytest.mark.parametrize("body", PLAIN)
def test_a_plain_submission_reads_as_the_serializer_validates_it(body):
    payload = api.LabelsApi.Input(data=body)
    assert payload.is_valid(), payload.errors
    fields = api.submission_fields(body)
    assert fields == (
        payload.validated_data["annotation"],
        payload.validated_data["client_submission_id"],
    )
    assert type(fields[1]) is type(payload.validated_data["client_submission_id"])
    assert list(fields[0]) == list(payload.validated_data["annotation"])


@pytest.mark.parametrize("body", NOT_PLAIN)
def test_anything_else_goes_to_the_serializer(body):
    assert api.submission_fields(body) is None


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
@pytest.mark.parametrize("view_class", [api.AssignmentNextApi, api.LabelsApi])
def test_the_fixed_renderer_is_the_one_negotiation_picks(view_class, accept):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    view = view_class()
    request = view.initialize_request(APIRequestFactory().post("/api/x/", **headers))
    view.request, view.format_kwarg = request, None
    renderer, media_type = view.perform_content_negotiation(request)
    expected_renderer, expected_type = DefaultContentNegotiation().select_renderer(
        request, view.get_renderers(), None
    )
    assert (type(renderer), media_type) == (type(expected_renderer), expected_type)


@pytest.mark.parametrize(
    "accept", ["text/html", "application/json; indent=4", "application/xml", "text/*"]
)
def test_any_other_accept_is_negotiated(accept):
    view = api.LabelsApi()
    request = view.initialize_request(APIRequestFactory().post("/api/x/", HTTP_ACCEPT=accept))
    view.request, view.format_kwarg = request, None
    try:
        expected = DefaultContentNegotiation().select_renderer(request, view.get_renderers(), None)
    except Exception as refused:  # the same refusal is expected
        with pytest.raises(type(refused)):
            view.perform_content_negotiation(request)
        return
    renderer, media_type = view.perform_content_negotiation(request)
    assert (type(renderer), media_type) == (type(expected[0]), expected[1])


def _headers(middleware_class, path="/api/x/", response=None):
    middleware = middleware_class(lambda request: response or HttpResponse("x"))
    request = RequestFactory().get(path)
    middleware.process_request(request)
    answer = middleware.process_response(request, response or HttpResponse("x"))
    return {
        name: value for name, value in answer.items() if name.startswith("Content-Security-Policy")
    }


def test_the_cached_policy_is_django_csps_own():
    ours = _headers(CSPMiddleware)
    assert ours == _headers(LibraryCSPMiddleware)
    assert "Content-Security-Policy" in ours


def test_a_changed_policy_is_built_again():
    middleware = CSPMiddleware(lambda request: HttpResponse("x"))
    request = RequestFactory().get("/")
    first = middleware.process_response(request, HttpResponse("x"))["Content-Security-Policy"]
    policy = {"DIRECTIVES": {"default-src": ["'none'"]}}
    with override_settings(
        CONTENT_SECURITY_POLICY=policy, CONTENT_SECURITY_POLICY_REPORT_ONLY=policy
    ):
        changed = middleware.process_response(request, HttpResponse("x"))
        assert changed["Content-Security-Policy"] == "default-src 'none'"
        assert changed["Content-Security-Policy-Report-Only"] == "default-src 'none'"
        assert _headers(CSPMiddleware) == _headers(LibraryCSPMiddleware)
    again = middleware.process_response(request, HttpResponse("x"))
    assert again["Content-Security-Policy"] == first
    assert "Content-Security-Policy-Report-Only" not in again


def test_an_exempt_or_decorated_response_is_treated_as_django_csp_treats_it():
    exempt = HttpResponse("x")
    exempt._csp_exempt = True
    assert _headers(CSPMiddleware, response=exempt) == {}
    decorated = HttpResponse("x")
    decorated._csp_update = {"img-src": ["data:"]}
    ours = _headers(CSPMiddleware, response=decorated)
    assert "data:" in ours["Content-Security-Policy"]
    decorated = HttpResponse("x")
    decorated._csp_update = {"img-src": ["data:"]}
    assert ours == _headers(LibraryCSPMiddleware, response=decorated)


def test_a_nonce_read_goes_through_django_csp():
    middleware = CSPMiddleware(lambda request: HttpResponse("x"))
    request = RequestFactory().get("/")
    middleware.process_request(request)
    nonce = str(request.csp_nonce)
    answer = middleware.process_response(request, HttpResponse("x"))
    assert answer["Content-Security-Policy"] == build_policy(nonce=nonce)
