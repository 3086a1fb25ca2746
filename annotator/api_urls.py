"""REST API for annotation (mounted under /api/)."""

urlpatterns: list = []
