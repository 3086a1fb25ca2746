"""Hot reads compiled by the ORM once per process, then run again with new values.

The labelling loop's requests run the same dozen reads with different ids every time, and
compiling each queryset (resolving its lookups and joins, writing its SQL) cost more CPU
than the database spent answering it (docs/benchmarks.md, "fourth round"). A
:class:`CompiledRead` builds its queryset once per database connection with a sentinel in
place of every value that changes (each a parameter of the compiled statement, never
part of its text), keeps the SQL, and on every later call binds the call's values in the
sentinels' places and runs it through the connection's cursor (so query counting and
execute wrappers see it as before). Rows are converted by the same compiler's converters
(JSON, dates, …), and model instances are built as the ORM's own iterable builds them,
``select_related`` and annotations included: a call answers what the queryset would.

Only for reads whose shape does not depend on the values (no ``__in`` lists, no branches
on a value): compiling refuses a sentinel that does not come out as one parameter.

On PostgreSQL these statements (and the loop's hand-written ones, through
:func:`prepared_cursor`) are also prepared on the server, once per connection: planning
the same joins again on every call was most of the database's CPU in the loop
(docs/benchmarks.md, "fifth round"). ``PREPARED_STATEMENTS = False`` (the environment's
``DB_PREPARED_STATEMENTS=0``) turns that off, for a pooler that cannot keep them (PgBouncer
in transaction mode before 1.21).
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.models.sql import InsertQuery

_INT_SENTINEL = -(2**62)  # far below any id, count or key of this database
_BIGINT = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class _Slot:
    name: str
    hexed: bool  # the value is bound as its hex (a UUID where the database has no uuid type)


@dataclass
class _Statement:
    sql: str
    params: list[Any]  # a _Slot where a call's value goes, else the compiled constant
    compiler: Any


class CompiledRead:
    """``build(**sentinels)`` → the queryset (``values()``, ``values_list()`` or model
    rows); ``kinds`` names each value and its type (int, str or uuid.UUID)."""

    def __init__(self, build: Callable[..., QuerySet], *, using: str = "default", **kinds: type):
        self._build = build
        self._kinds = kinds
        self._using = using
        self._local = threading.local()  # a connection belongs to one thread

    def _statement(self) -> _Statement:
        connection = connections[self._using]
        held = getattr(self._local, "held", None)
        if held is not None and held[0] is connection:
            return held[1]
        sentinels = {name: _sentinel(kind, n) for n, (name, kind) in enumerate(self._kinds.items())}
        queryset = self._build(**sentinels)
        compiler = queryset.query.get_compiler(using=self._using)
        sql, compiled = compiler.as_sql()
        params: list[Any] = []
        found: set[str] = set()
        for value in compiled:
            slot = _slot_of(value, sentinels)
            if slot is not None:
                found.add(slot.name)
            params.append(slot if slot is not None else value)
        missing = set(sentinels) - found
        if missing:
            raise ValueError(f"values not bound as parameters: {sorted(missing)}")
        statement = _Statement(sql=sql, params=params, compiler=compiler)
        self._local.held = (connection, statement)
        return statement

    def bound(self, **values: Any) -> tuple[str, list[Any]] | None:
        """The statement and its parameters for ``values``; ``None`` when a value is one
        no row can hold (the ORM answers nothing without asking the database, which
        would refuse the parameter: so does this)."""
        statement = self._statement()
        values = {name: _as(kind, values[name]) for name, kind in self._kinds.items()}
        if any(
            isinstance(value, int) and not _BIGINT[0] <= value <= _BIGINT[1]
            for value in values.values()
        ):
            return None
        return statement.sql, [_bound(item, values) for item in statement.params]

    def _fetched(self, values: dict[str, Any]) -> list[Any]:
        bound = self.bound(**values)
        if bound is None:
            return []
        with prepared_cursor(self._using) as cursor:
            cursor.execute(*bound)
            return cursor.fetchall()

    def _converted(self, rows: list[Any]) -> list[Any]:
        compiler = self._statement().compiler
        if compiler.has_extra_select:  # ordering columns added to the select: not answered
            rows = [row[: compiler.col_count] for row in rows]
        return list(compiler.results_iter(results=[rows]))

    def dicts(self, **values: Any) -> list[dict[str, Any]]:
        """The rows of a ``values()`` queryset."""
        return self.dicts_of(self._fetched(values))

    def tuples(self, **values: Any) -> list[tuple[Any, ...]]:
        """The rows of a ``values_list()`` queryset."""
        return self.tuples_of(self._fetched(values))

    def instances(self, **values: Any) -> list[Model]:
        """The model instances of a model queryset, built as ``ModelIterable`` builds them."""
        return self.instances_of(self._fetched(values))

    def dicts_of(self, rows: list[Any]) -> list[dict[str, Any]]:
        """:meth:`dicts` of rows fetched elsewhere (:func:`fetched_together`)."""
        query = self._statement().compiler.query
        names = [*query.extra_select, *query.values_select, *query.annotation_select]
        return [dict(zip(names, row, strict=True)) for row in self._converted(rows)]

    def tuples_of(self, rows: list[Any]) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._converted(rows)]

    def instances_of(self, rows: list[Any]) -> list[Model]:
        compiler = self._statement().compiler
        select, klass_info = compiler.select, compiler.klass_info
        annotations = compiler.annotation_col_map
        fields = klass_info["select_fields"]
        start, end = fields[0], fields[-1] + 1
        names = [column[0].target.attname for column in select[start:end]]
        populators = get_related_populators(klass_info, select, self._using)
        model = klass_info["model"]
        built = []
        for row in self._converted(rows):
            obj = model.from_db(self._using, names, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            for name, position in annotations.items():
                setattr(obj, name, row[position])
            built.append(obj)
        return built


def fetched_together(
    *reads: tuple[CompiledRead, dict[str, Any]], using: str = "default"
) -> list[list[Any]]:
    """The raw rows of several reads, in order, sent to PostgreSQL in one round trip
    (:func:`rows_together`); a read whose value no row can hold is not sent and answers
    nothing. Convert each with its read's ``*_of`` method."""
    bound = [read.bound(**values) for read, values in reads]
    answers = iter(rows_together([item for item in bound if item is not None], using=using))
    return [[] if item is None else next(answers) for item in bound]


