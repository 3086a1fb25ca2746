"""Release pages (mounted at the site root) and API (under /api/).

A release is named by ``<slug:study_slug>/releases/<slug:slug>``: the release's name is a
slug, and the blinding walk (tests/test_blinding.py) knows how to fill both parameters.
A file of a release is chosen by a query parameter checked against the release's own
list of files, never joined from the request.
"""

from django.urls import path

from audit.releases import api as release_api
from audit.releases import views as release_views

urlpatterns = [
    path("studies/<slug:slug>/releases/", release_views.study_releases, name="study-releases"),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/status/",
        release_views.release_status,
        name="release-status",
    ),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/download/",
        release_views.release_file,
        name="release-file",
    ),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/bundle.zip",
        release_views.release_zip,
        name="release-zip",
    ),
]

api_urlpatterns = [
    path("studies/<slug:slug>/releases/", release_api.ReleasesApi.as_view(), name="api-releases"),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/",
        release_api.ReleaseStatusApi.as_view(),
        name="api-release",
    ),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/file/",
        release_api.ReleaseFileApi.as_view(),
        name="api-release-file",
    ),
]
