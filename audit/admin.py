"""The ``audit`` app's admin, for Django's admin autodiscovery: each capability registers
its own models in its ``admin.py``."""

from audit.archive import admin as archive_admin
from audit.ledger import admin as ledger_admin

__all__ = ["archive_admin", "ledger_admin"]
