"""History the application cannot erase (issue 11): TRUNCATE is refused on every table the
code keeps append-only or immutable, and the ledger head only moves forward.

Row triggers (0002, 0005, 0008) refuse UPDATE and DELETE, but TRUNCATE fires no row
trigger: these are statement-level BEFORE TRUNCATE triggers (PostgreSQL; SQLite has no
TRUNCATE, see audit/triggers.py). The labels' rule is annotator 0004. The owner of the
tables can still drop a trigger; the app's own login does not own them (``manage.py
db_app_role``), and ``verify_ledger --expect`` detects what an owner rewrites.
"""

from django.db import migrations

from audit.triggers import Immutable, install, uninstall

NO_TRUNCATE = tuple(
    Immutable(table, operations=("TRUNCATE",), reason=reason)
    for table, reason in (
        ("audit_ledgerentry", "the claim ledger is append-only"),
        ("audit_studyfreeze", "a freeze is irreversible: create a new study version"),
        ("audit_query", "archive rows are never removed"),
        ("audit_pipeline", "archive rows are never removed"),
        ("audit_answersnapshot", "archive rows are never removed"),
        ("audit_sourcesnapshot", "archive rows are never removed"),
    )
)

HEAD = (
    Immutable(
        "audit_ledgerhead",
        operations=("UPDATE",),
        reason="the ledger head only moves forward",
        when="NEW.seq < OLD.seq OR (NEW.seq = OLD.seq AND NEW.entry_hash <> OLD.entry_hash)",
    ),
    Immutable(
        "audit_ledgerhead",
        operations=("DELETE", "TRUNCATE"),
        reason="the ledger head only moves forward",
    ),
)

RULES = NO_TRUNCATE + HEAD


class Migration(migrations.Migration):
    dependencies = [("audit", "0015_gate_refresh")]

    operations = [migrations.RunPython(install(*RULES), uninstall(*RULES))]
