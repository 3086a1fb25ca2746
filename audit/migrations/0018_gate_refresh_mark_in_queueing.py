"""The gate's refresh is coalesced like every other per-study job (audit.queueing): its
own marker column goes."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0017_unit_kinds"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="studygate",
            name="refresh_requested_at",
        ),
    ]
