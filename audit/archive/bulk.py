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
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models

from audit.contract.canonical import canonical_text_unchecked

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


# --- rows as tuples -----------------------------------------------------------------------
# The same writes for callers that build rows as tuples in a fixed column order (the
# observation import: 10^5 rows a file), so that no dict is built or re-read per row.


def upsert_rows(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[tuple],
    *,
    key: str,
    texts: Sequence[bytes] | None = None,
) -> dict:
    """:func:`upsert` for rows given as tuples of ``columns`` values.

    ``texts`` (PostgreSQL): the rows already as COPY text lines of ``columns``
    (audit.archive.copytext), ``rows`` then holding each row's ``key`` alone."""
    if not rows:
        return {}
    if not _postgres():
        return upsert(model, [dict(zip(columns, row, strict=True)) for row in rows], key=key)
    meta = model._meta
    column = _q(meta.get_field(key).column)
    with _staged_rows(model, columns, rows, texts) as (cursor, staging, names):
        # RETURNING gives the rows this statement inserted; the others (already stored, or
        # inserted meanwhile by a concurrent writer) are looked up by key afterwards.
        cursor.execute(
            f"INSERT INTO {_q(meta.db_table)} ({names}) SELECT {names} "  # noqa: S608
            f"FROM {staging} ON CONFLICT ({column}) DO NOTHING "
            f"RETURNING {column}, {_q(meta.pk.column)}"
        )
        ids = dict(cursor.fetchall())
    index = 0 if texts is not None else list(columns).index(key)
    missing = [row[index] for row in rows if row[index] not in ids]
    if missing:
        ids.update(ids_by(model, key, missing))
    return ids


def insert_rows(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[tuple],
    *,
    returning: str | None,
    derived: tuple[type[models.Model], dict[str, str]] | None = None,
    **filters: Any,
) -> dict:
    """:func:`insert` for rows given as tuples of ``columns`` values.

    ``returning`` None: return nothing. ``derived=(child, mapping)`` also inserts one
    ``child`` row per inserted row, in the same order, whose columns ``mapping`` takes
    from the new row (``{child attname: row attname or "id"}``; the child's other columns
    get their model defaults). ``filters`` narrow the SQLite look-ups as for :func:`insert`.

    On PostgreSQL the new rows' ids are drawn from the table's sequence first (one
    statement), so the rows go straight into the table with COPY — no staging table, no
    INSERT … SELECT, no ids travelling back — and the children's rows are built here.
    Rows get their ids in the order given, as with an INSERT.
    """
    if not rows:
        return {}
    if not _postgres():
        dicts = [dict(zip(columns, row, strict=True)) for row in rows]
        if derived is None:
            if returning is None:
                model.objects.bulk_create([model(**row) for row in dicts], batch_size=BATCH)
                return {}
            return insert(model, dicts, returning=returning, **filters)
        return _insert_derived_portable(model, dicts, returning, derived, filters)
    ids = _allocate_ids(model, len(rows))
    _copy_into(
        model,
        (model._meta.pk.attname, *columns),
        [(id_, *row) for id_, row in zip(ids, rows, strict=True)],
    )
    if derived is not None:
        child, mapping = derived
        positions = [None if name == "id" else columns.index(name) for name in mapping.values()]
        _copy_into(
            child,
            tuple(mapping),
            [
                tuple(id_ if at is None else row[at] for at in positions)
                for id_, row in zip(ids, rows, strict=True)
            ],
        )
    if returning is None:
        return {}
    at = columns.index(returning)
    return {row[at]: id_ for id_, row in zip(ids, rows, strict=True)}


def _allocate_ids(model: type[models.Model], count: int) -> list[int]:
    """``count`` new ids from the primary key's sequence, in increasing order."""
    meta = model._meta
    with connection.cursor() as cursor:
        # The sequence named once (OFFSET 0 keeps the subquery from being inlined), not
        # looked up in the catalog for every id: 0.03 instead of 0.22 s of the backend's
        # CPU per 100,000 ids.
        cursor.execute(
            "SELECT nextval(named.sequence) FROM (SELECT pg_get_serial_sequence(%s, %s)"
            "::regclass AS sequence OFFSET 0) named, generate_series(1, %s)",
            [meta.db_table, meta.pk.column, count],
        )
        return sorted(row[0] for row in cursor.fetchall())


def _copy_into(model: type[models.Model], columns: Sequence[str], rows: Sequence[tuple]) -> None:
    """COPY ``rows`` straight into the model's table (plus Django's defaults of the other
    columns); its triggers and constraints apply as to any INSERT."""
    meta = model._meta
    defaults = _defaults(model, columns)
    fields = [meta.get_field(name) for name in (*columns, *defaults)]
    if any(isinstance(field, models.JSONField) for field in fields):
        raise ValueError("_copy_into takes no JSON column")  # see _staged_rows
    names = ", ".join(_q(field.column) for field in fields)
    extra = tuple(defaults.values())
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {_q(meta.db_table)} ({names}) FROM STDIN") as copy,
    ):
        write = copy.write_row
        if extra:
            for row in rows:
                write(row + extra)
        else:
            for row in rows:
                write(row)


