"""python manage.py db_app_role --app-url URL: set up the app's own PostgreSQL login.

Run as the tables' owner (the login that ran ``migrate``: ``DATABASE_URL`` set to the
owner's URL), again after every ``migrate``. The policy is audit.dbrole's."""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction

from audit import dbrole

_FORBIDDEN_ATTRIBUTES = (
    ("rolsuper", "SUPERUSER"),
    ("rolcreaterole", "CREATEROLE"),
    ("rolreplication", "REPLICATION"),
    ("rolbypassrls", "BYPASSRLS"),
)


def app_login(url: str, *, database: str) -> tuple[str, str | None]:
    """The role name and password of the app's DATABASE_URL; its database must be the
    one this command is connected to."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql", "pgsql") or not parsed.username:
        raise CommandError(
            "--app-url must be the app's postgres://ROLE[:PASSWORD]@HOST/DB URL "
            "(its DATABASE_URL) [invalid_app_url]"
        )
    named = unquote(parsed.path.lstrip("/"))
    if named and named != database:
        raise CommandError(
            f"--app-url names database {named!r}, but this command is connected to "
            f"{database!r} (run it with the owner's URL of the same database) [invalid_app_url]"
        )
    password = unquote(parsed.password) if parsed.password is not None else None
    return unquote(parsed.username), password


class Command(BaseCommand):
    help = (
        "Create or update the app's own PostgreSQL login (named by --app-url, the app's "
        "DATABASE_URL): it owns nothing and may SELECT/INSERT everywhere, UPDATE/DELETE "
        "only where the code needs it (never labels, ledger entries, freezes or archive "
        "snapshots), never TRUNCATE. Run as the tables' owner, after every migrate."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--app-url",
            required=True,
            help="the app's database URL; its user is the role, its password (if any) is set",
        )

    def handle(self, *args: object, **options: object) -> None:
        if connection.vendor != "postgresql":
            raise CommandError(
                "db_app_role sets up a PostgreSQL login; this database is "
                f"{connection.vendor} (the embedded default has no logins) [not_postgresql]"
            )
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user, current_database(), current_schema()")
            owner, database, schema = cursor.fetchone()
        role, password = app_login(str(options["app_url"]), database=database)
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                tables, foreign, state = _catalog(cursor, role=role, owner=owner, schema=schema)
                dbrole.role_problems(role=role, owner=owner, state=state, foreign_tables=foreign)
                for statement in dbrole.setup_statements(
                    role=role,
                    database=database,
                    schema=schema,
                    tables=tables,
                    exists=state.exists,
                    password=password,
                    can_login=state.can_login,
                ):
                    cursor.execute(statement, None)
                dbrole.excess_problems(_held(cursor, role=role, schema=schema), role=role)
        except dbrole.RoleRefused as exc:
            raise CommandError(f"{exc} [{exc.code}]") from exc
        counts = dbrole.summary(tables)
        self.stdout.write(
            f"app role {role!r} {'updated' if state.exists else 'created'} in database "
            f"{database!r} (schema {schema}), owned by {owner!r}: {len(tables)} tables"
        )
        for privileges, count in sorted(counts.items(), key=lambda item: -len(item[0])):
            self.stdout.write(f"  {', '.join(privileges)}: {count} tables")
        self.stdout.write(
            "  never TRUNCATE, ALTER, DROP or trigger control; tables of later migrations get "
            f"{', '.join(dbrole.DEFAULT_TABLE_PRIVILEGES)} until this runs again (after migrate)"
        )


def _catalog(
    cursor, *, role: str, owner: str, schema: str
) -> tuple[list[str], list[str], dbrole.RoleState]:
    cursor.execute(
        "SELECT tablename, tableowner FROM pg_tables WHERE schemaname = %s ORDER BY tablename",
        [schema],
    )
    rows = cursor.fetchall()
    tables = [name for name, _ in rows]
    foreign = [name for name, table_owner in rows if table_owner != owner]
    cursor.execute(
        "SELECT " + ", ".join(column for column, _ in _FORBIDDEN_ATTRIBUTES) + ", rolcanlogin "
        "FROM pg_roles WHERE rolname = %s",
        [role],
    )
    found = cursor.fetchone()
    if found is None:
        return tables, foreign, dbrole.RoleState(exists=False)
    *flags, can_login = found
    attributes = tuple(
        name for (_, name), has in zip(_FORBIDDEN_ATTRIBUTES, flags, strict=True) if has
    )
    owners = sorted({table_owner for _, table_owner in rows} | {owner})
    acts_as = []
    for table_owner in owners:
        cursor.execute("SELECT pg_has_role(%s, %s, 'USAGE')", [role, table_owner])
        if cursor.fetchone()[0]:
            acts_as.append(table_owner)
    return tables, foreign, dbrole.RoleState(True, attributes, tuple(acts_as), can_login)


def _held(cursor, *, role: str, schema: str) -> dict[str, set[str]]:
    """The privileges ``role`` holds on each table of ``schema``, however it got them
    (directly, through PUBLIC or through another role)."""
    cursor.execute(
        "SELECT tablename, privilege FROM pg_tables, unnest(%s::text[]) AS privilege "
        "WHERE schemaname = %s "
        "AND has_table_privilege(%s, format('%%I.%%I', schemaname, tablename), privilege)",
        [list(dbrole.TABLE_PRIVILEGES), schema, role],
    )
    held: dict[str, set[str]] = {}
    for table, privilege in cursor.fetchall():
        held.setdefault(table, set()).add(privilege)
    return held
