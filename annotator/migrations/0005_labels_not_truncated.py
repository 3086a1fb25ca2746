"""Submitted labels, and the record of who has seen which unit's labels, cannot be
truncated either (issue 11): a statement-level BEFORE TRUNCATE trigger beside the row
triggers of 0003 and 0004 (PostgreSQL; see audit/triggers.py)."""

from django.db import migrations

from audit.triggers import Immutable, install, uninstall

RULES = (
    Immutable(
        "annotator_label",
        operations=("TRUNCATE",),
        reason="submitted labels are append-only: submit a revision",
    ),
    Immutable(
        "annotator_labelsight",
        operations=("TRUNCATE",),
        reason="the record of who has seen the labels of a unit is kept for good (blinding)",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0004_label_sight")]

    operations = [migrations.RunPython(install(*RULES), uninstall(*RULES))]
