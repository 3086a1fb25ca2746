"""The import writes a file in chunks while it parses the rest (issue 18): the result is the
same as one write, and a problem anywhere, found after chunks were written, leaves nothing."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, transaction

from audit.archive import services
from audit.archive.models import (
    AnswerSnapshot,
    ImportBatch,
    ImportStatus,
    Observation,
    Pipeline,
    Query,
    SourceSnapshot,
    Study,
    Tuple,
    Unit,
)
from audit.archive.services import observations_import
from audit.contract import codes
from tests.archive.builders import jsonl, observation, reseal

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_chunks(monkeypatch):
    """Two observations a chunk, so that a file of a few lines is written in several."""
    monkeypatch.setattr(services, "CHUNK_OBSERVATIONS", 2)


def archive_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (
            Query,
            Pipeline,
            AnswerSnapshot,
            SourceSnapshot,
            Observation,
            Tuple,
            Unit,
        )
    }


def parse_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "claimgate-import-parse"]


def test_a_file_written_in_chunks_stores_every_row_once(study, small_chunks):
    data = jsonl(*(observation(n) for n in range(1, 8)), observation(8, failed=True))

    batch = observations_import(study=study, data=data, file_name="chunks.jsonl")

    assert batch.status == ImportStatus.IMPORTED
    assert (batch.observations_created, batch.tuples_created, batch.lines) == (8, 14, 9)
    assert study.observations.count() == 8
    assert study.tuples.count() == 14
    assert study.units.count() == 14
    assert sorted(study.observations.values_list("position", flat=True)) == list(range(2, 10))
    # every tuple carries its observation's query, pipeline and answer
    for tuple_ in study.tuples.select_related("observation"):
        observation_ = tuple_.observation
        assert (tuple_.query_id, tuple_.pipeline_id, tuple_.answer_id) == (
            observation_.query_id,
            observation_.pipeline_id,
            observation_.answer_id,
        )
    assert not parse_threads()


def test_the_same_file_again_in_chunks_adds_nothing(study, small_chunks):
    data = jsonl(*(observation(n) for n in range(1, 6)))
    observations_import(study=study, data=data, file_name="a.jsonl")
    before = archive_counts()

    again = observations_import(study=study, data=data, file_name="a.jsonl")

    assert again.status == ImportStatus.UNCHANGED
    assert (again.observations_created, again.tuples_created, again.tuples_existing) == (0, 0, 10)
    assert archive_counts() == before


def test_a_file_overlapping_an_earlier_one_adds_only_the_new_rows(study, small_chunks):
    observations_import(
        study=study, data=jsonl(*(observation(n) for n in (1, 2, 3))), file_name="a.jsonl"
    )

    batch = observations_import(
        study=study, data=jsonl(*(observation(n) for n in (2, 3, 4, 5, 1))), file_name="b.jsonl"
    )

    assert (batch.observations_created, batch.tuples_created, batch.tuples_existing) == (2, 4, 6)
    assert study.observations.count() == 5
    assert study.units.count() == 10


def test_a_bad_line_after_written_chunks_leaves_nothing_and_is_named(study, small_chunks):
    # given a file whose first three chunks are good and whose line 8 is not JSON
    lines = [observation(n) for n in range(1, 7)]
    data = jsonl(*lines, "{oops", observation(7))

    batch = observations_import(study=study, data=data, file_name="late.jsonl")

    assert batch.status == ImportStatus.REJECTED
    assert [(e["line"], e["reason"]) for e in batch.errors] == [(8, codes.MALFORMED_JSON)]
    assert batch.error_count == 1
    assert batch.lines == 9
    assert archive_counts() == dict.fromkeys(archive_counts(), 0)
    # the rejected batch is the only one stored (the imported one went with the rollback)
    assert list(ImportBatch.objects.values_list("status", flat=True)) == [ImportStatus.REJECTED]
    assert not parse_threads()


def test_an_observation_repeated_in_a_later_chunk_is_named_and_nothing_stays(study, small_chunks):
    # a failed attempt has no tuples, so only the observation repeats (not a tuple)
    repeated = observation(9, failed=True)
    data = jsonl(repeated, *(observation(n) for n in range(1, 5)), repeated, repeated)

    batch = observations_import(study=study, data=data, file_name="again.jsonl")

    assert batch.status == ImportStatus.REJECTED
    assert [(e["line"], e["reason"]) for e in batch.errors] == [
        (7, codes.DUPLICATE_OBSERVATION),
        (8, codes.DUPLICATE_OBSERVATION),
    ]
    assert "repeats line 2" in batch.errors[0]["message"]
    assert batch.error_groups[0]["count"] == 2
    assert archive_counts() == dict.fromkeys(archive_counts(), 0)


def store_failing_on(monkeypatch, call: int) -> list[int]:
    """Make the ``call``-th chunk's write fail with a real error from the database; the
    list of the calls made."""
    real_store = services._store
    calls: list[int] = []

    def failing_store(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO audit_tuple (id) VALUES (NULL)")
        return real_store(*args, **kwargs)

    monkeypatch.setattr(services, "_store", failing_store)
    return calls


def test_a_failure_while_a_chunk_is_written_leaves_nothing_behind(study, monkeypatch):
    # given a database write that fails on the third chunk (after two were written)
    monkeypatch.setattr(services, "CHUNK_OBSERVATIONS", 2)
    calls = store_failing_on(monkeypatch, 3)
    data = jsonl(*(observation(n) for n in range(1, 9)))

    # when imported, the error reaches the caller
    with pytest.raises(IntegrityError), transaction.atomic():
        observations_import(study=study, data=data, file_name="broken.jsonl")

    # then no row of the file, nor its batch, is stored, and the parse has ended
    assert len(calls) == 3
    assert archive_counts() == dict.fromkeys(archive_counts(), 0)
    assert not ImportBatch.objects.exists()
    assert not parse_threads()


def insert_tuple(like: Tuple, **changes: int) -> None:
    """Insert a copy of ``like`` under a new digest with ``changes`` (column values), and
    check the deferred keys now."""
    columns = {
        "study_id": like.study_id,
        "observation_id": like.observation_id,
        "digest": "d" * 64,
        "query_id": like.query_id,
        "pipeline_id": like.pipeline_id,
        "answer_id": like.answer_id,
        "source_id": like.source_id,
        "position": 9,
        **changes,
    }
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO audit_tuple ({', '.join(columns)}) "  # noqa: S608
            f"VALUES ({', '.join(['%s'] * len(columns))})",
            list(columns.values()),
        )
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def insert_unit(**columns: int | str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO audit_unit ({', '.join(columns)}, assigned_count, submitted_count, "  # noqa: S608
            f"state) VALUES ({', '.join(['%s'] * len(columns))}, 0, 0, 'open')",
            list(columns.values()),
        )
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


@pytest.mark.postgres
@pytest.mark.parametrize("column", ["query_id", "pipeline_id", "answer_id", "study_id"])
def test_postgresql_refuses_a_tuple_whose_parts_are_not_its_observations(study, column):
    # the composite key onto the observation (audit 0021) stands for the tuple's own keys
    other = Study.objects.create(slug="other", title="Other", codebook=study.codebook)
    second_pipeline = observation(2)
    second_pipeline["pipeline"]["version"] = "9"
    observations_import(
        study=study,
        data=jsonl(observation(1), reseal(second_pipeline)),
        file_name="a.jsonl",
    )
    first, second = study.observations.order_by("position")
    assert getattr(first, column) != getattr(second, column) or column == "study_id"
    like = first.tuples.first()
    insert_tuple(like)  # the same parts as its observation: stored

    value = other.pk if column == "study_id" else getattr(second, column)
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_tuple(like, digest="c" * 64, **{column: value})


@pytest.mark.postgres
def test_postgresql_refuses_a_tuple_whose_observation_is_missing(study):
    observations_import(study=study, data=jsonl(observation(1)), file_name="a.jsonl")
    like = study.tuples.first()

    with pytest.raises(IntegrityError), transaction.atomic():
        insert_tuple(like, observation_id=like.observation_id + 1000)


@pytest.mark.postgres
def test_postgresql_refuses_a_unit_of_another_study_than_its_observation(study):
    other = Study.objects.create(slug="other", title="Other", codebook=study.codebook)
    observations_import(study=study, data=jsonl(observation(1)), file_name="a.jsonl")
    observation_id = study.observations.get().pk
    insert_unit(study_id=study.pk, observation_id=observation_id, digest="e" * 64)

    with pytest.raises(IntegrityError), transaction.atomic():
        insert_unit(study_id=other.pk, observation_id=observation_id, digest="f" * 64)
