"""The import-written archive tables' references checked per statement (issue 18).

audit 0021 made a tuple's and a unit's references composite keys onto the observation;
what was left were ten foreign keys on ``audit_observation``, ``audit_tuple`` and
``audit_unit``, each checked by PostgreSQL row by row (a query and a FOR KEY SHARE lock
per row): 650,000 checks per 10^5 imported tuples, 2.9 of the import's 6.5 CPU seconds in
the database. Here each becomes an :class:`audit.triggers.Reference`: the same rule,
checked once per statement for the referencing side (an anti-join of the statement's new
rows with the parent's index) and on the parent's side for a DELETE, a key UPDATE or a
TRUNCATE. The two unique keys on ``audit_observation`` that only the composite keys
needed (``observation_keys``, ``observation_id_study``) go: the checks probe its
primary key.

The model state says ``db_constraint=False`` for the fields. SQLite (the embedded
default) keeps its declared foreign keys as they are; as for audit 0021, a later migration
that rebuilds one of the three tables on SQLite (which builds it from the model state)
should add the equivalent checks there.
"""

from django.db import migrations, models

from audit.triggers import Reference, install, uninstall

REFERENCES = (
    Reference("ref_observation_study", "audit_observation", ("study_id",), "audit_study"),
    Reference("ref_observation_query", "audit_observation", ("query_id",), "audit_query"),
    Reference("ref_observation_pipeline", "audit_observation", ("pipeline_id",), "audit_pipeline"),
    Reference(
        "ref_observation_answer", "audit_observation", ("answer_id",), "audit_answersnapshot"
    ),
    Reference("ref_observation_batch", "audit_observation", ("batch_id",), "audit_importbatch"),
    Reference("ref_tuple_source", "audit_tuple", ("source_id",), "audit_sourcesnapshot"),
    Reference(
        "ref_tuple_observation",
        "audit_tuple",
        ("observation_id", "study_id", "query_id", "pipeline_id", "answer_id"),
        "audit_observation",
        ("id", "study_id", "query_id", "pipeline_id", "answer_id"),
    ),
    Reference(
        "ref_unit_observation",
        "audit_unit",
        ("observation_id", "study_id"),
        "audit_observation",
        ("id", "study_id"),
    ),
    Reference("ref_unit_baseline", "audit_unit", ("baseline_id",), "audit_observation"),
    Reference("ref_unit_tuple", "audit_unit", ("tuple_id",), "audit_tuple"),
)

#: The unique keys on audit_observation that only the composite foreign keys needed.
UNIQUE = (
    ("observation_keys", "id, study_id, query_id, pipeline_id, answer_id"),
    ("observation_id_study", "id, study_id"),
)


def _foreign_keys(cursor, reference: Reference) -> list[str]:
    """The declared foreign keys of ``reference`` (its columns, in order, onto its parent)."""
    cursor.execute(
        "SELECT c.conname FROM pg_constraint c WHERE c.contype = 'f' "
        "AND c.conrelid = %s::regclass AND c.confrelid = %s::regclass "
        "AND ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i) "
        "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i) "
        "= %s::text[]",
        [reference.table, reference.parent, list(reference.columns)],
    )
    return [row[0] for row in cursor.fetchall()]


def forwards(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for reference in REFERENCES:
            for name in _foreign_keys(cursor, reference):
                cursor.execute(f'ALTER TABLE {reference.table} DROP CONSTRAINT "{name}"')
        for name, _ in UNIQUE:
            cursor.execute(f"ALTER TABLE audit_observation DROP CONSTRAINT IF EXISTS {name}")
    install(*REFERENCES)(apps, schema_editor)


def backwards(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    uninstall(*REFERENCES)(apps, schema_editor)
    with schema_editor.connection.cursor() as cursor:
        for name, columns in UNIQUE:
            cursor.execute(
                f"ALTER TABLE audit_observation ADD CONSTRAINT {name} UNIQUE ({columns})"
            )
        for reference in REFERENCES:
            cursor.execute(
                f"ALTER TABLE {reference.table} ADD CONSTRAINT {reference.name} FOREIGN KEY "
                f"({', '.join(reference.columns)}) REFERENCES {reference.parent} "
                f"({', '.join(reference.parent_columns)}) DEFERRABLE INITIALLY DEFERRED"
            )


def _unchecked(to: str, **options) -> models.ForeignKey:
    return models.ForeignKey(to=to, db_constraint=False, **options)


class Migration(migrations.Migration):
    dependencies = [("audit", "0023_unit_holder")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards)],
            state_operations=[
                migrations.AlterField(
                    model_name="observation",
                    name="study",
                    field=_unchecked(
                        "audit.study",
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="observations",
                    ),
                ),
                *(
                    migrations.AlterField(
                        model_name="observation",
                        name=name,
                        field=_unchecked(to, on_delete=models.deletion.PROTECT, related_name="+"),
                    )
                    for name, to in (
                        ("query", "audit.query"),
                        ("pipeline", "audit.pipeline"),
                        ("answer", "audit.answersnapshot"),
                        ("batch", "audit.importbatch"),
                    )
                ),
                migrations.AlterField(
                    model_name="tuple",
                    name="source",
                    field=_unchecked(
                        "audit.sourcesnapshot", on_delete=models.deletion.PROTECT, related_name="+"
                    ),
                ),
                migrations.AlterField(
                    model_name="unit",
                    name="baseline",
                    field=_unchecked(
                        "audit.observation",
                        null=True,
                        blank=True,
                        on_delete=models.deletion.CASCADE,
                        related_name="baseline_units",
                        help_text="answer_pair units only: the baseline's observation.",
                    ),
                ),
                migrations.AlterField(
                    model_name="unit",
                    name="tuple",
                    field=models.OneToOneField(
                        to="audit.tuple",
                        db_constraint=False,
                        null=True,
                        blank=True,
                        on_delete=models.deletion.CASCADE,
                        related_name="unit",
                    ),
                ),
            ],
        ),
    ]
