"""python manage.py import_records FILE --study SLUG"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.models import ImportStatus, Study
from audit.services import observations_import


class Command(BaseCommand):
    help = (
        "Import an observation file (JSON Lines, docs/import-format.md) into a study. "
        "Atomic: any bad line imports nothing. Exit code 0 only when the file was imported "
        "(or was already present)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True, help="the study's slug")

    def handle(self, *args: object, **options: object) -> None:
        path: Path = options["file"]  # type: ignore[assignment]
        study = Study.objects.select_related("codebook").filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        batch = observations_import(study=study, data=data, file_name=path.name)
        if batch.status == ImportStatus.REJECTED:
            for error in batch.errors:
                self.stderr.write(f"{path}:{error['line']}: {error['reason']}: {error['message']}")
            hidden = batch.error_count - len(batch.errors)
            if hidden:
                self.stderr.write(f"... and {hidden} more bad lines")
            self.stderr.write(
                f"rejected: {batch.error_count} bad line(s) in {path.name}; nothing was imported"
            )
            sys.exit(1)
        self.stdout.write(
            f"{batch.get_status_display()}: {batch.observations_created} new observation(s), "
            f"{batch.tuples_created} new tuple(s), {batch.tuples_existing} already present "
            f"in study {study.slug} (import {batch.pk})"
        )
