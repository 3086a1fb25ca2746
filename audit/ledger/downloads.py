"""CSV downloads of the study pages (outcomes, reliability): spreadsheet-safe cells and
the attachment response."""

from __future__ import annotations

import csv
import io
from typing import Any

from django.http import HttpResponse

from audit.contract.cells import spreadsheet_safe


def csv_cell(value: Any) -> str:
    """A cell as text, with a leading apostrophe where a spreadsheet would see a formula."""
    return spreadsheet_safe("" if value is None else str(value))


def csv_response(rows: list[list[object]], file_name: str) -> HttpResponse:
    """``rows`` as a CSV attachment named ``file_name``, every cell through ``csv_cell``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{file_name}"'
    return response
