"""Pages for annotators (the blinded forms)."""

urlpatterns: list = []
