"""Fewer row-by-row reference checks for the import (issue 18), with the same integrity.

A tuple's query, pipeline, answer and study are its observation's; a unit's study is its
observation's. On PostgreSQL each of those was a foreign key of its own, checked row by
row at commit (six checks per imported tuple, three per unit: two thirds of an import's
time). Here they become composite foreign keys onto the observation:

- ``audit_tuple (observation_id, study_id, query_id, pipeline_id, answer_id)`` references
  ``audit_observation (id, study_id, query_id, pipeline_id, answer_id)``;
- ``audit_unit (observation_id, study_id)`` references ``audit_observation (id, study_id)``;

both DEFERRABLE INITIALLY DEFERRED like Django's. The observation's own foreign keys
(study, query, pipeline, answer, batch) stay, so every reference the single-column keys
guaranteed still holds (through the observation, whose columns are the same values) and
more does: a tuple can no longer name another query than its observation's. One check per
tuple replaces five, one per unit replaces two. The single-column indexes on
``audit_tuple.query_id``/``pipeline_id``/``answer_id`` only served the dropped keys
(nothing looks tuples up by them) and go too.

The ``varchar_pattern_ops`` copies of the indexes on the archive's digest and key columns
(which PostgreSQL needs only for ``LIKE 'prefix%'``, and nothing here asks) are dropped
as well: 550,000 index entries per 10^5 imported tuples that no query read. The indexes
for equality (and the unique keys) stay.

The model state says ``db_constraint=False`` (and ``db_index=False`` for the three) for
those fields. SQLite (the embedded default) keeps its single-column foreign keys and
indexes as they are, so its tables are not rebuilt (rebuilding would drop their triggers);
a later migration that rebuilds ``audit_tuple`` or ``audit_unit`` on SQLite should add the
equivalent checks there.
"""

from django.db import migrations, models

#: (table, constraint, columns, referenced columns) of the composite keys.
COMPOSITE = (
    (
        "audit_tuple",
        "tuple_observation_keys",
        "observation_id, study_id, query_id, pipeline_id, answer_id",
        "id, study_id, query_id, pipeline_id, answer_id",
    ),
    ("audit_unit", "unit_observation_study", "observation_id, study_id", "id, study_id"),
)
#: The unique keys on audit_observation the composite keys reference.
UNIQUE = (
    ("observation_keys", "id, study_id, query_id, pipeline_id, answer_id"),
    ("observation_id_study", "id, study_id"),
)
#: (table, column, referenced table): the single-column keys the composite ones replace.
SINGLE = (
    ("audit_tuple", "study_id", "audit_study"),
    ("audit_tuple", "observation_id", "audit_observation"),
    ("audit_tuple", "query_id", "audit_query"),
    ("audit_tuple", "pipeline_id", "audit_pipeline"),
    ("audit_tuple", "answer_id", "audit_answersnapshot"),
    ("audit_unit", "study_id", "audit_study"),
    ("audit_unit", "observation_id", "audit_observation"),
)
#: Indexes that served only the dropped keys.
UNUSED_INDEXES = (
    ("audit_tuple", "query_id"),
    ("audit_tuple", "pipeline_id"),
    ("audit_tuple", "answer_id"),
)

#: Tables whose ``*_like`` (varchar_pattern_ops) indexes no query uses.
PATTERN_INDEX_TABLES = (
    "audit_query",
    "audit_pipeline",
    "audit_answersnapshot",
    "audit_sourcesnapshot",
)

#: The columns that had one (for going back).
PATTERN_COLUMNS = (
    ("audit_query", "key"),
    ("audit_query", "query_id"),
    ("audit_query", "target_family"),
    ("audit_query", "template_id"),
    ("audit_query", "domain"),
    ("audit_pipeline", "key"),
    ("audit_answersnapshot", "key"),
    ("audit_answersnapshot", "digest"),
    ("audit_sourcesnapshot", "key"),
    ("audit_sourcesnapshot", "digest"),
)


