"""python manage.py install_codebook FILE [FILE ...]"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.archive.services import CodebookRefused, codebooks_install_files


class Command(BaseCommand):
    help = (
        "Install codebook versions from their JSON files, all or none: a file with any "
        "problem installs nothing and every problem is listed. Installing the same content "
        "again changes nothing; a version that a study uses never changes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, metavar="FILE")

    def handle(self, *args: object, **options: object) -> None:
        paths: list[Path] = options["paths"]  # type: ignore[assignment]
        try:
            installed = codebooks_install_files(paths=paths)
        except CodebookRefused as exc:
            count = len(exc.problems)
            lines = [f"refused, nothing installed: {count} problem{'s' if count != 1 else ''}"]
            lines += [f"  {problem} [{problem.code}]" for problem in exc.problems]
            raise CommandError("\n".join(lines)) from exc
        for path, (row, created) in zip(paths, installed, strict=True):
            verb = "installed" if created else "already installed, unchanged"
            self.stdout.write(
                f"{verb}: codebook {row.name} {row.version} ({row.get_unit_display()}) "
                f"from {path.name}, digest {row.digest[:12]}"
            )
