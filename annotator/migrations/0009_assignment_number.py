"""Item numbers of an annotator's own: each assignment gets its rank among the annotator's
assignments in its study (1, 2, 3 … in the order they were handed out)."""

from typing import Any

from django.db import migrations, models

_NUMBER_POSTGRES = """
UPDATE annotator_assignment AS a SET number = r.n
FROM (
    SELECT id, row_number() OVER (PARTITION BY study_id, annotator_id ORDER BY id) AS n
    FROM annotator_assignment
) AS r
WHERE a.id = r.id
"""
# SQLite (the embedded default) has UPDATE … FROM since 3.33; the window is the same.
_NUMBER_SQLITE = """
UPDATE annotator_assignment SET number = r.n
FROM (
    SELECT id, row_number() OVER (PARTITION BY study_id, annotator_id ORDER BY id) AS n
    FROM annotator_assignment
) AS r
WHERE annotator_assignment.id = r.id
"""


def number_existing(apps: Any, schema_editor: Any) -> None:
    sql = _NUMBER_POSTGRES if schema_editor.connection.vendor == "postgresql" else _NUMBER_SQLITE
    schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0008_queue_order")]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="number",
            field=models.PositiveIntegerField(default=0),
            preserve_default=False,
        ),
        migrations.RunPython(number_existing, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.UniqueConstraint(
                fields=("study", "annotator", "number"), name="assignment_number_once"
            ),
        ),
    ]
