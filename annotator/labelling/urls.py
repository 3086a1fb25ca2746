"""Pages for annotators (the blinded forms) and the annotation API (mounted by
config.urls)."""

from django.urls import path

from annotator.labelling import api, views

urlpatterns = [
    path("studies/<slug:slug>/annotate/", views.annotate_start, name="annotate-start"),
    path("assignments/<int:pk>/", views.assignment_form, name="assignment-form"),
    path("assignments/<int:pk>/draft", views.assignment_draft, name="assignment-draft"),
    path("assignments/<int:pk>/submit", views.assignment_submit, name="assignment-submit"),
]

api_urlpatterns = [
    path(
        "studies/<slug:slug>/assignments/",
        api.AssignmentListApi.as_view(),
        name="api-assignments",
    ),
    path(
        "studies/<slug:slug>/assignments/next/",
        api.AssignmentNextApi.as_view(),
        name="api-assignment-next",
    ),
    path(
        "assignments/<int:assignment_id>/", api.AssignmentDetailApi.as_view(), name="api-assignment"
    ),
    path(
        "assignments/<int:assignment_id>/draft/",
        api.DraftSaveApi.as_view(),
        name="api-assignment-draft",
    ),
    path(
        "assignments/<int:assignment_id>/labels/",
        api.LabelsApi.as_view(),
        name="api-assignment-labels",
    ),
]
