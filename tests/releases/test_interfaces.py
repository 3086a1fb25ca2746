"""The releases page and API: researchers only (an annotator gets 403, an outsider 404),
create queues the build, the status fragment polls while building, downloads are the
files of the manifest and a deterministic zip."""

from __future__ import annotations

import hashlib
import zipfile
from io import BytesIO

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotator.memberships.models import Membership, Role
from audit.releases import formats as rf
from audit.releases.jobs import release_build_job
from audit.releases.models import Release, ReleaseStatus
from audit.releases.services import release_build, release_create

pytestmark = pytest.mark.django_db


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def researcher(labelled):
    return client_for(labelled.people["res"])


def body(response):
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def test_the_page_warns_an_unfrozen_study_and_creates_a_release(
    labelled, researcher, django_capture_on_commit_callbacks
):
    url = reverse("study-releases", args=["rel"])
    page = researcher.get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert "This study is not frozen." in text
    assert "withholds the test partition" in text
    assert "1 unit will be left out" in text

    with django_capture_on_commit_callbacks() as queued:
        created = researcher.post(url, {"name": "v1"})
    assert created.status_code == 302
    assert len(queued) == 1  # the build job, queued after commit
    release = Release.objects.get(name="v1")
    assert release.status == ReleaseStatus.BUILDING
    assert 'hx-trigger="every 1s"' in researcher.get(url).content.decode()
    release_build_job.run(release.pk)  # what the worker does
    release.refresh_from_db()
    assert release.status == ReleaseStatus.READY
    assert release.created_by == labelled.people["res"]
    text = researcher.get(url).content.decode()
    assert "Download all (.zip)" in text
    assert release.manifest_sha256 in text
    assert "?file=SHA256SUMS" in text

    again = researcher.post(url, {"name": "v1"})
    assert again.status_code == 400
    assert "is immutable" in again.content.decode()
    assert researcher.post(url, {"name": "../x"}).status_code == 400


def test_the_study_page_links_to_releases(labelled, researcher):
    page = researcher.get(reverse("study-detail", args=["rel"])).content.decode()
    assert reverse("study-releases", args=["rel"]) in page


def test_the_status_fragment_polls_while_building_and_stops_when_ready(labelled, researcher):
    release = release_create(study=labelled.study, name="slow")
    Release.objects.filter(pk=release.pk).update(progress=42)
    url = reverse("release-status", args=["rel", "slow"])
    building = researcher.get(url).content.decode()
    assert 'hx-trigger="every 1s"' in building
    assert 'value="42"' in building
    from audit.releases.services import release_build_run

    release_build_run(release=release)
    ready = researcher.get(url).content.decode()
    assert "hx-trigger" not in ready
    assert "ready" in ready


def test_downloads_are_the_manifest_files_and_a_deterministic_zip(labelled, researcher):
    release = release_build(study=labelled.study, name="v1")
    file_url = reverse("release-file", args=["rel", "v1"])
    for name, info in release.files.items():
        response = researcher.get(file_url, {"file": name})
        assert response.status_code == 200
        assert hashlib.sha256(body(response)).hexdigest() == info["sha256"]
    assert researcher.get(file_url, {"file": "../../settings.py"}).status_code == 404
    assert researcher.get(file_url, {"file": "reliability.json"}).status_code == 404

    zip_url = reverse("release-zip", args=["rel", "v1"])
    first, second = body(researcher.get(zip_url)), body(researcher.get(zip_url))
    assert first == second
    with zipfile.ZipFile(BytesIO(first)) as archive:
        assert sorted(archive.namelist()) == sorted(f"rel-v1/{n}" for n in release.files)
    # Built again from scratch: the same zip.
    (rf.bundle_dir(release_root(labelled), "rel", "v1").parent / "v1.zip").unlink()
    assert body(researcher.get(zip_url)) == first


def release_root(labelled):
    from django.conf import settings

    return settings.RELEASES_ROOT


def test_api_lists_creates_with_202_and_reports_status(
    labelled, researcher, django_capture_on_commit_callbacks
):
    url = reverse("api-releases", args=["rel"])
    with django_capture_on_commit_callbacks() as queued:
        created = researcher.post(url, {"name": "api1"}, content_type="application/json")
    assert created.status_code == 202
    assert created.json()["status"] == "building"
    assert len(queued) == 1
    release_build_job.run(Release.objects.get(name="api1").pk)
    status_url = created["Location"]
    assert status_url.endswith(reverse("api-release", args=["rel", "api1"]))
    status = researcher.get(status_url).json()
    assert status["status"] == "ready"
    assert status["progress"] == 100
    assert set(status["files"]) == set(Release.objects.get(name="api1").files)
    listed = researcher.get(url).json()
    assert [item["name"] for item in listed] == ["api1"]
    file_url = reverse("api-release-file", args=["rel", "api1"])
    manifest = researcher.get(file_url, {"name": "SHA256SUMS"})
    assert hashlib.sha256(body(manifest)).hexdigest() == status["manifest_sha256"]
    refused = researcher.post(url, {"name": "api1"}, content_type="application/json")
    assert refused.status_code == 409
    assert refused.json()["reason"] == "release_exists"
    assert researcher.get(url, {"typo": "1"}).status_code == 400


@pytest.mark.parametrize(
    ("who", "code"), [("annotator", 403), ("adjudicator", 403), ("outsider", 404)]
)
def test_only_researchers_reach_releases(labelled, who, code):
    release_build(study=labelled.study, name="v1")
    if who == "outsider":
        user = get_user_model().objects.create_user("outsider", password="pw")
    else:
        user = labelled.people["ann_a" if who == "annotator" else "adj"]
        assert (
            Membership.objects.filter(user=user, study=labelled.study)
            .exclude(role=Role.RESEARCHER)
            .exists()
        )
    client = client_for(user)
    urls = [
        reverse("study-releases", args=["rel"]),
        reverse("release-status", args=["rel", "v1"]),
        reverse("release-file", args=["rel", "v1"]) + "?file=SHA256SUMS",
        reverse("release-zip", args=["rel", "v1"]),
        reverse("api-releases", args=["rel"]),
        reverse("api-release", args=["rel", "v1"]),
        reverse("api-release-file", args=["rel", "v1"]) + "?name=SHA256SUMS",
    ]
    for url in urls:
        assert client.get(url).status_code == code, url
    assert client.post(urls[0], {"name": "x"}).status_code == code
    assert client.post(urls[4], {"name": "x"}, content_type="application/json").status_code == code
    assert Release.objects.filter(study=labelled.study).count() == 1
    if who != "outsider":
        page = client.get(reverse("study-detail", args=["rel"])).content.decode()
        assert reverse("study-releases", args=["rel"]) not in page
