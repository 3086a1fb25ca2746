"""The same import through the REST API and the study page, with access checked."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from audit.contract import codes
from tests.archive.builders import HEADER, jsonl, observation

pytestmark = pytest.mark.django_db


def upload(data: bytes, name: str = "obs.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/jsonl")


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_researcher_imports_through_the_api(study, people):
    url = reverse("api-study-import", args=[study.slug])

    created = api_as(people["researcher"]).post(url, {"file": upload(jsonl(observation(1)))})
    again = api_as(people["researcher"]).post(url, {"file": upload(jsonl(observation(1)))})

    assert created.status_code == 201, created.content
    assert created.json()["tuples_created"] == 2
    assert again.status_code == 200
    assert again.json()["status"] == "unchanged"


def test_a_rejected_file_answers_400_with_every_bad_line(study, people):
    url = reverse("api-study-import", args=[study.slug])

    response = api_as(people["researcher"]).post(
        url, {"file": upload(jsonl(observation(1), "{x", "[]"))}
    )

    assert response.status_code == 400
    body = response.json()
    assert body["status"] == "rejected"
    assert [(e["line"], e["reason"]) for e in body["errors"]] == [
        (3, codes.MALFORMED_JSON),
        (4, codes.NOT_AN_OBJECT),
    ]
    assert study.tuples.count() == 0


def test_hostile_text_and_nesting_answer_400_with_their_codes(study, people):
    url = reverse("api-study-import", args=[study.slug])
    nul = observation(1)
    nul["query"]["text"] = "Which router\x00 is best?"
    surrogate = observation(2)
    surrogate["sources"][0]["text"] = "review \udc00"
    deep = "[" * 100_000 + "]" * 100_000
    data = b"\n".join(
        [
            json.dumps(HEADER).encode(),
            json.dumps(nul).encode(),
            json.dumps(surrogate).encode(),
            deep.encode(),
        ]
    )

    response = api_as(people["researcher"]).post(url, {"file": upload(data)})

    assert response.status_code == 400
    assert [(e["line"], e["reason"]) for e in response.json()["errors"]] == [
        (2, codes.INVALID_TEXT),
        (3, codes.INVALID_TEXT),
        (4, codes.TOO_DEEP),
    ]
    assert study.tuples.count() == 0


@pytest.mark.parametrize(("who", "status"), [("annotator", 403), ("outsider", 404)])
def test_only_researchers_may_import(study, people, who, status):
    url = reverse("api-study-import", args=[study.slug])

    response = api_as(people[who]).post(url, {"file": upload(jsonl(observation(1)))})

    assert response.status_code == status
    assert study.tuples.count() == 0


def test_anonymous_api_access_is_refused(study):
    url = reverse("api-study-import", args=[study.slug])
    response = APIClient().post(url, {"file": upload(jsonl(observation(1)))})
    assert response.status_code in (401, 403)


def test_study_list_shows_only_member_studies(study, people):
    response = api_as(people["outsider"]).get(reverse("api-studies"))
    assert response.json() == []
    response = api_as(people["annotator"]).get(reverse("api-studies"))
    assert [s["slug"] for s in response.json()] == [study.slug]


def test_researcher_uploads_on_the_study_page_and_sees_the_result(client, study, people):
    client.force_login(people["researcher"])
    page = client.get(reverse("study-detail", args=[study.slug]))
    assert b"Import observations" in page.content

    response = client.post(
        reverse("study-import", args=[study.slug]),
        {"file": upload(jsonl(observation(1), "{broken"))},
        follow=True,
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert "Rejected: nothing imported" in html
    assert "malformed_json" in html
    assert "1 bad line" in html


def test_annotators_see_the_study_but_no_import_form(client, study, people):
    client.force_login(people["annotator"])
    page = client.get(reverse("study-detail", args=[study.slug]))
    assert page.status_code == 200
    assert b"Import observations" not in page.content
    forbidden = client.post(
        reverse("study-import", args=[study.slug]), {"file": upload(jsonl(observation(1)))}
    )
    assert forbidden.status_code == 403


def test_outsiders_do_not_learn_that_a_study_exists(client, study, people):
    client.force_login(people["outsider"])
    assert client.get(reverse("study-detail", args=[study.slug])).status_code == 404
