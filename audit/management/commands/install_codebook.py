"""python manage.py install_codebook PATH [PATH ...]"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.archive.services import CodebookConflict, codebook_install_file
from audit.contract.errors import ContractError


class Command(BaseCommand):
    help = "Store codebook versions from their JSON files; an installed version never changes."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)

    def handle(self, *args: object, **options: object) -> None:
        for path in options["paths"]:  # type: ignore[union-attr]
            try:
                row, created = codebook_install_file(path=path)
            except (OSError, ValueError, ContractError, CodebookConflict) as exc:
                raise CommandError(f"{path}: {exc}") from exc
            verb = "installed" if created else "already installed"
            self.stdout.write(f"{verb}: codebook {row.name} {row.version} ({row.digest[:12]})")
