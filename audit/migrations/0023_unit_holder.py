"""The unit's holder hint (``audit_unit.holder``): the user id of one annotator holding a
counted slot on it, and the partial index ``unit_held`` (study, assigned_count, COALESCE(holder, 0))
over the units someone holds, on which the queue's started-unit walk skips the units
the asking annotator holds (docs/benchmarks.md, "The lone annotator's walk").

The existing units get their hint here: the smallest annotator id among each unit's
counted (not gold) assignments. The column is the unit table's like the others: the
partition-version trigger ignores it (it compares partitions only) and the app role's
UPDATE on the table covers it.
"""

import django.db.models.functions.comparison
from django.db import migrations, models

HINT_SQL = (
    "UPDATE audit_unit SET holder = ("
    "SELECT MIN(a.annotator_id) FROM annotator_assignment a "
    "WHERE a.unit_id = audit_unit.id AND NOT a.gold) "
    "WHERE assigned_count >= 1"
)


def hints_set(apps, schema_editor) -> None:
    schema_editor.execute(HINT_SQL, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0022_unit_record_texts"),
        ("annotator", "0011_quality_summary"),
    ]

    operations = [
        migrations.AddField(
            model_name="unit",
            name="holder",
            field=models.BigIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.AddIndex(
            model_name="unit",
            index=models.Index(
                models.F("study"),
                models.F("assigned_count"),
                django.db.models.functions.comparison.Coalesce(
                    models.F("holder"), models.Value(0)
                ),
                condition=models.Q(("assigned_count__gte", 1)),
                name="unit_held",
            ),
        ),
        migrations.RunPython(hints_set, migrations.RunPython.noop, elidable=False),
    ]
