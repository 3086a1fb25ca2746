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


@dataclass(frozen=True)
class Reference:
    """A foreign key checked once per statement instead of once per row (PostgreSQL).

    A declared foreign key checks every inserted row on its own: one query and one
    FOR KEY SHARE row lock per row (a WAL record and a dirtied page for each referenced
    row the transaction has just written). The import writes 10^5 tuples, units and
    their observations a file: that was 650,000 checks, 2.9 of the backend's 6.5 CPU
    seconds (docs/benchmarks.md, "Import: fifth round"). These triggers enforce the
    same rule (MATCH SIMPLE: a row with a null in ``columns`` references nothing) with
    one set-wise probe per statement:

    - on ``table``: after an INSERT, every new row's key must be in ``parent`` (one
      anti-join of the statement's new rows with the parent's unique index); an UPDATE
      that changes the key checks the new key (row by row: nothing here updates keys);
    - on ``parent``: after a DELETE, and an UPDATE changing a referenced key, no row of
      ``table`` may still reference an old key; a TRUNCATE is refused while ``table``
      holds rows (where PostgreSQL's would need ``table`` truncated with it).

    Concurrency, without the row locks: the parent's side first takes a SHARE lock on
    ``table``, which waits for every transaction that has inserted or updated rows of it
    and keeps new ones out until the deleting transaction ends. So either the writer
    committed first (the delete then sees its rows and is refused), or the delete did
    (the writer's check, run after its INSERT waited for the lock, no longer sees the
    parent row and refuses it). Deletes and key updates of the parents are rare, and the
    labelling loop never takes that lock. (The app's login may take it: it holds UPDATE
    and DELETE on every such table, and none on the snapshots, whose rows it cannot
    delete at all: audit.dbrole.)

    That holds for READ COMMITTED (Django's isolation, and every writer here). A writer
    in a REPEATABLE READ or SERIALIZABLE transaction also locks the parent rows it
    references FOR KEY SHARE, as the foreign key did; a delete or key update of a parent
    in such a transaction is refused (SQLSTATE 55000).

    Errors: SQLSTATE 23503 (foreign_key_violation, Django's ``IntegrityError``) naming
    the reference, the table and the first key that fails. The checks are immediate (at
    the end of the statement), where Django's keys are deferred to the commit: a
    transaction must write the parent before the rows that reference it, as the import
    does. SQLite (the embedded default) keeps its declared foreign keys: nothing here.
    """

    name: str
    table: str
    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...] = ("id",)

    def __post_init__(self) -> None:
        if len(self.columns) != len(self.parent_columns):
            raise ValueError(f"{self.name}: {self.columns} against {self.parent_columns}")
        if len(self.name) > 50:  # PostgreSQL's names stop at 63 bytes, suffixes included
            raise ValueError(f"{self.name}: a reference's name has at most 50 characters")

    def _key(self, row: str, columns: Sequence[str]) -> str:
        return " || ', ' || ".join(f"{row}.{column}::text" for column in columns)

    def _match(self, child: str, parent: str) -> str:
        return " AND ".join(
            f"{child}.{column} = {parent}.{referenced}"
            for column, referenced in zip(self.columns, self.parent_columns, strict=True)
        )

    def _raise(self, message: str, key: str) -> str:
        return (
            f"RAISE EXCEPTION 'claimgate: {message}', {key} "
            f"USING ERRCODE = 'foreign_key_violation', CONSTRAINT = '{self.name}'"
        )

    def create_sql(self, vendor: str) -> list[str]:
        if vendor == "sqlite":
            return []  # its declared foreign keys stay
        if vendor != "postgresql":  # pragma: no cover - only the two supported backends
            raise ValueError(f"Claimgate supports PostgreSQL and SQLite, not {vendor}")
        name, table, parent = self.name, self.table, self.parent
        columns = ", ".join(self.columns)
        referenced = ", ".join(self.parent_columns)
        present = " AND ".join(f"n.{column} IS NOT NULL" for column in self.columns)
        missing = self._raise(
            f'insert or update on table "{table}" violates reference "{name}": '
            f'key ({columns})=(%) is not present in table "{parent}"',
            "missing",
        )
        still = self._raise(
            f'update or delete on table "{parent}" violates reference "{name}" on table '
            f'"{table}": key ({referenced})=(%) is still referenced from table "{table}"',
            "missing",
        )
        # The statement-level probes are planned at each run (EXECUTE), on the tables'
        # sizes then: a plan cached when the parent was small (an import's first chunk)
        # would scan the whole parent once per new row as it grows. And never a hash of
        # the whole parent: index probes, one per row of the statement.
        probing = "SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off"
        # Under REPEATABLE READ or SERIALIZABLE a check reads the transaction's snapshot,
        # which may predate a concurrent writer's commit: there the referencing side locks
        # the parents' rows FOR KEY SHARE (as a foreign key does: a row deleted meanwhile
        # is a serialization failure), and the referenced side refuses to delete.
        snapshot_kept = "current_setting('transaction_isolation') <> 'read committed'"
        unchecked = (
            f'RAISE EXCEPTION \'claimgate: a delete or key update on table "{parent}" is '
            f'checked against reference "{name}" in READ COMMITTED transactions only\' '
            "USING ERRCODE = 'object_not_in_prerequisite_state'"
        )
        old_key = " OR ".join(
            f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in self.parent_columns
        )
        new_key = " OR ".join(
            f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in self.columns
        )
        return [
            # the referencing side: a statement's new rows, set-wise
            f"""CREATE OR REPLACE FUNCTION {name}_ins_fn() RETURNS trigger AS $$
DECLARE missing text;
BEGIN
    EXECUTE $probe$ SELECT {self._key("n", self.columns)} FROM new_rows n
    WHERE {present}
    AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {self._match("n", "p")}) LIMIT 1
    $probe$ INTO missing;
    IF missing IS NOT NULL THEN {missing}; END IF;
    IF {snapshot_kept} THEN  -- the parents' rows kept as a foreign key keeps them
        EXECUTE $lock$ SELECT 1 FROM new_rows n JOIN {parent} p ON {self._match("n", "p")}
        WHERE {present} FOR KEY SHARE OF p $lock$;
    END IF;
    RETURN NULL;
END; $$ LANGUAGE plpgsql {probing}""",  # noqa: S608 (names from the migration)
            f"CREATE TRIGGER {name}_ins AFTER INSERT ON {table} REFERENCING NEW TABLE AS "
            f"new_rows FOR EACH STATEMENT EXECUTE FUNCTION {name}_ins_fn()",
            # a key changed by an UPDATE (row by row: WHEN keeps the others out in C)
            f"""CREATE OR REPLACE FUNCTION {name}_upd_fn() RETURNS trigger AS $$
DECLARE missing text;
BEGIN
    IF {" AND ".join(f"NEW.{column} IS NOT NULL" for column in self.columns)}
    AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {self._match("NEW", "p")}) THEN
        missing := {self._key("NEW", self.columns)};
        {missing};
    END IF;
    IF {snapshot_kept} THEN
        PERFORM 1 FROM {parent} p WHERE {self._match("NEW", "p")} FOR KEY SHARE;
    END IF;
    RETURN NULL;
END; $$ LANGUAGE plpgsql {probing}""",  # noqa: S608 (names from the migration)
            f"CREATE TRIGGER {name}_upd AFTER UPDATE ON {table} FOR EACH ROW "
            f"WHEN ({new_key}) EXECUTE FUNCTION {name}_upd_fn()",
            # the referenced side: the SHARE lock, then the rows gone or changed
            f"""CREATE OR REPLACE FUNCTION {name}_pdel_fn() RETURNS trigger AS $$
DECLARE missing text;
BEGIN
    IF {snapshot_kept} THEN {unchecked}; END IF;
    LOCK TABLE {table} IN SHARE MODE;
    EXECUTE $probe$ SELECT {self._key("o", self.parent_columns)} FROM old_rows o
    WHERE EXISTS (SELECT 1 FROM {table} n WHERE {self._match("n", "o")})
    AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {
                " AND ".join(f"p.{column} = o.{column}" for column in self.parent_columns)
            }) LIMIT 1
    $probe$ INTO missing;
    IF missing IS NOT NULL THEN {still}; END IF;
    RETURN NULL;
END; $$ LANGUAGE plpgsql {probing}""",  # noqa: S608 (names from the migration)
            f"CREATE TRIGGER {name}_pdel AFTER DELETE ON {parent} REFERENCING OLD TABLE AS "
            f"old_rows FOR EACH STATEMENT EXECUTE FUNCTION {name}_pdel_fn()",
            f"""CREATE OR REPLACE FUNCTION {name}_pupd_fn() RETURNS trigger AS $$
DECLARE missing text;
BEGIN
    IF {snapshot_kept} THEN {unchecked}; END IF;
    LOCK TABLE {table} IN SHARE MODE;
    IF EXISTS (SELECT 1 FROM {table} n WHERE {self._match("n", "OLD")}) THEN
        missing := {self._key("OLD", self.parent_columns)};
        {still};
    END IF;
    RETURN NULL;
END; $$ LANGUAGE plpgsql {probing}""",  # noqa: S608 (names from the migration)
            f"CREATE TRIGGER {name}_pupd AFTER UPDATE ON {parent} FOR EACH ROW "
            f"WHEN ({old_key}) EXECUTE FUNCTION {name}_pupd_fn()",
            f"""CREATE OR REPLACE FUNCTION {name}_ptrunc_fn() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM {table}) THEN
        RAISE EXCEPTION 'claimgate: truncate on table "{parent}" violates reference '
            '"{name}": table "{table}" references it'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = '{name}';
    END IF;
    RETURN NULL;
END; $$ LANGUAGE plpgsql""",  # noqa: S608 (names from the migration)
            f"CREATE TRIGGER {name}_ptrunc BEFORE TRUNCATE ON {parent} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {name}_ptrunc_fn()",
        ]

    def drop_sql(self, vendor: str) -> list[str]:
        if vendor != "postgresql":
            return []
        on = {"ins": self.table, "upd": self.table}
        return [
            f"DROP TRIGGER IF EXISTS {self.name}_{kind} ON {on.get(kind, self.parent)}; "
            f"DROP FUNCTION IF EXISTS {self.name}_{kind}_fn()"
            for kind in ("ins", "upd", "pdel", "pupd", "ptrunc")
        ]


def install(*rules: Immutable | PartitionVersion | Reference) -> Callable:
    def forward(apps, schema_editor) -> None:
        vendor = schema_editor.connection.vendor
        for rule in rules:
            for statement in rule.create_sql(vendor):
                schema_editor.execute(statement, params=None)

    return forward


def uninstall(*rules: Immutable | PartitionVersion | Reference) -> Callable:
    def backward(apps, schema_editor) -> None:
        vendor = schema_editor.connection.vendor
        for rule in rules:
            for statement in rule.drop_sql(vendor):
                schema_editor.execute(statement, params=None)

    return backward
