"""The application's own PostgreSQL login, which cannot erase history (issue 11).

Two logins reach the database. The **owner** (``MIGRATE_DATABASE_URL``) runs ``migrate``
and owns every table, trigger and sequence. The **app role** (``DATABASE_URL`` of the web
processes and workers) owns nothing, so it can neither ``ALTER TABLE … DISABLE TRIGGER``
nor ``DROP TRIGGER`` nor ``DROP``/``ALTER`` a table (PostgreSQL reserves those to the
owner), and it is granted only what the code needs:

- history (labels, ledger entries, freezes) and the archive snapshots: SELECT, INSERT —
  never UPDATE or DELETE (the row triggers refuse them too);
- the ledger head: SELECT, INSERT, UPDATE (its trigger lets it only move forward);
- ``django_migrations``: SELECT (only the owner migrates);
- every other table: SELECT, INSERT, UPDATE, DELETE;
- no table ever gets TRUNCATE, REFERENCES or TRIGGER; sequences get USAGE only (nextval).

Pure: this module only says which privileges and writes the SQL; ``manage.py
db_app_role`` (audit/management) reads the catalog, checks the role and runs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: Tables whose rows are history: written once, never changed or removed.
HISTORY = ("annotator_label", "annotator_labelsight", "audit_ledgerentry", "audit_studyfreeze")
#: Archive rows: written by imports, never edited (row triggers) nor removed by the app.
ARCHIVE = (
    "audit_query",
    "audit_pipeline",
    "audit_answersnapshot",
    "audit_sourcesnapshot",
    # Canonical texts of the archive rows above, per unit (audit.releases).
    "audit_unitrecordtext",
)
#: The ledger head: one row, moved forward by every append.
FORWARD_ONLY = ("audit_ledgerhead",)
#: Read by the app, written only by ``migrate`` as the owner.
READ_ONLY = ("django_migrations",)

ALL = ("SELECT", "INSERT", "UPDATE", "DELETE")
#: Every table privilege PostgreSQL knows: what the app role holds is checked against all.
TABLE_PRIVILEGES = (*ALL, "TRUNCATE", "REFERENCES", "TRIGGER")

#: What a table created by a later migration gets before ``db_app_role`` runs again
#: (ALTER DEFAULT PRIVILEGES): it can be read and appended to, nothing more, until the
#: policy above is applied to it.
DEFAULT_TABLE_PRIVILEGES = ("SELECT", "INSERT")


def table_privileges(table: str) -> tuple[str, ...]:
    """The privileges the app role holds on ``table``."""
    if table in READ_ONLY:
        return ("SELECT",)
    if table in HISTORY or table in ARCHIVE:
        return ("SELECT", "INSERT")
    if table in FORWARD_ONLY:
        return ("SELECT", "INSERT", "UPDATE")
    return ALL


class RoleRefused(ValueError):
    """The app role cannot be set up as asked (a reason code and a sentence)."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


SAME_LOGIN = "app_role_is_owner"
EXCESS = "app_role_excess_privilege"
PRIVILEGED = "app_role_privileged"
MEMBER_OF_OWNER = "app_role_member_of_owner"
FOREIGN_TABLES = "tables_not_owned"
INVALID_NAME = "invalid_role_name"


@dataclass(frozen=True)
class RoleState:
    """What the catalog says about the app role before the command runs."""

    exists: bool
    #: Attributes it must not have (SUPERUSER, CREATEROLE, REPLICATION, BYPASSRLS) that it
    #: has: each lets a login around privileges (CREATEROLE can make itself a member of
    #: the owner's role).
    attributes: tuple[str, ...] = ()
    #: Owners of tables in the schema that the role is, or is a member of.
    acts_as: tuple[str, ...] = ()
    can_login: bool = True


def quote_ident(name: str) -> str:
    if not name or "\x00" in name:
        raise RoleRefused(f"{name!r} is not a role, schema or table name", code=INVALID_NAME)
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """A string literal (standard_conforming_strings, on since PostgreSQL 9.1)."""
    if "\x00" in text:
        raise RoleRefused("a password cannot hold a NUL character", code=INVALID_NAME)
    return "'" + text.replace("'", "''") + "'"


