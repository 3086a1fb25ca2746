import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from audit.triggers import Immutable, install, uninstall

RULES = (
    Immutable(
        "annotator_labelsight",
        operations=("UPDATE", "DELETE"),
        reason="who has seen which labels is never forgotten: blinding depends on it",
    ),
)

# Before this table existed, the only durable trace of a person shown a unit's labels is
# the adjudication they submitted on it.
BACKFILL = """
INSERT INTO annotator_labelsight (user_id, unit_id, via, seen_at)
SELECT annotator_id, unit_id, 'adjudication', MIN(created_at)
FROM annotator_label
WHERE kind = 'adjudicated' AND annotator_id IS NOT NULL
GROUP BY annotator_id, unit_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0003_labels_append_only"),
        ("audit", "0011_unit_study_state"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="LabelSight",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "via",
                    models.CharField(
                        choices=[
                            ("adjudication", "Adjudication page"),
                            ("record", "Record page"),
                            ("outcomes", "Outcomes review list"),
                            ("release", "Release download"),
                        ],
                        max_length=12,
                    ),
                ),
                ("seen_at", models.DateTimeField()),
                (
                    "unit",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="sights",
                        to="audit.unit",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["id"],
                "constraints": [
                    models.UniqueConstraint(fields=("user", "unit"), name="label_sight_once")
                ],
            },
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.RunPython(install(*RULES), uninstall(*RULES)),
    ]
