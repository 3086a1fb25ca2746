"""Pages for adjudicators (mounted at the site root)."""

urlpatterns: list = []
