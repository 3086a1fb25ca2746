"""Index units by (study, state): the adjudication queue and its counts read a study's
disputed, agreed and adjudicated units without scanning its open ones (at 10^5 units
most are open). A plain CREATE INDEX on both backends (no table rebuild), so it applies
to an existing database as it is."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0010_study_fk_indexes"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="unit",
            index=models.Index(fields=["study", "state"], name="unit_study_state"),
        ),
    ]
