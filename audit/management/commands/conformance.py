"""python manage.py conformance --out DIR: the same suite as python -m audit.conformance."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from audit.conformance.__main__ import main


class Command(BaseCommand):
    help = "Run the record-contract conformance suite and write its files to --out DIR."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", required=True, type=Path)

    def handle(self, *args: object, **options: object) -> None:
        code = main(["--out", str(options["out"])])
        if code:
            sys.exit(code)
