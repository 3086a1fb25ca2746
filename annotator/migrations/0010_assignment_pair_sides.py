"""The recorded order of an answer pair per assignment (issue 13, item 3): whether the
annotator is shown the evaluated answer on the left. Assignments already made on answer_pair
units get the order their study's queue seed draws for them (the same draw new ones get)."""

import hashlib
from typing import Any

from django.db import migrations, models


def _left_is_evaluated(seed: int, annotator_id: int, unit_id: int) -> bool:
    # annotator.labelling.order.answer_pair_left_is_evaluated, frozen here: a migration
    # must not change when the application's code does.
    digest = hashlib.sha256(f"claimgate-pair-sides:{seed}:{annotator_id}:{unit_id}".encode()).digest()
    return digest[0] & 1 == 1


def draw_existing(apps: Any, schema_editor: Any) -> None:
    Assignment = apps.get_model("annotator", "Assignment")
    QueueSeed = apps.get_model("annotator", "QueueSeed")
    pending = Assignment.objects.filter(unit__study__codebook__unit="answer_pair").values_list(
        "pk", "study_id", "annotator_id", "unit_id"
    )
    seeds: dict[int, int] = {}
    for pk, study_id, annotator_id, unit_id in pending.iterator():
        if study_id not in seeds:
            seeds[study_id] = QueueSeed.objects.get_or_create(study_id=study_id)[0].seed
        Assignment.objects.filter(pk=pk).update(
            pair_left_is_evaluated=_left_is_evaluated(seeds[study_id], annotator_id, unit_id)
        )


class Migration(migrations.Migration):
    dependencies = [("annotator", "0009_assignment_number")]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="pair_left_is_evaluated",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.RunPython(draw_existing, migrations.RunPython.noop),
    ]
