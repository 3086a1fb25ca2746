"""The import-written archive tables' references, checked once per statement on PostgreSQL
(audit.triggers.Reference, audit 0024): the rule of the foreign keys they replace holds
on both sides, for a bulk statement as a whole, and under concurrent writers."""

from __future__ import annotations

import pytest
from django.db import (
    DatabaseError,
    IntegrityError,
    OperationalError,
    connection,
    connections,
    transaction,
)

from audit.archive.models import Observation, SourceSnapshot, Study, Tuple, Unit
from audit.archive.services import observations_import
from tests.archive.builders import jsonl, observation
from tests.archive.concurrent import committed_meanwhile
from tests.archive.test_import_chunks import insert_tuple

pytestmark = pytest.mark.postgres

MISSING = 10**9


@pytest.fixture
def imported(study):
    observations_import(
        study=study, data=jsonl(observation(1), observation(2)), file_name="a.jsonl"
    )
    return study


def execute(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.django_db
def test_a_row_naming_a_missing_parent_is_refused_with_the_reference_and_key(imported):
    like = imported.tuples.first()
    with pytest.raises(IntegrityError) as refused, transaction.atomic():
        insert_tuple(like, source_id=MISSING)
    message = str(refused.value)
    assert "ref_tuple_source" in message
    assert f"(source_id)=({MISSING})" in message
    assert "audit_sourcesnapshot" in message


@pytest.mark.django_db
def test_one_bad_row_refuses_the_whole_statement(imported):
    like = imported.tuples.first()
    before = Tuple.objects.count()
    with pytest.raises(IntegrityError, match="ref_tuple_source"), transaction.atomic():
        execute(
            "INSERT INTO audit_tuple (study_id, observation_id, digest, query_id, pipeline_id, "
            "answer_id, source_id, position) SELECT study_id, observation_id, d, query_id, "
            "pipeline_id, answer_id, s, 9 FROM audit_tuple, (VALUES ('e', %s), ('f', %s)) "
            "v(d, s) WHERE id = %s",
            [like.source_id, MISSING, like.pk],
        )
    assert Tuple.objects.count() == before


@pytest.mark.django_db
def test_a_null_reference_references_nothing(imported):
    unit = imported.units.first()
    assert unit.baseline_id is None  # a tuple unit: no baseline, and stored


@pytest.mark.django_db
def test_an_update_that_changes_a_key_is_checked(imported):
    first, second = imported.tuples.order_by("id")[:2]
    with pytest.raises(IntegrityError, match="ref_tuple_source"), transaction.atomic():
        execute("UPDATE audit_tuple SET source_id = %s WHERE id = %s", [MISSING, first.pk])
    other = Study.objects.create(slug="other", title="Other", codebook=imported.codebook)
    with pytest.raises(IntegrityError, match="ref_unit_observation"), transaction.atomic():
        execute("UPDATE audit_unit SET study_id = %s WHERE tuple_id = %s", [other.pk, first.pk])
    # another stored source: a valid reference
    execute("UPDATE audit_tuple SET source_id = %s WHERE id = %s", [second.source_id, first.pk])
    assert Tuple.objects.get(pk=first.pk).source_id == second.source_id


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("sql", "reference"),
    [
        ("DELETE FROM audit_sourcesnapshot WHERE id = %(source)s", "ref_tuple_source"),
        ("DELETE FROM audit_tuple WHERE id = %(tuple)s", "ref_unit_tuple"),
        ("DELETE FROM audit_observation WHERE id = %(observation)s", "ref_"),
        ("UPDATE audit_observation SET id = id + 1000000 WHERE id = %(observation)s", "ref_"),
    ],
)
def test_a_referenced_row_is_neither_deleted_nor_rekeyed(imported, sql, reference):
    tuple_ = imported.tuples.first()
    keys = {"source": tuple_.source_id, "tuple": tuple_.pk, "observation": tuple_.observation_id}
    with pytest.raises(IntegrityError, match=reference), transaction.atomic():
        execute(sql.replace("%(", "{").replace(")s", "}").format(**keys))
    assert Tuple.objects.filter(pk=tuple_.pk, source_id=tuple_.source_id).exists()


