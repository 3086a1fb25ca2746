"""Release pages and API (mounted by config.urls).

A release is named by ``<slug:study_slug>/releases/<slug:slug>``: the release's name is a
slug, and the blinding walk (tests/test_blinding.py) knows how to fill both parameters.
A file of a release is chosen by a query parameter checked against the release's own
list of files, never joined from the request.
"""

from django.urls import path

from audit.releases import api, views

urlpatterns = [
    path("studies/<slug:slug>/releases/", views.study_releases, name="study-releases"),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/status/",
        views.release_status,
        name="release-status",
    ),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/download/",
        views.release_file,
        name="release-file",
    ),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/bundle.zip",
        views.release_zip,
        name="release-zip",
    ),
]

api_urlpatterns = [
    path("studies/<slug:slug>/releases/", api.ReleasesApi.as_view(), name="api-releases"),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/",
        api.ReleaseStatusApi.as_view(),
        name="api-release",
    ),
    path(
        "studies/<slug:study_slug>/releases/<slug:slug>/file/",
        api.ReleaseFileApi.as_view(),
        name="api-release-file",
    ),
]
