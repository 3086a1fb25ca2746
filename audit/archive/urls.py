from django.urls import path

from annotator.memberships import views as people_views
from audit.archive import api, views
from audit.ledger import views as outcome_views

urlpatterns = [
    path("", views.home, name="home"),
    path("studies/<slug:slug>/", views.study_detail, name="study-detail"),
    path("studies/<slug:slug>/people/", people_views.study_people, name="study-people"),
    path("studies/<slug:slug>/imports/", views.study_import, name="study-import"),
    path(
        "studies/<slug:slug>/imports/<int:batch_id>/",
        views.import_detail,
        name="import-detail",
    ),
    path(
        "studies/<slug:slug>/outcomes/",
        outcome_views.study_outcomes_page,
        name="study-outcomes",
    ),
    path(
        "studies/<slug:slug>/outcomes/csv/",
        outcome_views.study_outcomes_csv,
        name="study-outcomes-csv",
    ),
    path(
        "studies/<slug:slug>/records/<str:digest>/",
        outcome_views.study_record,
        name="study-record",
    ),
    path(
        "studies/<slug:slug>/gate/recompute/",
        outcome_views.study_gate_recompute,
        name="study-gate-recompute",
    ),
]

api_urlpatterns = [
    path("studies/", api.StudyListApi.as_view(), name="api-studies"),
    path("studies/<slug:slug>/imports/", api.StudyImportApi.as_view(), name="api-study-import"),
    path(
        "studies/<slug:slug>/imports/<int:batch_id>/",
        api.StudyImportDetailApi.as_view(),
        name="api-study-import-detail",
    ),
]
