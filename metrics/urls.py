"""Pages (mounted at the site root)."""

urlpatterns: list = []
api_urlpatterns: list = []
