"""A frozen study keeps its partitions, thresholds and codebook, whatever writes.

Once a StudyFreeze row exists for a study, the database refuses
- an UPDATE of audit_unit that changes a unit's partition (or moves it to another study
  or changes its digest, which would change the frozen partition digest just as well);
- an UPDATE of audit_study that changes its thresholds or its codebook.
Other columns stay writable: the queue's counters, unit state and priority, a title.

SQLite caveats for later migrations (see audit/triggers.py):
- both WHEN clauses name audit_studyfreeze, so a migration that rebuilds audit_studyfreeze
  on SQLite must uninstall these RULES first and install them again last (as 0007 does
  for the codebook rule);
- a migration that rebuilds audit_unit or audit_study on SQLite drops that table's rule
  with the old table: it must install the rule again afterwards (and lift the codebook
  rule of 0002 for audit_study, as 0007 does).
"""

from django.db import migrations

from audit.triggers import Immutable, install, uninstall

FROZEN = "EXISTS (SELECT 1 FROM audit_studyfreeze WHERE audit_studyfreeze.study_id = {id})"

RULES = (
    Immutable(
        "audit_unit",
        reason="the study is frozen: partitions cannot change, create a new study version",
        when=(
            "(COALESCE(OLD.partition, '') <> COALESCE(NEW.partition, '') "
            "OR OLD.study_id <> NEW.study_id OR OLD.digest <> NEW.digest) AND "
            + FROZEN.format(id="OLD.study_id")
        ),
    ),
    Immutable(
        "audit_study",
        reason="the study is frozen: thresholds and codebook cannot change, "
        "create a new study version",
        when=(
            "(OLD.thresholds <> NEW.thresholds OR OLD.codebook_id <> NEW.codebook_id) AND "
            + FROZEN.format(id="OLD.id")
        ),
    ),
)


class Migration(migrations.Migration):
    dependencies = [("audit", "0008_freeze_append_only")]

    operations = [migrations.RunPython(install(*RULES), uninstall(*RULES))]
