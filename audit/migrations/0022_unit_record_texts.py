"""Each tuple unit's part of its records, stored once as canonical text (issue 18, the
release export): ``audit_unitrecordtext``, filled by the first release that needs it.

Only ever inserted: a trigger refuses UPDATE (the archive rows the texts come from are
immutable too); ``manage.py db_app_role`` grants the app role SELECT and INSERT on it, as
on the archive's snapshots. Rows go with their unit (no rule on DELETE: a unit is never
deleted by the app, and the test suite empties tables).
"""

import django.db.models.deletion
from django.db import migrations, models

from audit.triggers import Immutable, install, uninstall

RULES = (
    Immutable(
        "audit_unitrecordtext",
        reason="record texts of a unit come from immutable archive rows",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("audit", "0021_import_references")]

    operations = [
        migrations.CreateModel(
            name="UnitRecordText",
            fields=[
                (
                    "unit",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="audit.unit",
                    ),
                ),
                ("answer", models.TextField(help_text="The record's answer member.")),
                ("head", models.TextField(help_text="The record's pipeline and query members.")),
                (
                    "tail",
                    models.TextField(
                        help_text="The record's sampling, source and tuple_digest members."
                    ),
                ),
            ],
        ),
        migrations.RunPython(install(*RULES), uninstall(*RULES)),
    ]
