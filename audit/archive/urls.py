"""Studies and their observation imports: pages and API (mounted by config.urls)."""

from django.urls import path

from audit.archive import api, views

urlpatterns = [
    path("", views.home, name="home"),
    path("codebooks/", views.codebooks, name="codebooks"),
    path("new-study/", views.study_new, name="study-new"),
    path("studies/<slug:slug>/", views.study_detail, name="study-detail"),
    path("studies/<slug:slug>/imports/", views.study_import, name="study-import"),
    path(
        "studies/<slug:slug>/imports/<int:batch_id>/",
        views.import_detail,
        name="import-detail",
    ),
]

api_urlpatterns = [
    path("studies/", api.StudyListApi.as_view(), name="api-studies"),
    path("codebooks/", api.CodebookListApi.as_view(), name="api-codebooks"),
    path("studies/<slug:slug>/imports/", api.StudyImportApi.as_view(), name="api-study-import"),
    path(
        "studies/<slug:slug>/imports/<int:batch_id>/",
        api.StudyImportDetailApi.as_view(),
        name="api-study-import-detail",
    ),
]
