from django.db import migrations

from audit.contract.ledger import GENESIS
from audit.triggers import Immutable, install, uninstall

RULES = (
    Immutable(
        "audit_ledgerentry",
        operations=("UPDATE", "DELETE"),
        reason="the claim ledger is append-only",
    ),
)


def create_head(apps, schema_editor) -> None:
    apps.get_model("audit", "LedgerHead").objects.get_or_create(
        pk=1, defaults={"seq": 0, "entry_hash": GENESIS}
    )


class Migration(migrations.Migration):
    dependencies = [("audit", "0004_ledger_gate")]

    operations = [
        migrations.RunPython(install(*RULES), uninstall(*RULES)),
        migrations.RunPython(create_head, migrations.RunPython.noop),
    ]
