"""Pages for annotators (the blinded forms)."""

from django.urls import path

from annotator.labelling import views

urlpatterns = [
    path("studies/<slug:slug>/annotate/", views.annotate_start, name="annotate-start"),
    path("assignments/<int:pk>/", views.assignment_form, name="assignment-form"),
    path("assignments/<int:pk>/draft", views.assignment_draft, name="assignment-draft"),
    path("assignments/<int:pk>/submit", views.assignment_submit, name="assignment-submit"),
]
