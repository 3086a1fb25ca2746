"""python manage.py recompute_gate [--study SLUG]: recompute and store validation gates."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.archive.models import Study
from audit.ledger.services import gate_recompute


class Command(BaseCommand):
    help = (
        "Recompute the validation gate of one study (--study) or of every study, store it "
        "and print the stage each one reached."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", metavar="SLUG", help="only this study")

    def handle(self, *args: object, **options: object) -> None:
        studies = Study.objects.select_related("codebook").order_by("slug")
        slug = options.get("study")
        if slug:
            studies = studies.filter(slug=slug)
            if not studies.exists():
                raise CommandError(f"no study {slug!r}")
        for study in studies:
            report = gate_recompute(study=study)
            unmet = next((stage for stage in report.stages if not stage.met), None)
            line = f"{study.slug}: {report.reached or 'no stage'}"
            if unmet is not None:
                line += f" (next: {unmet.name}: {unmet.why})"
            self.stdout.write(line)