def role_problems(
    *, role: str, owner: str, state: RoleState, foreign_tables: Iterable[str] = ()
) -> None:
    """Refuse a set-up that would leave the app able to erase history: raises
    :class:`RoleRefused` naming the first problem."""
    if role == owner:
        raise RoleRefused(
            f"the app's login {role!r} is the login that owns the tables: give the app a "
            "role of its own (DATABASE_URL) and run this as the owner (MIGRATE_DATABASE_URL)",
            code=SAME_LOGIN,
        )
    if state.attributes:
        raise RoleRefused(
            f"role {role!r} has {', '.join(state.attributes)}: the app's login must have "
            "none of these (a superuser bypasses every privilege and trigger)",
            code=PRIVILEGED,
        )
    if state.acts_as:
        raise RoleRefused(
            f"role {role!r} owns tables or is a member of their owner "
            f"({', '.join(state.acts_as)}), so it could disable or drop their triggers: "
            "revoke that membership or choose another role",
            code=MEMBER_OF_OWNER,
        )
    foreign = sorted(foreign_tables)
    if foreign:
        raise RoleRefused(
            f"{len(foreign)} tables are not owned by {owner!r} (e.g. {', '.join(foreign[:5])}): "
            "run this as the login that ran migrate, which owns them",
            code=FOREIGN_TABLES,
        )


def excess_problems(held: Mapping[str, Iterable[str]], *, role: str) -> None:
    """After the grants: refuse if ``role`` still holds more than :func:`table_privileges`
    on some table (``held``: table → privileges it holds however it got them, e.g.
    through PUBLIC or another role's membership)."""
    excess = sorted(
        f"{privilege} on {table}"
        for table, privileges in held.items()
        for privilege in set(privileges) - set(table_privileges(table))
    )
    if excess:
        raise RoleRefused(
            f"role {role!r} still holds {len(excess)} privileges beyond what the app needs "
            f"(e.g. {', '.join(excess[:5])}), granted to PUBLIC or to a role it belongs to: "
            "revoke them there",
            code=EXCESS,
        )


def setup_statements(
    *,
    role: str,
    database: str,
    schema: str,
    tables: Iterable[str],
    exists: bool,
    password: str | None,
    can_login: bool = True,
) -> list[str]:
    """The statements that create (or update) the app role and grant it exactly
    :func:`table_privileges` on every table of ``schema``, revoking anything else first.
    Idempotent: run it again after every ``migrate``. An existing role is altered only to
    set a password or LOGIN (which takes CREATEROLE), so a role a DBA made needs neither."""
    r, s = quote_ident(role), quote_ident(schema)
    login = "LOGIN" + (f" PASSWORD {quote_literal(password)}" if password is not None else "")
    statements = []
    if not exists:
        statements.append(f"CREATE ROLE {r} {login}")
    elif password is not None or not can_login:
        statements.append(f"ALTER ROLE {r} {login}")
    statements += [
        f"GRANT CONNECT, TEMPORARY ON DATABASE {quote_ident(database)} TO {r}",
        f"GRANT USAGE ON SCHEMA {s} TO {r}",
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM {r}",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {s} FROM {r}",
    ]
    by_privileges: dict[tuple[str, ...], list[str]] = {}
    for table in sorted(set(tables)):
        by_privileges.setdefault(table_privileges(table), []).append(table)
    for privileges, names in by_privileges.items():
        listed = ", ".join(f"{s}.{quote_ident(name)}" for name in names)
        statements.append(f"GRANT {', '.join(privileges)} ON TABLE {listed} TO {r}")
    statements += [
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {s} TO {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} REVOKE ALL ON TABLES FROM {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} "
        f"GRANT {', '.join(DEFAULT_TABLE_PRIVILEGES)} ON TABLES TO {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} REVOKE ALL ON SEQUENCES FROM {r}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT USAGE ON SEQUENCES TO {r}",
    ]
    return statements


def summary(tables: Iterable[str]) -> Mapping[tuple[str, ...], int]:
    """How many tables get each set of privileges (for the command's report)."""
    counts: dict[tuple[str, ...], int] = {}
    for table in set(tables):
        privileges = table_privileges(table)
        counts[privileges] = counts.get(privileges, 0) + 1
    return counts
