"""The site's routes: a few of its own, then every capability's. Each capability's
``urls`` module holds ``urlpatterns`` (pages, mounted at the site root) and
``api_urlpatterns`` (mounted under /api/); adding a capability adds one line below."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotator.adjudication import urls as adjudication
from annotator.labelling import urls as labelling
from annotator.memberships import urls as memberships
from annotator.quality import urls as quality
from audit.archive import urls as archive
from audit.ledger import urls as ledger
from audit.partitions import urls as partitions
from audit.releases import urls as releases
from config.health import healthz
from config.login import LoginView
from metrics import urls as metrics

CAPABILITIES = (
    archive,
    labelling,
    adjudication,
    memberships,
    quality,
    ledger,
    partitions,
    releases,
    metrics,
)

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("accounts/login/", LoginView.as_view(), name="login"),
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
    *(path("api/", include(routes.api_urlpatterns)) for routes in CAPABILITIES),
    *(path("", include(routes.urlpatterns)) for routes in CAPABILITIES),
]

# JSON under /api/ (config.api), Django's page elsewhere.
handler404 = "config.api.not_found"