def _pattern_indexes(cursor) -> list[tuple[str, str, str]]:
    """``(index, table, column)`` of the single-column varchar_pattern_ops indexes."""
    cursor.execute(
        "SELECT i.indexrelid::regclass::text, i.indrelid::regclass::text, a.attname "
        "FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = i.indkey[0] JOIN pg_opclass o ON o.oid = i.indclass[0] "
        "WHERE i.indnatts = 1 AND o.opcname = 'varchar_pattern_ops' "
        "AND i.indrelid::regclass::text = ANY(%s)",
        [list(PATTERN_INDEX_TABLES)],
    )
    return cursor.fetchall()


def _single_column(cursor, table: str, column: str, kind: str) -> list[str]:
    """Names of the foreign keys (``kind`` 'f') or plain indexes ('i') on one column."""
    if kind == "f":
        cursor.execute(
            "SELECT c.conname FROM pg_constraint c JOIN pg_attribute a "
            "ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
            "WHERE c.conrelid = %s::regclass AND c.contype = 'f' "
            "AND array_length(c.conkey, 1) = 1 AND a.attname = %s",
            [table, column],
        )
    else:
        cursor.execute(
            "SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_attribute a "
            "ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
            "WHERE i.indrelid = %s::regclass AND i.indnatts = 1 AND NOT i.indisunique "
            "AND a.attname = %s",
            [table, column],
        )
    return [row[0] for row in cursor.fetchall()]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for name, columns in UNIQUE:
            cursor.execute(
                f"ALTER TABLE audit_observation ADD CONSTRAINT {name} UNIQUE ({columns})"
            )
        for table, name, columns, referenced in COMPOSITE:
            cursor.execute(
                f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({columns}) "
                f"REFERENCES audit_observation ({referenced}) DEFERRABLE INITIALLY DEFERRED"
            )
        for table, column, _ in SINGLE:
            for name in _single_column(cursor, table, column, "f"):
                cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
        for table, column in UNUSED_INDEXES:
            for name in _single_column(cursor, table, column, "i"):
                cursor.execute(f'DROP INDEX "{name}"')
        for name, _, _ in _pattern_indexes(cursor):
            cursor.execute(f'DROP INDEX "{name}"')


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for table, column in PATTERN_COLUMNS:
            cursor.execute(
                f"CREATE INDEX {table}_{column}_like_0021 ON {table} ({column} varchar_pattern_ops)"
            )
        for table, column in UNUSED_INDEXES:
            cursor.execute(f"CREATE INDEX {table}_{column}_0021 ON {table} ({column})")
        for table, column, referenced in SINGLE:
            cursor.execute(
                f"ALTER TABLE {table} ADD CONSTRAINT {table}_{column}_fk_0021 FOREIGN KEY "
                f"({column}) REFERENCES {referenced} (id) DEFERRABLE INITIALLY DEFERRED"
            )
        for table, name, _, _ in COMPOSITE:
            cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
        for name, _ in UNIQUE:
            cursor.execute(f"ALTER TABLE audit_observation DROP CONSTRAINT {name}")


def _fk(to: str, **options):
    return models.ForeignKey(to=to, db_constraint=False, **options)


class Migration(migrations.Migration):
    dependencies = [("audit", "0020_partition_version_trigger")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards)],
            state_operations=[
                migrations.AlterField(
                    model_name="tuple",
                    name="study",
                    field=_fk(
                        "audit.study",
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="tuples",
                    ),
                ),
                migrations.AlterField(
                    model_name="tuple",
                    name="observation",
                    field=_fk(
                        "audit.observation",
                        on_delete=models.deletion.CASCADE,
                        related_name="tuples",
                    ),
                ),
                *(
                    migrations.AlterField(
                        model_name="tuple",
                        name=name,
                        field=_fk(
                            to,
                            db_index=False,
                            on_delete=models.deletion.PROTECT,
                            related_name="+",
                        ),
                    )
                    for name, to in (
                        ("query", "audit.query"),
                        ("pipeline", "audit.pipeline"),
                        ("answer", "audit.answersnapshot"),
                    )
                ),
                migrations.AlterField(
                    model_name="unit",
                    name="study",
                    field=_fk(
                        "audit.study",
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="units",
                    ),
                ),
                migrations.AlterField(
                    model_name="unit",
                    name="observation",
                    field=_fk(
                        "audit.observation",
                        on_delete=models.deletion.CASCADE,
                        related_name="units",
                    ),
                ),
            ],
        ),
    ]
