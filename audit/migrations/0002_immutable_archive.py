from django.db import migrations

from audit.triggers import Immutable, install, uninstall

RULES = (
    Immutable("audit_query", reason="archive rows are never edited: import a new version"),
    Immutable("audit_pipeline", reason="archive rows are never edited: import a new version"),
    Immutable("audit_answersnapshot", reason="a later observation is a new snapshot"),
    Immutable("audit_sourcesnapshot", reason="a later observation is a new snapshot"),
    Immutable(
        "audit_codebook",
        reason="a codebook in use is immutable: create a new version",
        when="EXISTS (SELECT 1 FROM audit_study WHERE audit_study.codebook_id = OLD.id)",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(install(*RULES), uninstall(*RULES))]
