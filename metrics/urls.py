"""The reliability report pages and the prediction pages (mounted by config.urls), and the
prediction API (under /api/)."""

from django.urls import path

from metrics import api, comparison_views, prediction_views, views

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
    path(
        "studies/<slug:slug>/comparison/",
        comparison_views.study_comparison,
        name="study-comparison",
    ),
    path(
        "studies/<slug:slug>/comparison/csv/",
        comparison_views.study_comparison_csv,
        name="study-comparison-csv",
    ),
    path(
        "studies/<slug:slug>/predictions/",
        prediction_views.study_predictions,
        name="study-predictions",
    ),
    path(
        "studies/<slug:slug>/predictions/<int:prediction_set_id>/",
        prediction_views.study_prediction,
        name="study-prediction",
    ),
    path(
        "studies/<slug:slug>/predictions/<int:prediction_set_id>/rescore/",
        prediction_views.study_prediction_rescore,
        name="study-prediction-rescore",
    ),
    path(
        "studies/<slug:slug>/predictions/<int:prediction_set_id>/csv/",
        prediction_views.study_prediction_csv,
        name="study-prediction-csv",
    ),
]
api_urlpatterns = [
    path(
        "studies/<slug:slug>/predictions/",
        api.PredictionImportApi.as_view(),
        name="api-study-predictions",
    ),
    path(
        "studies/<slug:slug>/predictions/<int:prediction_set_id>/",
        api.PredictionSetDetailApi.as_view(),
        name="api-study-prediction",
    ),
]
