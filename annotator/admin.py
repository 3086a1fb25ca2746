"""The ``annotator`` app's admin, for Django's admin autodiscovery: each capability
registers its own models in its ``admin.py``."""

from annotator.labelling import admin as labelling_admin
from annotator.memberships import admin as memberships_admin

__all__ = ["labelling_admin", "memberships_admin"]
