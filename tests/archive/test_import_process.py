"""A large file's parse and planning run in a process of their own (audit.archive.planning,
issue 18): the import's outcome is the same as when they run in the writing process, a
problem anywhere still leaves nothing, and the process always ends.

The chunked-import and unit-kind tests run here again with every file sent through the
process (the size threshold at 0); the rest compare the two ways on one file.
"""

from __future__ import annotations

import subprocess

import pytest
from django.db import IntegrityError, transaction

from audit.archive import services
from audit.archive.models import ImportBatch, ImportStatus, Study
from audit.archive.services import observations_import
from audit.contract import codes
from tests.archive.builders import HEADER, jsonl, observation
from tests.archive.test_import_chunks import (  # noqa: F401 (collected again, here)
    archive_counts,
    small_chunks,
    store_failing_on,
    test_a_bad_line_after_written_chunks_leaves_nothing_and_is_named,
    test_a_file_overlapping_an_earlier_one_adds_only_the_new_rows,
    test_a_file_written_in_chunks_stores_every_row_once,
    test_an_observation_repeated_in_a_later_chunk_is_named_and_nothing_stays,
    test_the_same_file_again_in_chunks_adds_nothing,
)
from tests.archive.test_import_unit_kinds import (  # noqa: F401 (collected again, here)
    documents_study,
    pairs_study,
    test_a_file_with_a_bad_pair_imports_nothing_and_names_each_bad_line,
    test_an_unranked_document_refuses_the_file,
    test_each_answer_with_documents_becomes_one_unit,
    test_each_pair_becomes_one_unit_of_its_evaluated_and_baseline_observations,
)

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture(autouse=True)
def through_the_process(monkeypatch):
    """Every import of the test asks for the planning process; each process started has
    ended after it."""
    monkeypatch.setattr(services, "PLANNING_PROCESS_BYTES", 0)
    asked: list[object] = []
    started: list[subprocess.Popen] = []
    real = services._PlanningProcess.__init__

    def recording(self, *args, **kwargs):
        asked.append(self)
        real(self, *args, **kwargs)
        started.append(self.process)

    monkeypatch.setattr(services._PlanningProcess, "__init__", recording)
    yield started
    assert asked, "no import asked for the planning process"
    assert all(process.poll() is not None for process in started)


def snapshot(study: Study) -> dict[str, object]:
    """What an import stored for ``study``, by content (ids aside)."""
    return {
        "observations": sorted(
            study.observations.values_list(
                "unit_digest", "position", "query__key", "pipeline__key", "answer__key"
            )
        ),
        "tuples": sorted(
            study.tuples.values_list(
                "digest",
                "observation__unit_digest",
                "source__key",
                "position",
                "sampling_stratum",
                "inclusion_probability",
            )
        ),
        "units": sorted(study.units.values_list("digest", "observation__unit_digest")),
    }


@pytest.mark.usefixtures("small_chunks")
def test_the_process_stores_what_the_writing_process_stores(codebooks, monkeypatch):
    # given one file of 9 chunks, with a failed attempt and repeated queries among its lines
    data = jsonl(*(observation(n) for n in range(1, 18)), observation(18, failed=True))
    here = Study.objects.create(slug="here", title="here", codebook=codebooks["source-risk-1.0.0"])
    there = Study.objects.create(slug="there", title="x", codebook=codebooks["source-risk-1.0.0"])

    # when imported into one study through the process and into another without it
    through = observations_import(study=there, data=data, file_name="f.jsonl")
    monkeypatch.setattr(services, "PLANNING_PROCESS_BYTES", 10**12)
    without = observations_import(study=here, data=data, file_name="f.jsonl")

    # then both stored the same rows and say the same of the file
    assert snapshot(there) == snapshot(here)
    assert snapshot(there)["units"]
    fields = (
        "status",
        "lines",
        "observations_created",
        "tuples_created",
        "tuples_existing",
        "file_sha256",
        "file_bytes",
        "error_count",
    )
    assert [getattr(through, name) for name in fields] == [
        getattr(without, name) for name in fields
    ]
    assert through.status == ImportStatus.IMPORTED
    assert through.file_bytes == len(data)


@pytest.mark.usefixtures("small_chunks")
def test_a_file_for_another_codebook_is_refused_through_the_process(study):
    other = {"name": "answer-claims", "version": "1.0.0"}  # installed, not the study's
    data = jsonl(*(observation(n) for n in range(1, 5)), header={**HEADER, "codebook": other})

    batch = observations_import(study=study, data=data, file_name="other.jsonl")

    assert batch.status == ImportStatus.REJECTED
    assert [(e["line"], e["reason"]) for e in batch.errors] == [(1, codes.CODEBOOK_MISMATCH)]
    assert archive_counts() == dict.fromkeys(archive_counts(), 0)


@pytest.mark.usefixtures("small_chunks")
def test_a_failed_write_ends_the_process_and_leaves_nothing(study, monkeypatch):
    # given a database write that fails on the second chunk
    calls = store_failing_on(monkeypatch, 2)
    data = jsonl(*(observation(n) for n in range(1, 40)))

    # when imported, the error reaches the caller (the process is ended by the fixture's check)
    with pytest.raises(IntegrityError), transaction.atomic():
        observations_import(study=study, data=data, file_name="broken.jsonl")

    assert len(calls) == 2
    assert archive_counts() == dict.fromkeys(archive_counts(), 0)
    assert not ImportBatch.objects.exists()


@pytest.mark.usefixtures("small_chunks")
def test_a_line_error_found_by_the_process_is_named_with_its_line(study):
    data = jsonl(*(observation(n) for n in range(1, 7)), {"id": "x"}, observation(7))

    batch = observations_import(study=study, data=data, file_name="late.jsonl")

    assert batch.status == ImportStatus.REJECTED
    assert batch.errors[0]["line"] == 8
    assert batch.error_count == 1
    assert batch.errors[0]["reason"] != codes.DUPLICATE_OBSERVATION
    assert archive_counts() == dict.fromkeys(archive_counts(), 0)


@pytest.mark.usefixtures("small_chunks")
def test_a_planning_process_that_dies_fails_the_import_and_leaves_nothing(study, monkeypatch):
    started = services.module_process
    monkeypatch.setattr(
        services, "module_process", lambda module: started("tests.archive.dying_planner")
    )
    data = jsonl(*(observation(n) for n in range(1, 9)))

    with pytest.raises(services.PlanningProcessError, match="planning process stopped"):
        observations_import(study=study, data=data, file_name="dies.jsonl")

    assert archive_counts() == dict.fromkeys(archive_counts(), 0)
    assert not ImportBatch.objects.filter(status=ImportStatus.IMPORTED).exists()


def test_where_no_process_can_start_the_import_plans_in_its_own(study, monkeypatch, caplog):
    def refused(module: str) -> None:
        raise OSError("no process may be started here")

    monkeypatch.setattr(services, "module_process", refused)
    data = jsonl(*(observation(n) for n in range(1, 5)))

    batch = observations_import(study=study, data=data, file_name="here.jsonl")

    assert batch.status == ImportStatus.IMPORTED
    assert batch.tuples_created == 8
    assert "no process may be started here" in caplog.text
