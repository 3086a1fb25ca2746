"""python manage.py verify_ledger: re-walk the claim ledger's hash chain."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from audit.ledger.chain import ledger_verify


class Command(BaseCommand):
    help = (
        "Check the claim ledger's hash chain; report the first entry that was removed, "
        "reordered or edited, and exit non-zero if there is one."
    )

    def handle(self, *args: object, **options: object) -> None:
        checked, problem = ledger_verify()
        if problem is None:
            self.stdout.write(f"ledger ok: {checked} entries, chain intact")
            return
        self.stderr.write(
            f"ledger BROKEN at entry {problem.seq}: {problem.kind}: {problem.message} "
            f"({checked} entries verified before it)"
        )
        sys.exit(1)
