from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0018_gate_refresh_mark_in_queueing")]

    operations = [
        migrations.AddField(
            model_name="importbatch",
            name="error_groups",
            field=models.JSONField(
                default=list,
                help_text="Every bad line counted by reason: [{reason, count, lines, message}], "
                "lines the first few line numbers, message the first line's.",
            ),
        ),
    ]
