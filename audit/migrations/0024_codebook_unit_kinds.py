"""Codebooks of format 2 declare the unit kinds ``answer_pair`` and ``query_documents``
(issue 12), which do not fit the unit column's 10 characters.

On PostgreSQL the column is widened in place (``ALTER COLUMN ... TYPE``, which keeps the
table's triggers). SQLite does not enforce a varchar's length, and an AlterField would make
it rebuild the table, which drops the trigger that keeps a codebook in use immutable
(0002): there the change is recorded as state only.
"""

from django.db import migrations, models

UNIT = models.CharField(
    choices=[
        ("tuple", "Tuple (query, source, answer)"),
        ("answer", "Answer with all of its sources"),
        ("answer_pair", "Answer beside its baseline"),
        ("query_documents", "Query with its retrieved documents"),
    ],
    max_length=20,
)


def _alter(length: int):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(
                f"ALTER TABLE audit_codebook ALTER COLUMN unit TYPE varchar({length})"
            )

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0016_history_not_truncated")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name="codebook", name="unit", field=UNIT)
            ],
            database_operations=[migrations.RunPython(_alter(20), _alter(10))],
        )
    ]
