from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from audit.archive.urls import api_urlpatterns
from audit.partitions import urls as partition_urls
from audit.releases import urls as release_urls
from config.health import healthz
from metrics import urls as metrics_urls

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        # Same page without drf-spectacular's inline <style>, which the CSP would refuse.
        SpectacularSwaggerSplitView.as_view(
            url_name="api-schema", template_name="security/swagger_ui.html"
        ),
        name="api-docs",
    ),
    path("api/", include(api_urlpatterns)),
    path("api/", include("annotator.labelling.api_urls")),
    path("", include("annotator.labelling.urls")),
    path("", include("annotator.adjudication.urls")),
    path("", include(partition_urls.urlpatterns)),
    path("", include(release_urls.urlpatterns)),
    path("", include(metrics_urls.urlpatterns)),
    path("api/", include(partition_urls.api_urlpatterns)),
    path("api/", include(release_urls.api_urlpatterns)),
    path("api/", include(metrics_urls.api_urlpatterns)),
    path("", include("audit.archive.urls")),
]
