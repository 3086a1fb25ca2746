"""CSV downloads of the study pages (outcomes, reliability): spreadsheet-safe cells and
the attachment response."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse

from audit.contract.cells import spreadsheet_safe


def csv_cell(value: Any) -> str:
    """A cell as text, with a leading apostrophe where a spreadsheet would see a formula."""
    return spreadsheet_safe("" if value is None else str(value))


def csv_response(rows: list[list[object]], file_name: str) -> HttpResponse:
    """``rows`` as a CSV attachment named ``file_name``, every cell through ``csv_cell``."""
    response = HttpResponse("".join(_csv_lines(rows)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{file_name}"'
    return response


def _csv_lines(rows: Iterable[list[object]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def csv_stream_response(rows: Iterable[list[object]], file_name: str) -> StreamingHttpResponse:
    """``rows`` as a CSV attachment written while they are read (a table of one row per
    unit never sits whole in the web worker's memory)."""
    response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{file_name}"'
    return response
