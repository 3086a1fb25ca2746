"""Partitions, thresholds, the freeze and study versions: pages and API
(mounted by config.urls)."""

from django.urls import path

from audit.partitions import api, views

urlpatterns = [
    path(
        "studies/<slug:slug>/partitions/",
        views.study_partitions,
        name="study-partitions",
    ),
    path(
        "studies/<slug:slug>/partitions/rule/",
        views.study_partitions_rule,
        name="study-partitions-rule",
    ),
    path(
        "studies/<slug:slug>/partitions/file/",
        views.study_partitions_file,
        name="study-partitions-file",
    ),
    path(
        "studies/<slug:slug>/partitions/thresholds/",
        views.study_thresholds,
        name="study-thresholds",
    ),
    path(
        "studies/<slug:slug>/partitions/freeze/",
        views.study_freeze_view,
        name="study-freeze",
    ),
    path(
        "studies/<slug:slug>/partitions/version/",
        views.study_version_new,
        name="study-version-new",
    ),
]

api_urlpatterns = [
    path(
        "studies/<slug:slug>/partitions/",
        api.PartitionsApi.as_view(),
        name="api-study-partitions",
    ),
    path(
        "studies/<slug:slug>/partitions/rule/",
        api.PartitionRuleApi.as_view(),
        name="api-study-partitions-rule",
    ),
    path(
        "studies/<slug:slug>/partitions/file/",
        api.PartitionFileApi.as_view(),
        name="api-study-partitions-file",
    ),
    path(
        "studies/<slug:slug>/thresholds/",
        api.StudyThresholdsApi.as_view(),
        name="api-study-thresholds",
    ),
    path(
        "studies/<slug:slug>/freeze/",
        api.StudyFreezeApi.as_view(),
        name="api-study-freeze",
    ),
]