@pytest.mark.django_db
def test_a_truncate_is_refused_while_rows_reference_the_table(imported):
    with pytest.raises(IntegrityError, match="ref_unit_tuple"), transaction.atomic():
        execute("TRUNCATE audit_tuple")
    assert Tuple.objects.filter(study=imported).count() == 4


@pytest.mark.django_db
def test_rows_deleted_children_first_are_deleted(imported):
    sources = SourceSnapshot.objects.count()
    Unit.objects.filter(study=imported).delete()
    Tuple.objects.filter(study=imported).delete()
    Observation.objects.filter(study=imported).delete()
    assert not Observation.objects.exists()
    assert not Tuple.objects.exists()
    assert SourceSnapshot.objects.count() == sources  # the archive's snapshots stay


def _observation_removed(observation_id: int) -> None:
    execute("DELETE FROM audit_unit WHERE observation_id = %s", [observation_id])
    execute("DELETE FROM audit_tuple WHERE observation_id = %s", [observation_id])
    execute("DELETE FROM audit_observation WHERE id = %s", [observation_id])


@pytest.mark.django_db(transaction=True)
def test_a_row_written_while_its_parent_is_being_deleted_is_refused(imported):
    """The delete commits first: the writer, which waited for it, no longer finds the parent."""
    like = imported.tuples.first()
    with (
        committed_meanwhile(lambda: _observation_removed(like.observation_id)),
        pytest.raises(IntegrityError, match="ref_tuple_observation"),
        transaction.atomic(),
    ):
        insert_tuple(like, digest="e" * 64)
    assert not Observation.objects.filter(pk=like.observation_id).exists()


@pytest.mark.django_db(transaction=True)
def test_a_parent_deleted_while_a_new_row_references_it_is_refused(imported):
    """The writer commits first: the delete, which waited for it, finds its row."""
    like = imported.tuples.first()
    with (
        committed_meanwhile(lambda: insert_tuple(like, digest="e" * 64)),
        pytest.raises(IntegrityError, match="ref_tuple_observation"),
        transaction.atomic(),
    ):
        _observation_removed(like.observation_id)
    assert Tuple.objects.filter(digest="e" * 64, observation_id=like.observation_id).exists()


@pytest.mark.django_db(transaction=True)
def test_a_repeatable_read_writer_locks_the_parents_as_a_foreign_key_does(imported):
    """Its snapshot still shows a parent deleted (and committed) since it began: its check
    passes there, and locking the parent's row is the serialization failure a foreign key
    gives."""
    like = imported.tuples.first()
    with transaction.atomic():
        execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        assert Observation.objects.filter(pk=like.observation_id).exists()  # the snapshot
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:  # autocommit: committed at once
                for table, column in (
                    ("audit_unit", "observation_id"),
                    ("audit_tuple", "observation_id"),
                    ("audit_observation", "id"),
                ):
                    sql = f"DELETE FROM {table} WHERE {column} = %s"  # noqa: S608
                    cursor.execute(sql, [like.observation_id])
        finally:
            other.close()
        with pytest.raises(OperationalError, match="could not serialize"):
            insert_tuple(like, digest="e" * 64)
    assert not Tuple.objects.filter(digest="e" * 64).exists()


@pytest.mark.django_db(transaction=True)
def test_a_parent_is_deleted_only_in_read_committed(imported):
    tuple_ = imported.tuples.first()
    with transaction.atomic():
        execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        with pytest.raises(DatabaseError, match="READ COMMITTED"), transaction.atomic():
            _observation_removed(tuple_.observation_id)
    assert Observation.objects.filter(pk=tuple_.observation_id).exists()
