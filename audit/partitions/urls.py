"""Partitions, thresholds, the freeze and study versions: pages (mounted at the site root)
and API routes (mounted under /api/)."""

from django.urls import path

from audit.partitions import api as partition_api
from audit.partitions import views as partition_views

urlpatterns = [
    path(
        "studies/<slug:slug>/partitions/",
        partition_views.study_partitions,
        name="study-partitions",
    ),
    path(
        "studies/<slug:slug>/partitions/rule/",
        partition_views.study_partitions_rule,
        name="study-partitions-rule",
    ),
    path(
        "studies/<slug:slug>/partitions/file/",
        partition_views.study_partitions_file,
        name="study-partitions-file",
    ),
    path(
        "studies/<slug:slug>/partitions/thresholds/",
        partition_views.study_thresholds,
        name="study-thresholds",
    ),
    path(
        "studies/<slug:slug>/partitions/freeze/",
        partition_views.study_freeze_view,
        name="study-freeze",
    ),
    path(
        "studies/<slug:slug>/partitions/version/",
        partition_views.study_version_new,
        name="study-version-new",
    ),
]

api_urlpatterns = [
    path(
        "studies/<slug:slug>/partitions/",
        partition_api.PartitionsApi.as_view(),
        name="api-study-partitions",
    ),
    path(
        "studies/<slug:slug>/partitions/rule/",
        partition_api.PartitionRuleApi.as_view(),
        name="api-study-partitions-rule",
    ),
    path(
        "studies/<slug:slug>/partitions/file/",
        partition_api.PartitionFileApi.as_view(),
        name="api-study-partitions-file",
    ),
    path(
        "studies/<slug:slug>/freeze/",
        partition_api.StudyFreezeApi.as_view(),
        name="api-study-freeze",
    ),
]
