"""python manage.py import_records FILE --study SLUG

Dispatches on the file's header line: ``"claimgate": "observations"`` is an observation
file (audit.archive.services.observations_import), ``"claimgate": "records"`` a records file such
as a release's records.jsonl (audit.releases.records_import.records_import).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import BinaryIO

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.archive.models import ImportBatch, ImportStatus, Study
from audit.archive.services import import_size_problem, observations_import
from audit.contract.observations import MAX_LINE_BYTES
from audit.contract.streams import stream_size
from audit.queueing import queue_orders_draw
from audit.releases.records_import import records_import


class Command(BaseCommand):
    help = (
        "Import an observation file (JSON Lines, docs/import-format.md) or a records file "
        "(a release's records.jsonl) into a study, as its header line says. "
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
            stream = path.open("rb")
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        with stream:
            self._import(study, stream, path)

    def _import(self, study: Study, stream: BinaryIO, path: Path) -> None:
        # The file is never read whole: a file over the limit is refused by its size, the
        # header is read with a bounded readline, and the import reads line by line.
        kind = _header_kind(stream)
        if kind == "records":
            result = records_import(study=study, data=stream, file_name=path.name)
            batch = result.batch
            self._units_added(study, batch)
            self._report_rejected(batch, path)
            self.stdout.write(
                f"{batch.get_status_display()}: {result.labels_created} new label(s) "
                f"({result.labels_existing} already present), {batch.tuples_created} new "
                f"tuple(s) in study {study.slug} (import {batch.pk}); imported labels have "
                "no user, only the pseudonym in their annotation"
            )
            return
        batch = observations_import(study=study, data=stream, file_name=path.name)
        self._units_added(study, batch)
        self._report_rejected(batch, path)
        self.stdout.write(
            f"{batch.get_status_display()}: {batch.observations_created} new observation(s), "
            f"{batch.tuples_created} new tuple(s), {batch.tuples_existing} already present "
            f"in study {study.slug} (import {batch.pk})"
        )

    def _units_added(self, study: Study, batch: ImportBatch) -> None:
        if batch.status == ImportStatus.IMPORTED:
            queue_orders_draw(study.pk)  # its annotators' orders take the new units

    def _report_rejected(self, batch: ImportBatch, path: Path) -> None:
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


def _header_kind(stream: BinaryIO) -> str | None:
    """``claimgate`` of the header line (``observations``, ``records``), if readable; reads
    at most one line's limit and leaves the stream where it was."""
    if import_size_problem(stream_size(stream)) is not None:
        return None  # refused by its size, before anything is read
    start = stream.tell()
    first = stream.readline(MAX_LINE_BYTES + 1)
    stream.seek(start)
    if len(first) > MAX_LINE_BYTES:
        return None  # the observation parser reports the line's length
    try:
        header = json.loads(first)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None  # the observation parser reports the bad header with its reason
    return header.get("claimgate") if isinstance(header, dict) else None
