from django.db import migrations

from audit.triggers import Immutable, install, uninstall

RULES = (
    Immutable(
        "audit_studyfreeze",
        operations=("UPDATE", "DELETE"),
        reason="a freeze is irreversible: create a new study version",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("audit", "0007_freeze_release")]

    operations = [migrations.RunPython(install(*RULES), uninstall(*RULES))]
