from django.db import migrations

from audit.triggers import Immutable, install, uninstall

RULES = (
    Immutable(
        "annotator_label",
        operations=("UPDATE", "DELETE"),
        reason="submitted labels are append-only: submit a revision",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0002_membership_pseudonym_assignment_draft_label_and_more")]

    operations = [migrations.RunPython(install(*RULES), uninstall(*RULES))]