def rows_together(
    statements: list[tuple[str, list[Any]]], *, using: str = "default"
) -> list[list[Any]]:
    """The rows of several statements (SQL and parameters), in order, sent to PostgreSQL
    in one round trip: a pipeline of prepared statements (each still its own statement,
    run after the one before, with its own snapshot; an error stops the rest), or, with
    prepared statements off, one query of several statements, which client-side binding
    takes. Elsewhere (or with a libpq without pipelines) one by one."""
    connection = connections[using]
    fetched: list[list[Any]] = []
    if len(statements) > 1 and _preparing(connection) and _pipeline_supported():
        return _pipelined(connection, statements)
    if connection.vendor == "postgresql" and len(statements) > 1 and _together(connection):
        with connection.cursor() as cursor:
            cursor.execute(
                "; ".join(sql for sql, _ in statements), [p for _, ps in statements for p in ps]
            )
            fetched.append(cursor.fetchall())
            while cursor.nextset():
                fetched.append(cursor.fetchall())
        return fetched
    with prepared_cursor(using) as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
            fetched.append(cursor.fetchall())
    return fetched


@functools.cache
def _pipeline_supported() -> bool:
    """psycopg's pipeline mode needs libpq 14 or later (the binary package bundles one)."""
    from psycopg import Pipeline

    return Pipeline.is_supported()


def _together(connection: Any) -> bool:
    # Server-side binding (an OPTIONS setting) takes one statement per query.
    return not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")


def _pipelined(connection: Any, sent: list[tuple[str, list[Any]]]) -> list[list[Any]]:
    """``sent`` run as prepared statements in one pipeline (one round trip), each through
    Django's cursor wrapper (execute wrappers and query logging see every statement)."""
    cursors = [prepared_cursor(connection.alias) for _ in sent]
    try:
        with connection.wrap_database_errors, connection.connection.pipeline():
            for cursor, (sql, params) in zip(cursors, sent, strict=True):
                cursor.execute(sql, params)
        with connection.wrap_database_errors:
            return [cursor.fetchall() for cursor in cursors]
    finally:
        for cursor in cursors:
            cursor.close()


#: The prepare threshold set on a connection that has none (Django sets none): only the
#: statements run through prepared_cursor (each asks to be prepared) are prepared; the
#: ORM's own cursors bind on the client, where nothing is prepared.
_ASKED_ONLY = 2**31


def _preparing(connection: Any) -> bool:
    return connection.vendor == "postgresql" and getattr(settings, "PREPARED_STATEMENTS", True)


def prepared_cursor(using: str = "default") -> Any:
    """A cursor of the ``using`` connection (Django's wrapper: execute wrappers, query
    logging and error translation as for ``connection.cursor()``) whose statements
    PostgreSQL prepares on their first run on this connection and then only binds and
    runs (psycopg's server-side binding and prepared-statement cache, which forgets them
    on a rollback or a schema change and is per connection, so a new connection prepares
    again). Elsewhere, or with ``PREPARED_STATEMENTS`` off, ``connection.cursor()``."""
    connection = connections[using]
    if not _preparing(connection):
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        raw = connection.connection
        if raw.prepare_threshold is None:
            raw.prepare_threshold = _ASKED_ONLY
        preparing, logged = _classes()
        cursor = preparing(raw)
        _timezone_of(connection, raw, cursor)
        if connection.queries_logged:
            connection.validate_thread_sharing()
            return logged(cursor, connection)
        return connection._prepare_cursor(cursor)


