"""The study people page (mounted by config.urls)."""

from django.urls import path

from annotator.memberships import views

urlpatterns = [
    path("studies/<slug:slug>/people/", views.study_people, name="study-people"),
]

api_urlpatterns: list = []
