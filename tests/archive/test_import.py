"""Import of observation files: atomic, idempotent, every bad line named."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from audit.archive.models import (
    AnswerSnapshot,
    ImportStatus,
    Observation,
    Query,
    SourceSnapshot,
    Tuple,
)
from audit.archive.services import observations_import
from audit.contract import codes
from tests.archive.builders import HEADER, jsonl, observation, reseal

pytestmark = pytest.mark.django_db


def archive_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Query, AnswerSnapshot, SourceSnapshot, Observation, Tuple)
    }


def test_a_good_file_imports_every_observation_and_tuple(study):
    data = jsonl(observation(1), observation(2, sources=1), observation(3, failed=True))

    batch = observations_import(study=study, data=data, file_name="obs.jsonl")

    assert batch.status == ImportStatus.IMPORTED
    assert (batch.observations_created, batch.tuples_created, batch.error_count) == (3, 3, 0)
    assert study.tuples.count() == 3
    assert study.observations.count() == 3
    tuple_ = study.tuples.select_related("source", "answer", "query").order_by("id").first()
    assert tuple_.source.text.startswith("Café Müller review 1.0")
    assert tuple_.inclusion_probability == 0.5
    assert tuple_.query.target_family == "acme-routers"


def test_importing_the_same_file_twice_changes_nothing(study):
    data = jsonl(observation(1), observation(2))
    observations_import(study=study, data=data, file_name="a.jsonl")
    before = archive_counts()

    again = observations_import(study=study, data=data, file_name="a.jsonl")

    assert again.status == ImportStatus.UNCHANGED
    assert (again.observations_created, again.tuples_created, again.tuples_existing) == (0, 0, 4)
    assert archive_counts() == before


def test_the_same_observation_in_two_studies_shares_snapshots(study, codebooks):
    from audit.archive.models import Study

    other = Study.objects.create(slug="other", title="Other", codebook=study.codebook)
    data = jsonl(observation(1))
    observations_import(study=study, data=data, file_name="a.jsonl")
    observations_import(study=other, data=data, file_name="a.jsonl")

    assert other.tuples.count() == 2
    assert SourceSnapshot.objects.count() == 2
    assert AnswerSnapshot.objects.count() == 1


def test_repeated_failed_attempts_at_different_times_are_distinct(study):
    first = observation(1, failed=True)
    second = observation(1, failed=True)
    second["answer"]["collected_at"] = "2026-05-02T11:00:00Z"

    batch = observations_import(study=study, data=jsonl(first, second), file_name="f.jsonl")

    assert batch.status == ImportStatus.IMPORTED
    assert study.observations.count() == 2


def bad_line_cases():
    good = observation(1)
    wrong_digest = json.loads(json.dumps(good))
    wrong_digest["sources"][0]["digest"] = "0" * 64
    missing_digest = json.loads(json.dumps(good))
    del missing_digest["answer"]["digest"]
    wrong_tuple = json.loads(json.dumps(good))
    wrong_tuple["sources"][1]["tuple_digest"] = "f" * 64
    huge = reseal(observation(3))
    huge["sources"][0]["text"] = "x" * (4 * 1024 * 1024 + 10)
    huge = reseal(huge)
    return {
        "malformed JSON": ('{"query": {"id": "q-1",', codes.MALFORMED_JSON),
        "not an object": ("[1, 2, 3]", codes.NOT_AN_OBJECT),
        "wrong digest": (wrong_digest, codes.SOURCE_DIGEST_MISMATCH),
        "missing digest": (missing_digest, codes.MISSING_FIELD),
        "wrong tuple digest": (wrong_tuple, codes.TUPLE_DIGEST_MISMATCH),
        "line too long": (huge, codes.LINE_TOO_LONG),
    }


@pytest.mark.parametrize("case", list(bad_line_cases()))
def test_one_bad_line_rejects_the_whole_file_and_names_the_line(study, case):
    bad, reason = bad_line_cases()[case]
    data = jsonl(observation(7), bad, observation(8))

    batch = observations_import(study=study, data=data, file_name="bad.jsonl")

    assert batch.status == ImportStatus.REJECTED
    assert [(e["line"], e["reason"]) for e in batch.errors] == [(3, reason)]
    assert batch.errors[0]["message"]
    assert archive_counts() == dict.fromkeys(archive_counts(), 0)


def test_a_line_over_the_limit_says_the_limit_and_its_size(study):
    bad, _ = bad_line_cases()["line too long"]
    batch = observations_import(study=study, data=jsonl(bad), file_name="big.jsonl")
    message = batch.errors[0]["message"]
    assert "4194304" in message.replace(",", "") or "4 MiB" in message


def test_invalid_utf8_names_its_line(study):
    data = jsonl(observation(1)) + b'{"query": "caf\xe9"}\n'

    batch = observations_import(study=study, data=data, file_name="latin1.jsonl")

    assert batch.status == ImportStatus.REJECTED
    assert [(e["line"], e["reason"]) for e in batch.errors] == [(3, codes.INVALID_UTF8)]


def test_every_bad_line_is_listed_not_just_the_first(study):
    data = jsonl("{oops", observation(2), "[]", "{also bad")

    batch = observations_import(study=study, data=data, file_name="bad.jsonl")

    assert [e["line"] for e in batch.errors] == [2, 4, 5]
    assert batch.error_count == 3
    assert Tuple.objects.count() == 0


def test_unknown_codebook_is_refused_on_the_header_line(study):
    header = dict(HEADER, codebook={"name": "source-risk", "version": "9.9.9"})

    batch = observations_import(
        study=study, data=jsonl(observation(1), header=header), file_name="x.jsonl"
    )

    assert [(e["line"], e["reason"]) for e in batch.errors] == [(1, codes.UNKNOWN_CODEBOOK)]


def test_a_file_for_another_codebook_is_refused(study):
    header = dict(HEADER, codebook={"name": "answer-claims", "version": "1.0.0"})

    batch = observations_import(
        study=study, data=jsonl(observation(1), header=header), file_name="x.jsonl"
    )

    assert [(e["line"], e["reason"]) for e in batch.errors] == [(1, codes.CODEBOOK_MISMATCH)]
    assert "answer-claims" in batch.errors[0]["message"]


def test_a_duplicate_tuple_inside_one_file_names_both_lines(study):
    batch = observations_import(
        study=study, data=jsonl(observation(1), observation(1)), file_name="dup.jsonl"
    )

    assert batch.status == ImportStatus.REJECTED
    assert {e["reason"] for e in batch.errors} == {codes.DUPLICATE_TUPLE}
    assert all("2" in e["message"] for e in batch.errors)
    assert batch.errors[0]["line"] == 3


@pytest.mark.parametrize("data", [b"", jsonl(), b"\n\n"])
def test_an_empty_file_is_refused(study, data):
    batch = observations_import(study=study, data=data, file_name="empty.jsonl")

    assert batch.status == ImportStatus.REJECTED
    assert batch.errors[0]["reason"] == codes.EMPTY_FILE


def test_the_command_exits_zero_only_when_everything_was_imported(study, tmp_path, capsys):
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(observation(1)))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl(observation(2), "{broken"))

    call_command("import_records", str(good), "--study", study.slug)
    assert "2 new tuple(s)" in capsys.readouterr().out

    with pytest.raises(SystemExit) as exit_info:
        call_command("import_records", str(bad), "--study", study.slug)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert f"{bad}:3: malformed_json" in err
    assert "nothing was imported" in err
    assert study.tuples.count() == 2


def test_a_failed_answer_may_leave_out_its_empty_sources(study):
    failed = observation(1, failed=True)
    del failed["sources"]

    batch = observations_import(study=study, data=jsonl(failed), file_name="f.jsonl")

    assert batch.status == ImportStatus.IMPORTED
    assert (batch.observations_created, batch.tuples_created) == (1, 0)


def test_a_frozen_study_takes_no_new_observations(study):
    from django.contrib.auth import get_user_model

    from audit.partitions.models import StudyFreeze

    StudyFreeze.objects.create(
        study=study,
        codebook_digest="0" * 64,
        pipelines=[],
        pipelines_digest="0" * 64,
        thresholds={},
        thresholds_digest="0" * 64,
        partition_digest="0" * 64,
        partition_counts={},
        frozen_by=get_user_model().objects.create_user("freezer"),
    )

    batch = observations_import(study=study, data=jsonl(observation(1)), file_name="late.jsonl")

    assert batch.status == ImportStatus.REJECTED
    assert batch.errors[0]["reason"] == codes.STUDY_FROZEN
    assert "new study version" in batch.errors[0]["message"]
    assert study.tuples.count() == 0
