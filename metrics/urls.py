"""The reliability report pages (mounted by config.urls)."""

from django.urls import path

from metrics import views

urlpatterns = [
    path("studies/<slug:slug>/reliability/", views.study_reliability, name="study-reliability"),
    path(
        "studies/<slug:slug>/reliability/status/",
        views.study_reliability_status,
        name="study-reliability-status",
    ),
    path(
        "studies/<slug:slug>/reliability/recompute/",
        views.study_reliability_recompute,
        name="study-reliability-recompute",
    ),
    path(
        "studies/<slug:slug>/reliability/csv/",
        views.study_reliability_csv,
        name="study-reliability-csv",
    ),
]
api_urlpatterns: list = []
