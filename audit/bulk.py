"""Bulk writes and look-ups that stay fast at a million rows.

On PostgreSQL rows go in with COPY into a temporary table and from there into the real
one with a single INSERT … SELECT, which also returns the new ids; look-ups pass one
array parameter (``= ANY(%s)``) instead of thousands of placeholders. Elsewhere (SQLite,
the embedded default) the same functions use ``bulk_create`` and ``__in`` look-ups.
Callers pass plain dicts of column values keyed by field attribute names (``query_id``),
so no model instance is built per row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models

BATCH = 2_000


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def ids_by(model: type[models.Model], field: str, values: Iterable[Any], **filters: Any) -> dict:
    """``{value: id}`` for the rows whose ``field`` is among ``values`` (and that match
    the equality ``filters``, given as column attribute names such as ``study_id``)."""
    values = list(values)
    if not values:
        return {}
    meta = model._meta
    if _postgres():
        column = _q(meta.get_field(field).column)
        where = [f"{column} = ANY(%s)"]
        params: list[Any] = [values]
        for name, value in filters.items():
            where.append(f"{_q(meta.get_field(name).column)} = %s")
            params.append(value)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {column}, {_q(meta.pk.column)} FROM {_q(meta.db_table)} "  # noqa: S608
                f"WHERE {' AND '.join(where)}",
                params,
            )
            return dict(cursor.fetchall())
    found: dict[Any, int] = {}
    for start in range(0, len(values), BATCH):
        chunk = values[start : start + BATCH]
        found.update(
            model.objects.filter(**{f"{field}__in": chunk}, **filters).values_list(field, "id")
        )
    return found


def upsert(model: type[models.Model], rows: Sequence[dict[str, Any]], *, key: str) -> dict:
    """Insert the rows whose ``key`` (a unique column) is new — a concurrent writer may
    have inserted some meanwhile — and return ``{key: id}`` for every row."""
    if not rows:
        return {}
    if not _postgres():
        ids = ids_by(model, key, (row[key] for row in rows))
        missing = [row for row in rows if row[key] not in ids]
        model.objects.bulk_create(
            [model(**row) for row in missing], batch_size=BATCH, ignore_conflicts=True
        )
        ids.update(ids_by(model, key, (row[key] for row in missing)))
        return ids
    meta = model._meta
    with _staged(model, rows) as (cursor, staging, columns):
        table = _q(meta.db_table)
        column = _q(meta.get_field(key).column)
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {staging} "  # noqa: S608
            f"ON CONFLICT ({column}) DO NOTHING"
        )
        cursor.execute(
            f"SELECT t.{column}, t.{_q(meta.pk.column)} FROM {table} t "  # noqa: S608
            f"JOIN {staging} s ON s.{column} = t.{column}"
        )
        return dict(cursor.fetchall())


def insert(
    model: type[models.Model], rows: Sequence[dict[str, Any]], *, returning: str, **filters: Any
) -> dict:
    """Insert new rows and return ``{row[returning]: id}``; ``filters`` narrow the SQLite
    look-up to rows where ``returning`` is unique (e.g. ``study_id=…``)."""
    if not rows:
        return {}
    if not _postgres():
        model.objects.bulk_create([model(**row) for row in rows], batch_size=BATCH)
        return ids_by(model, returning, (row[returning] for row in rows), **filters)
    meta = model._meta
    with _staged(model, rows) as (cursor, staging, columns):
        cursor.execute(
            f"INSERT INTO {_q(meta.db_table)} ({columns}) SELECT {columns} "  # noqa: S608
            f"FROM {staging} RETURNING {_q(meta.get_field(returning).column)}, "
            f"{_q(meta.pk.column)}"
        )
        return dict(cursor.fetchall())


class _staged:
    """COPY ``rows`` into a temporary table shaped like the model's columns."""

    def __init__(self, model: type[models.Model], rows: Sequence[dict[str, Any]]) -> None:
        meta = model._meta
        # COPY writes NULL into columns it is not given; Django's defaults live in Python.
        defaults = {
            field.attname: field.get_default()
            for field in meta.concrete_fields
            if field.attname not in rows[0] and field.has_default() and not field.primary_key
        }
        self.rows = [{**defaults, **row} for row in rows] if defaults else rows
        self.names = list(self.rows[0])
        fields = [meta.get_field(name) for name in self.names]  # attnames resolve too
        self.json = [isinstance(field, models.JSONField) for field in fields]
        self.columns = ", ".join(_q(field.column) for field in fields)
        self.table = _q(meta.db_table)
        self.staging = _q(f"claimgate_staging_{meta.db_table}")

    def __enter__(self) -> tuple[Any, str, str]:
        self.cursor = connection.cursor()
        cursor = self.cursor
        cursor.execute(f"DROP TABLE IF EXISTS {self.staging}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {self.staging} AS "  # noqa: S608
            f"SELECT {self.columns} FROM {self.table} WITH NO DATA"
        )
        with cursor.cursor.copy(f"COPY {self.staging} ({self.columns}) FROM STDIN") as copy:
            for row in self.rows:
                copy.write_row(
                    [
                        json.dumps(row[name]) if is_json else row[name]
                        for name, is_json in zip(self.names, self.json, strict=True)
                    ]
                )
        return cursor, self.staging, self.columns

    def __exit__(self, *exc: object) -> None:
        try:
            self.cursor.execute(f"DROP TABLE IF EXISTS {self.staging}")
        finally:
            self.cursor.close()
