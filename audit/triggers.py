"""Database triggers that make rows immutable, for PostgreSQL and SQLite.

Used from migrations (``RunPython(install(...), uninstall(...))``) so that the rule holds
whatever writes to the database: the ORM, a raw cursor, or someone with psql. A refused
statement raises ``django.db.IntegrityError`` on both backends (PostgreSQL: SQLSTATE 23001
restrict_violation; SQLite: RAISE(ABORT), a constraint failure).

TRUNCATE: on PostgreSQL a rule with ``"TRUNCATE"`` among its operations is a statement-level
BEFORE TRUNCATE trigger (TRUNCATE fires no row trigger, so the UPDATE/DELETE rules alone
leave it open; a ``TRUNCATE … CASCADE`` from another table fires it too). SQLite has no
TRUNCATE statement: its ``DELETE FROM t`` without WHERE runs the DELETE rule's row trigger,
so there the TRUNCATE rule installs nothing.

SQLite caveat for later migrations: to alter a table SQLite rebuilds it (create a copy, drop,
rename), which fails while a trigger on *another* table names it in its WHEN clause. Such a
migration uninstalls that rule first and installs it again last (see audit 0007).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

# SQLite's DELETE triggers ask claimgate_maintenance(), a function this process registers
# on each of its connections (audit.apps); it answers 1 only inside maintenance(), which
# the test suite uses so that Django can empty tables between transactional tests. Any
# other client has no such function, so its DELETE fails: the rule fails closed. (On
# PostgreSQL Django empties tables with TRUNCATE, which the TRUNCATE rules refuse; the test
# suite does it as a superuser with session_replication_role = replica, under which no
# ordinary trigger fires and which no other role may set.)
_maintenance = False


def maintenance_flag() -> int:
    return 1 if _maintenance else 0


@contextmanager
def maintenance() -> Iterator[None]:
    global _maintenance
    _maintenance = True
    try:
        yield
    finally:
        _maintenance = False


# PostgreSQL allows no subquery in a trigger's WHEN clause, so the condition goes into
# the function. Statements run with params=None so that psycopg leaves '%' alone.
_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger AS $$
BEGIN
    IF {condition} THEN
        RAISE EXCEPTION 'claimgate: % on % is refused ({reason})', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql
"""


@dataclass(frozen=True)
class Immutable:
    """Refuse ``operations`` on ``table``; ``when`` (SQL over OLD, and NEW for an UPDATE)
    narrows the rule. ``"TRUNCATE"`` takes no ``when`` (a statement has no row)."""

    table: str
    operations: Sequence[str] = ("UPDATE",)
    reason: str = "rows are immutable once written"
    when: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.operations) - {"UPDATE", "DELETE", "TRUNCATE"}
        if unknown:
            raise ValueError(f"{self.table}: no rule for {sorted(unknown)}")
        if self.when and "TRUNCATE" in self.operations:
            raise ValueError(f"{self.table}: a TRUNCATE rule has no row to test `when` on")

    def name(self, operation: str) -> str:
        return f"{self.table}_refuse_{operation.lower()}"

    def create_sql(self, vendor: str) -> list[str]:
        statements = []
        for operation in self.operations:
            if vendor == "postgresql":
                function = f"{self.name(operation)}_fn"
                statements.append(
                    _PG_FUNCTION.format(
                        name=function,
                        condition=self.when or "TRUE",
                        # Inside a quoted literal of a RAISE format: quotes doubled, and
                        # a percent sign would be read as a format argument.
                        reason=self.reason.replace("'", "''").replace("%", "%%"),
                    )
                )
                level = "STATEMENT" if operation == "TRUNCATE" else "ROW"
                statements.append(
                    f"CREATE TRIGGER {self.name(operation)} BEFORE {operation} ON {self.table} "
                    f"FOR EACH {level} EXECUTE FUNCTION {function}()"
                )
            elif vendor == "sqlite":
                if operation == "TRUNCATE":
                    continue  # no such statement: DELETE FROM runs the DELETE rule
                conditions = [self.when] if self.when else []
                if operation == "DELETE":
                    conditions.append("claimgate_maintenance() = 0")
                when = f"WHEN {' AND '.join(conditions)} " if conditions else ""
                message = f"claimgate: {operation} on {self.table} is refused ({self.reason})"
                statements.append(
                    f"CREATE TRIGGER {self.name(operation)} BEFORE {operation} ON {self.table} "
                    f"FOR EACH ROW {when}BEGIN SELECT RAISE(ABORT, '{message}'); END"
                )
            else:  # pragma: no cover - only the two supported backends
                raise ValueError(f"Claimgate supports PostgreSQL and SQLite, not {vendor}")
        return statements

    def drop_sql(self, vendor: str) -> list[str]:
        if vendor == "postgresql":
            return [
                f"DROP TRIGGER IF EXISTS {self.name(op)} ON {self.table}; "
                f"DROP FUNCTION IF EXISTS {self.name(op)}_fn()"
                for op in self.operations
            ]
        return [
            f"DROP TRIGGER IF EXISTS {self.name(op)}" for op in self.operations if op != "TRUNCATE"
        ]


