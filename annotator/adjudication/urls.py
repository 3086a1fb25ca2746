"""Pages for adjudicators (mounted by config.urls)."""

from django.urls import path

from annotator.adjudication import views

urlpatterns = [
    path("studies/<slug:slug>/adjudicate/", views.adjudication_queue, name="adjudication-queue"),
    path("adjudicate/<int:unit_id>/", views.adjudication_unit, name="adjudication-unit"),
]

api_urlpatterns: list = []