def _defaults(model: type[models.Model], given: Iterable[str]) -> dict[str, Any]:
    """Django's defaults (which live in Python) of the columns not ``given``."""
    given = set(given)
    return {
        field.attname: field.get_default()
        for field in model._meta.concrete_fields
        if field.attname not in given and field.has_default() and not field.primary_key
    }


def _insert_derived_portable(
    model: type[models.Model],
    rows: list[dict[str, Any]],
    returning: str | None,
    derived: tuple[type[models.Model], dict[str, str]],
    filters: dict[str, Any],
) -> dict:
    child, mapping = derived
    instances = [model(**row) for row in rows]
    created = model.objects.bulk_create(instances, batch_size=BATCH)
    if any(instance.pk is None for instance in created):  # a backend without RETURNING
        key = returning or next(iter(mapping.values()))
        ids = ids_by(model, key, (row[key] for row in rows), **filters)
        for instance, row in zip(created, rows, strict=True):
            instance.pk = ids[row[key]]
    child.objects.bulk_create(
        [
            child(
                **{
                    name: (instance.pk if source == "id" else getattr(instance, source))
                    for name, source in mapping.items()
                }
            )
            for instance in created
        ],
        batch_size=BATCH,
    )
    if returning is None:
        return {}
    return {getattr(instance, returning): instance.pk for instance in created}


class _staged_rows:
    """COPY tuple ``rows`` (values of ``columns``, plus Django's defaults of the model's
    other columns) into a temporary table shaped like them.

    Inside a transaction the table is made once per transaction and shape (``ON COMMIT
    DROP``) and emptied before each use: an import that writes its rows in chunks (50
    chunks a file at 10^5 tuples, four archive tables each) would otherwise create and
    drop a table per chunk and table, whose catalog work cost about as much as the
    chunk's rows. (Emptying a table made in the same transaction is done in place.)
    Outside one (autocommit) the table is made and dropped around each use."""

    def __init__(
        self,
        model: type[models.Model],
        columns: Sequence[str],
        rows: Sequence[tuple],
        texts: Sequence[bytes] | None = None,
    ) -> None:
        meta = model._meta
        defaults = _defaults(model, columns)
        if texts is not None and defaults:
            raise ValueError(f"COPY text of {model.__name__} must give every column")
        self.texts = texts
        names = [*columns, *defaults]
        fields = [meta.get_field(name) for name in names]
        self.json = [i for i, field in enumerate(fields) if isinstance(field, models.JSONField)]
        self.names = ", ".join(_q(field.column) for field in fields)
        extra = tuple(defaults.values())
        self.rows = [row + extra for row in rows] if extra else rows
        self.table = _q(meta.db_table)
        self.kept = connection.in_atomic_block
        if self.kept:
            shape = zlib.crc32(self.names.encode()) & 0xFFFFFF
            self.staging = _q(f"claimgate_stage_{meta.db_table}_{shape:06x}")
        else:
            self.staging = _q(f"claimgate_staging_{meta.db_table}")

    def __enter__(self) -> tuple[Any, str, str]:
        self.cursor = connection.cursor()
        cursor = self.cursor
        if self.kept:
            cursor.execute(
                f"CREATE TEMPORARY TABLE IF NOT EXISTS {self.staging} ON COMMIT DROP AS "  # noqa: S608
                f"SELECT {self.names} FROM {self.table} WITH NO DATA"
            )
            cursor.execute(f"TRUNCATE {self.staging}")
        else:
            cursor.execute(f"DROP TABLE IF EXISTS {self.staging}")
            cursor.execute(
                f"CREATE TEMPORARY TABLE {self.staging} AS "  # noqa: S608
                f"SELECT {self.names} FROM {self.table} WITH NO DATA"
            )
        json_columns = self.json
        with cursor.cursor.copy(f"COPY {self.staging} ({self.names}) FROM STDIN") as copy:
            write = copy.write_row
            if self.texts is not None:
                copy.write(b"".join(self.texts))
            elif not json_columns:
                for row in self.rows:
                    write(row)
            else:
                for row in self.rows:
                    values = list(row)
                    for index in json_columns:
                        # Any JSON text of the value stores the same jsonb; this one is
                        # the fastest to make.
                        values[index] = canonical_text_unchecked(values[index])
                    write(values)
        return cursor, self.staging, self.names

    def __exit__(self, *exc: object) -> None:
        try:
            if not self.kept:
                self.cursor.execute(f"DROP TABLE IF EXISTS {self.staging}")
        finally:
            self.cursor.close()


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
        # Columns made from another column's value at INSERT (as their pre_save does).
        derived = [
            field
            for field in meta.concrete_fields
            if field.attname not in rows[0] and hasattr(field, "text_of_row")
        ]
        if derived:
            self.rows = [
                {**row, **{field.attname: field.text_of_row(row) for field in derived}}
                for row in self.rows
            ]
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