@functools.cache
def _classes() -> tuple[type, type]:
    """The psycopg cursor that prepares, and the debug wrapper that logs its statements."""
    from django.db.backends.postgresql.base import CursorDebugWrapper, ServerBindingCursor
    from django.db.backends.utils import CursorWrapper

    class PreparingCursor(ServerBindingCursor):
        """Server-side binding; every statement asks to be prepared."""

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            kwargs.setdefault("prepare", True)
            return super().execute(query, params, **kwargs)

    class PreparedDebugWrapper(CursorDebugWrapper):
        """Logs a prepared statement with its values in place, as the client-side
        cursors' statements are logged (psycopg keeps no bound text of a prepared
        one): composed only where queries are logged (DEBUG, tests)."""

        def execute(self, sql: Any, params: Any = None) -> Any:
            try:
                shown = self.db.ops.compose_sql(sql, params) if params else sql
            except Exception:  # a value the client cannot quote: logged as sent
                shown = sql
            with self.debug_sql(shown, params):
                return CursorWrapper.execute(self, sql, params)

    return PreparingCursor, PreparedDebugWrapper


def _timezone_of(connection: Any, raw: Any, cursor: Any) -> None:
    """The time zone loader Django's ``create_cursor`` gives a cursor whose connection's
    zone differs from the adapters' (the same check)."""
    from django.db.backends.postgresql.base import TIMESTAMPTZ_OID
    from django.db.backends.postgresql.psycopg_any import register_tzloader
    from psycopg.pq import Format

    loader = raw.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
    if connection.timezone != loader.timezone:
        register_tzloader(connection.timezone, cursor)


def _sentinel(kind: type, n: int) -> Any:
    if kind is int:
        return _INT_SENTINEL - n
    if kind is str:
        return f"compiled-read-sentinel-{uuid.uuid4().hex}"
    if kind is uuid.UUID:
        return uuid.uuid4()
    raise TypeError(f"no sentinel for {kind!r}")


def _as(kind: type, value: Any) -> Any:
    return uuid.UUID(str(value)) if kind is uuid.UUID else kind(value)


def _slot_of(value: Any, sentinels: dict[str, Any]) -> _Slot | None:
    for name, sentinel in sentinels.items():
        if type(value) is type(sentinel) and value == sentinel:
            return _Slot(name, hexed=False)
        if isinstance(sentinel, uuid.UUID) and value == sentinel.hex:
            return _Slot(name, hexed=True)
    return None


def _bound(item: Any, values: dict[str, Any]) -> Any:
    if not isinstance(item, _Slot):
        return item
    value = values[item.name]
    return value.hex if item.hexed else value


class CompiledInsert:
    """The ORM's INSERT of one ``model`` row (every concrete field but the primary key,
    ``RETURNING`` it), compiled once per connection: each call computes only the row's
    values, as the ORM's insert does (each field's ``pre_save`` and database value: the
    JSON adapters, ``auto_now_add`` times). ``stand_in``: SQL (with its parameters) in
    place of a field's value, e.g. a subquery that counts the row's number."""

    def __init__(self, model: type[Model], *, using: str = "default") -> None:
        self._model = model
        self._using = using
        self._fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        self._local = threading.local()

    def _compiled(self) -> tuple[list[str], Any]:
        connection = connections[self._using]
        held = getattr(self._local, "held", None)
        if held is not None and held[0] is connection:
            return held[1]
        query = InsertQuery(self._model)
        query.insert_values(self._fields, [self._model()])
        compiler = query.get_compiler(using=self._using)
        compiler.returning_fields = [self._model._meta.pk]
        [(sql, params)] = compiler.as_sql()
        pieces = sql.split("%s")
        if len(params) != len(self._fields) or len(pieces) != len(self._fields) + 1:
            raise ValueError(f"the INSERT of {self._model.__name__} is not one value per field")
        self._local.held = (connection, (pieces, compiler))
        return pieces, compiler

    def sql_and_params(
        self, obj: Model, *, stand_in: dict[str, tuple[str, list[Any]]] | None = None
    ) -> tuple[str, list[Any]]:
        pieces, compiler = self._compiled()
        stand_in = stand_in or {}
        sql = [pieces[0]]
        params: list[Any] = []
        for field, after in zip(self._fields, pieces[1:], strict=True):
            if field.name in stand_in:
                fragment, values = stand_in[field.name]
                sql.append(fragment)
                params += values
            else:
                value = compiler.pre_save_val(field, obj)
                if hasattr(value, "resolve_expression"):  # its SQL is not "%s": stand it in
                    raise ValueError(f"{field.name} is an expression; give it as stand_in")
                sql.append("%s")
                params.append(compiler.prepare_value(field, value))
            sql.append(after)
        return "".join(sql), params
