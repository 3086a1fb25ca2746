""" "Missing" means missing: someone else's object and an object that does not exist give
the same status and the same body, on the API and on the pages."""

from __future__ import annotations

import re

from django.urls import reverse
from rest_framework.test import APIClient

from annotator.labelling.services import assignment_next
from tests.annotation.conftest import add_people, make_study


def _page(response) -> bytes:
    """A page's bytes without its CSRF token (masked anew on every render)."""
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]*"', b"", response.content)


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_someone_elses_assignment_reads_as_a_missing_one(db, client):
    study = make_study("nf", "source-risk-1.0.0", "source-risk.jsonl")
    people = add_people(study)
    theirs = assignment_next(study=study, annotator=people["ann_a"])
    missing = theirs.pk + 1000
    api = _api(people["ann_b"])

    for method, name in (
        ("get", "api-assignment"),
        ("get", "api-assignment-labels"),
        ("post", "api-assignment-labels"),
        ("put", "api-assignment-draft"),
    ):
        send = getattr(api, method)
        other = send(reverse(name, args=[theirs.pk]), {}, format="json")
        absent = send(reverse(name, args=[missing]), {}, format="json")
        assert other.status_code == absent.status_code == 404, (method, name)
        assert other.content == absent.content, (method, name)

    client.force_login(people["ann_b"])
    other = client.get(reverse("assignment-form", args=[theirs.pk]))
    absent = client.get(reverse("assignment-form", args=[missing]))
    assert other.status_code == absent.status_code == 404
    assert _page(other) == _page(absent)


def test_a_study_you_are_not_in_reads_as_a_missing_one(db, client, django_user_model):
    study = make_study("nf2", "source-risk-1.0.0", "source-risk.jsonl")
    add_people(study)
    outsider = django_user_model.objects.create_user("outsider", password="pw")
    api = _api(outsider)

    for name in ("api-assignments", "api-assignment-next", "api-releases"):
        other = api.get(reverse(name, kwargs={"slug": study.slug}))
        absent = api.get(reverse(name, kwargs={"slug": "no-such-study"}))
        assert other.status_code == absent.status_code, name
        assert other.content == absent.content, name

    client.force_login(outsider)
    for name in ("study-detail", "annotate-start", "study-outcomes"):
        other = client.get(reverse(name, kwargs={"slug": study.slug}))
        absent = client.get(reverse(name, kwargs={"slug": "no-such-study"}))
        assert other.status_code == absent.status_code == 404, name
        assert _page(other) == _page(absent), name
