"""python manage.py verify_release DIR"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from audit.releases.formats import MANIFEST, RECORDS
from audit.releases.verify import verify_bundle


class Command(BaseCommand):
    help = (
        "Check a release bundle: recompute SHA256SUMS (naming every changed, missing or "
        "extra file) and re-check every record line against the bundled codebook. Exit code "
        "0 only when nothing is wrong. Needs no database."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path)

    def handle(self, *args: object, **options: object) -> None:
        directory: Path = options["directory"]  # type: ignore[assignment]
        if not directory.is_dir():
            self.stderr.write(f"{directory} is not a folder")
            sys.exit(1)
        result = verify_bundle(directory)
        for problem in result.manifest_problems:
            self.stderr.write(problem)
        for name in result.changed:
            self.stderr.write(f"changed: {name} (its SHA-256 differs from {MANIFEST})")
        for name in result.missing:
            self.stderr.write(f"missing: {name}")
        for name in result.extra:
            self.stderr.write(f"extra: {name} (not listed in {MANIFEST})")
        for line, reason, message in result.bad_records:
            self.stderr.write(f"{RECORDS}:{line}: {reason}: {message}")
        for note in result.notes:
            self.stdout.write(f"note: {note}")
        if not result.ok:
            self.stderr.write(f"FAILED: {directory} does not verify")
            sys.exit(1)
        self.stdout.write(
            f"OK: every file matches {MANIFEST}; {result.records_checked} records pass the checker"
        )
