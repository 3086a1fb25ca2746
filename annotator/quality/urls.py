"""The quality page and its API (mounted by config.urls)."""

from django.urls import path

from annotator.quality import api, views

urlpatterns = [
    path("studies/<slug:slug>/quality/", views.study_quality, name="study-quality"),
    path(
        "studies/<slug:slug>/quality/annotators/<int:user_id>/pause",
        views.annotator_pause_toggle,
        name="study-quality-pause",
    ),
]

api_urlpatterns = [
    path("studies/<slug:slug>/gold/", api.GoldApi.as_view(), name="api-gold"),
    path("studies/<slug:slug>/gold/file/", api.GoldFileApi.as_view(), name="api-gold-file"),
    path("studies/<slug:slug>/quality/", api.QualityApi.as_view(), name="api-quality"),
    path(
        "studies/<slug:slug>/annotators/<int:user_id>/pause/",
        api.AnnotatorPauseApi.as_view(),
        name="api-annotator-pause",
    ),
]
