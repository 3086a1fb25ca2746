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


def test_bad_lines_are_grouped_by_reason_paginated_and_counted_in_the_lines(client, study, people):
    """3 lines of broken JSON and 250 of invalid UTF-8 after the header: the page says
    so in two sentences, lists the kept lines 100 at a time, and reads 254 lines."""
    body = [b"{broken"] * 3 + [b'{"x": "\xff"}'] * 250
    data = jsonl(observation(1)).split(b"\n")[0] + b"\n" + b"\n".join(body) + b"\n"
    client.force_login(people["researcher"])

    response = client.post(
        reverse("study-import", args=[study.slug]), {"file": upload(data)}, follow=True
    )

    html = response.content.decode()
    groups = response.context["groups"]
    assert [(g["reason"], g["count"], g["lines"]) for g in groups] == [
        (codes.INVALID_UTF8, 250, [5, 6, 7, 8, 9]),
        (codes.MALFORMED_JSON, 3, [2, 3, 4]),
    ]
    assert "250 lines: <code>invalid_utf8</code></strong>, first at line 5" in html
    assert "253 bad lines: nothing was imported" in html
    assert response.context["batch"].lines == 254  # the header and every line after it
    assert len(response.context["errors"]) == 100
    assert 'href="?page=2" rel="next"' in html
    last = client.get(response.redirect_chain[-1][0] + "?page=3")
    assert [e["line"] for e in last.context["errors"]][-1] == 254
    assert len(last.context["errors"]) == 53


def test_a_refused_upload_keeps_the_page_gate_and_links(client, study, people):
    client.force_login(people["researcher"])

    response = client.post(reverse("study-import", args=[study.slug]), {})

    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="gate"' in html
    assert reverse("study-partitions", args=[study.slug]) in html
    assert reverse("study-people", args=[study.slug]) in html
    assert "This field is required" in html


def test_a_frozen_study_shows_no_import_form(client, study, people):
    from audit.partitions.models import StudyFreeze

    digest = "0" * 64
    StudyFreeze.objects.create(
        study=study,
        frozen_by=people["researcher"],
        codebook_digest=digest,
        pipelines=[],
        pipelines_digest=digest,
        thresholds={},
        thresholds_digest=digest,
        partition_digest=digest,
        partition_counts={},
    )
    client.force_login(people["researcher"])

    html = client.get(reverse("study-detail", args=[study.slug])).content.decode()

    assert 'id="import-frozen"' in html
    assert reverse("study-import", args=[study.slug]) not in html
