"""Outcomes, records and the gate's Recompute button: pages (mounted by config.urls)."""

from django.urls import path

from audit.ledger import views

urlpatterns = [
    path("studies/<slug:slug>/outcomes/", views.study_outcomes_page, name="study-outcomes"),
    path(
        "studies/<slug:slug>/outcomes/csv/",
        views.study_outcomes_csv,
        name="study-outcomes-csv",
    ),
    path(
        "studies/<slug:slug>/records/<str:digest>/",
        views.study_record,
        name="study-record",
    ),
    path(
        "studies/<slug:slug>/gate/recompute/",
        views.study_gate_recompute,
        name="study-gate-recompute",
    ),
]

api_urlpatterns: list = []
