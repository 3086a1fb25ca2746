"""REST API for annotation (mounted under /api/)."""

from django.urls import path

from annotator.labelling import api

urlpatterns = [
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
