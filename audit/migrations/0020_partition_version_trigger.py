"""A study's partition version moves on with every change of a unit's partition, by a
trigger: a direct UPDATE of ``audit_unit.partition`` can no longer leave the stored
partition summary, outcome counts or reliability staleness behind (audit/triggers.py)."""

from django.db import migrations

from audit.triggers import PartitionVersion, install, uninstall


class Migration(migrations.Migration):
    dependencies = [("audit", "0019_importbatch_error_groups")]

    operations = [
        migrations.RunPython(install(PartitionVersion()), uninstall(PartitionVersion())),
    ]
