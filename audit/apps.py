from django.apps import AppConfig
from django.db.backends.signals import connection_created

from audit.triggers import maintenance_flag


def _register_sqlite_functions(sender, connection, **kwargs) -> None:
    if connection.vendor == "sqlite":
        connection.connection.create_function("claimgate_maintenance", 0, maintenance_flag)


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit archive and record contract"

    def ready(self) -> None:
        connection_created.connect(_register_sqlite_functions, dispatch_uid="claimgate-sqlite")
