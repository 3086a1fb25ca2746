"""Submitted labels cannot be truncated either (issue 11): a statement-level BEFORE
TRUNCATE trigger beside the row triggers of 0003 (PostgreSQL; see audit/triggers.py)."""

from django.db import migrations

from audit.triggers import Immutable, install, uninstall

RULES = (
    Immutable(
        "annotator_label",
        operations=("TRUNCATE",),
        reason="submitted labels are append-only: submit a revision",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0003_labels_append_only")]

    operations = [migrations.RunPython(install(*RULES), uninstall(*RULES))]