@dataclass(frozen=True)
class PartitionVersion:
    """Move a study's partition version on whenever an UPDATE changes the partition of
    one of its units, whatever wrote it (the services, a raw cursor, psql): the stored
    partition summaries, outcome counts and reliability staleness read that version.

    PostgreSQL: one statement-level trigger with transition tables (a bulk assignment of
    10⁵ units is one join, not 10⁵ calls; a column list cannot go with transition tables,
    so the join keeps only rows whose partition changed). SQLite: a row trigger.
    """

    table: str = "audit_unit"
    state: str = "audit_partitionstate"
    name: str = "audit_unit_partition_version"

    def create_sql(self, vendor: str) -> list[str]:
        upsert = (
            f"INSERT INTO {self.state} (study_id, version, summary_key, summary) "
            "{rows} ON CONFLICT (study_id) DO UPDATE SET version = "
            f"{self.state}.version + 1"
        )
        if vendor == "postgresql":
            rows = (
                "SELECT DISTINCT n.study_id, 1, '', '{}'::jsonb FROM new_rows n "
                "JOIN old_rows o ON o.id = n.id WHERE n.partition IS DISTINCT FROM o.partition"
            )
            return [
                f"CREATE OR REPLACE FUNCTION {self.name}_fn() RETURNS trigger AS $$ "
                f"BEGIN {upsert.format(rows=rows)}; RETURN NULL; END; $$ LANGUAGE plpgsql",
                f"CREATE TRIGGER {self.name} AFTER UPDATE ON {self.table} "
                "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {self.name}_fn()",
            ]
        if vendor == "sqlite":
            rows = "VALUES (NEW.study_id, 1, '', '{}')"
            return [
                f"CREATE TRIGGER {self.name} AFTER UPDATE OF partition ON {self.table} "
                "FOR EACH ROW WHEN OLD.partition IS NOT NEW.partition "
                f"BEGIN {upsert.format(rows=rows)}; END"
            ]
        raise ValueError(f"Claimgate supports PostgreSQL and SQLite, not {vendor}")

    def drop_sql(self, vendor: str) -> list[str]:
        if vendor == "postgresql":
            return [
                f"DROP TRIGGER IF EXISTS {self.name} ON {self.table}; "
                f"DROP FUNCTION IF EXISTS {self.name}_fn()"
            ]
        return [f"DROP TRIGGER IF EXISTS {self.name}"]


def install(*rules: Immutable | PartitionVersion) -> Callable:
    def forward(apps, schema_editor) -> None:
        vendor = schema_editor.connection.vendor
        for rule in rules:
            for statement in rule.create_sql(vendor):
                schema_editor.execute(statement, params=None)

    return forward


def uninstall(*rules: Immutable | PartitionVersion) -> Callable:
    def backward(apps, schema_editor) -> None:
        vendor = schema_editor.connection.vendor
        for rule in rules:
            for statement in rule.drop_sql(vendor):
                schema_editor.execute(statement, params=None)

    return backward
