"""Drop the single-column study_id indexes of observations, tuples and units.

Each table's unique constraint on (study, digest) — and the units' queue index — already
leads with study_id, so every look-up by study alone (including Django's cascade from a
study) can use those; the single-column index only cost an extra index insert per row on
import.

Only the index is dropped (``DROP INDEX``), on both backends: an AlterField would make
SQLite rebuild these tables, which drops their triggers and trips over the rules of other
tables that name them (audit/triggers.py), so the field change is recorded as state only.
"""

from django.db import migrations, models

FIELDS = (
    ("observation", "observations"),
    ("tuple", "tuples"),
    ("unit", "units"),
)


def _indexes(apps, schema_editor):
    for model_name, _related in FIELDS:
        model = apps.get_model("audit", model_name)
        field = model._meta.get_field("study")
        yield (
            model,
            field,
            schema_editor._create_index_name(model._meta.db_table, [field.column], suffix=""),
        )


def drop(apps, schema_editor):
    for _model, _field, name in _indexes(apps, schema_editor):
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def create(apps, schema_editor):
    for model, field, _name in _indexes(apps, schema_editor):
        schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))


class Migration(migrations.Migration):
    dependencies = [("audit", "0009_frozen_partitions")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name=model_name,
                    name="study",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name=related,
                        to="audit.study",
                    ),
                )
                for model_name, related in FIELDS
            ],
            database_operations=[migrations.RunPython(drop, create)],
        )
    ]
