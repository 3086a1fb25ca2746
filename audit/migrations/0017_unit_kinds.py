"""Unit kinds answer_pair and query_documents (issue 12): a codebook's unit names up to 15
characters, and an answer_pair unit's baseline observation beside its evaluated one.

SQLite rebuilds audit_codebook (the wider column) and audit_unit (the new check) and drops
their triggers with the old tables: the codebook rule of 0002 and the unit rule of 0009
are lifted first and put back, unchanged, last (a no-op on PostgreSQL, which alters in
place).
"""

import django.db.models.deletion
from django.db import migrations, models

from audit.triggers import Immutable, install, uninstall

CODEBOOK_IN_USE = Immutable(
    "audit_codebook",
    reason="a codebook in use is immutable: create a new version",
    when="EXISTS (SELECT 1 FROM audit_study WHERE audit_study.codebook_id = OLD.id)",
)
FROZEN = "EXISTS (SELECT 1 FROM audit_studyfreeze WHERE audit_studyfreeze.study_id = {id})"
UNIT_FROZEN = Immutable(
    "audit_unit",
    reason="the study is frozen: partitions cannot change, create a new study version",
    when=(
        "(COALESCE(OLD.partition, '') <> COALESCE(NEW.partition, '') "
        "OR OLD.study_id <> NEW.study_id OR OLD.digest <> NEW.digest) AND "
        + FROZEN.format(id="OLD.study_id")
    ),
)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0016_history_not_truncated"),
    ]

    operations = [
        migrations.RunPython(
            uninstall(CODEBOOK_IN_USE, UNIT_FROZEN), install(CODEBOOK_IN_USE, UNIT_FROZEN)
        ),
        migrations.AddField(
            model_name="unit",
            name="baseline",
            field=models.ForeignKey(
                blank=True,
                help_text="answer_pair units only: the baseline's observation.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="baseline_units",
                to="audit.observation",
            ),
        ),
        migrations.AlterField(
            model_name="codebook",
            name="unit",
            field=models.CharField(
                choices=[
                    ("tuple", "Tuple (query, source, answer)"),
                    ("answer", "Answer with all of its sources"),
                    ("answer_pair", "Two answers to one query: evaluated and baseline"),
                    ("query_documents", "A query with its retrieved documents in rank order"),
                ],
                max_length=20,
            ),
        ),
        migrations.AddConstraint(
            model_name="unit",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("baseline__isnull", True),
                    models.Q(("baseline", models.F("observation")), _negated=True),
                    _connector="OR",
                ),
                name="unit_baseline_not_itself",
            ),
        ),
        migrations.RunPython(
            install(CODEBOOK_IN_USE, UNIT_FROZEN), uninstall(CODEBOOK_IN_USE, UNIT_FROZEN)
        ),
    ]
