"""Rows as PostgreSQL COPY text, made without a database connection, so that the import's
planning process (audit.archive.planning) renders the archive tables' rows beside the
process that writes them: the writer then sends the bytes as they are, where formatting
the rows cost it about a fifth of its CPU (docs/benchmarks.md, "Import: sixth round").

The formatting is psycopg's own, the one its ``Copy.write_row`` applies on a connection
(text format, the default dumpers, UTF-8): the same bytes, which
tests/archive/test_copy_text.py checks against rows written on a connection. A JSON
value is written as its canonical text, as :mod:`audit.archive.bulk` writes it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

# psycopg's COPY row formatter (its C implementation where installed): not exported by
# the package, but the function Copy.write_row calls (tests/archive/test_copy_text.py
# pins what it writes).
from psycopg._copy_base import format_row_text
from psycopg.adapt import Transformer

from audit.contract.canonical import canonical_text_unchecked


def copy_lines(
    rows: Iterable[Sequence[Any]], columns: Sequence[str], json_columns: Collection[str] = ()
) -> list[bytes]:
    """Each row (values of ``columns``) as one line of COPY text, its newline included;
    the columns named in ``json_columns`` hold JSON values."""
    transformer = Transformer()
    json_at = [index for index, name in enumerate(columns) if name in json_columns]
    lines = []
    for row in rows:
        if json_at:
            values = list(row)
            for index in json_at:
                values[index] = canonical_text_unchecked(values[index])
            row = values
        line = bytearray()
        format_row_text(row, transformer, line)
        lines.append(bytes(line))
    return lines
