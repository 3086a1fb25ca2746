"""Partition files: parsing (pure) and applying (atomic: nothing unless every line is
good), by unit digest or by tuple digest."""

from __future__ import annotations

import json

import pytest

from audit.archive.models import Tuple, Unit
from audit.partitions.files import FileLine, file_assignment, parse_partition_file
from audit.partitions.rules import (
    BAD_DIGEST,
    BAD_PARTITION,
    CONFLICTING_LINE,
    EMPTY_FILE,
    INVALID_UTF8,
    MALFORMED_LINE,
    UNKNOWN_DIGEST,
)
from audit.partitions.services import partition_file_apply
from tests.annotation.conftest import make_study

A, B, C = "a" * 64, "b" * 64, "c" * 64


def test_a_csv_file_with_a_header_and_blank_lines():
    data = f"digest,partition\n{A},test\n\n{B}, calibration \n".encode()

    lines, problems = parse_partition_file(data, file_name="split.csv")

    assert problems == []
    assert lines == [FileLine(2, A, "test"), FileLine(4, B, "calibration")]


def test_a_jsonl_file_is_recognised_by_its_content():
    data = "\n".join(
        json.dumps({"digest": d, "partition": p, "note": "ignored"})
        for d, p in ((A, "test"), (B, "calibration"))
    ).encode()

    lines, problems = parse_partition_file(data, file_name="upload")

    assert problems == []
    assert [(line.line, line.partition) for line in lines] == [(1, "test"), (2, "calibration")]


def test_every_bad_line_is_reported_with_its_number():
    data = "\n".join(
        [
            f"{A},test",
            f"{B},holdout",
            "not-a-digest,test",
            f"{C},test,extra",
            f"{A.upper()},test",
        ]
    ).encode()

    lines, problems = parse_partition_file(data, file_name="x.csv")

    assert [(p.line, p.reason) for p in problems] == [
        (2, BAD_PARTITION),
        (3, BAD_DIGEST),
        (4, MALFORMED_LINE),
        (5, BAD_DIGEST),
    ]
    assert "'holdout' is not a partition" in problems[0].message
    assert [line.line for line in lines] == [1]


def test_bad_jsonl_lines():
    data = b'{"digest": 1, "partition": "test"}\n[1]\n{oops\n{"digest": "' + A.encode() + b'"}\n'

    _, problems = parse_partition_file(data, file_name="x.jsonl")

    assert [(p.line, p.reason) for p in problems] == [
        (1, MALFORMED_LINE),
        (2, MALFORMED_LINE),
        (3, MALFORMED_LINE),
        (4, MALFORMED_LINE),
    ]


@pytest.mark.parametrize(
    ("data", "code"),
    [(b"", EMPTY_FILE), (b"digest,partition\n\n", EMPTY_FILE), (b"\xff\xfe", INVALID_UTF8)],
)
def test_empty_and_undecodable_files(data, code):
    lines, problems = parse_partition_file(data, file_name="x.csv")
    assert lines == []
    assert [p.reason for p in problems] == [code]


def test_unknown_digests_and_conflicting_lines():
    lines = [
        FileLine(1, A, "test"),
        FileLine(2, B, "calibration"),
        FileLine(3, C, "test"),
        FileLine(4, A, "test"),  # the same again: fine
    ]
    unit_of = {A: A, B: A}  # B is a tuple of unit A

    assignment, problems = file_assignment(lines, unit_of)

    assert [(p.line, p.reason) for p in problems] == [(2, CONFLICTING_LINE), (3, UNKNOWN_DIGEST)]
    assert "line 1 put this unit in test" in problems[0].message
    assert assignment == {A: "test"}


# --- applying a file ------------------------------------------------------------------


def csv_of(pairs) -> bytes:
    return ("digest,partition\n" + "".join(f"{d},{p}\n" for d, p in pairs)).encode()


def test_a_good_file_assigns_the_units_it_names_and_leaves_the_others(study):
    digests = list(Unit.objects.filter(study=study).order_by("id").values_list("digest", flat=True))

    outcome = partition_file_apply(
        study=study,
        data=csv_of([(digests[0], "test"), (digests[1], "calibration")]),
        file_name="split.csv",
    )

    assert outcome.applied
    assert (outcome.lines, outcome.units) == (2, 2)
    assert outcome.counts == {"calibration": 1, "test": 1, "unassigned": len(digests) - 2}
    partitions = dict(Unit.objects.filter(study=study).values_list("digest", "partition"))
    assert partitions[digests[0]] == "test"
    assert partitions[digests[1]] == "calibration"
    assert partitions[digests[2]] is None


def test_one_bad_line_and_nothing_is_applied(study):
    digests = list(Unit.objects.filter(study=study).order_by("id").values_list("digest", flat=True))
    data = csv_of([(digests[0], "test"), ("f" * 64, "test"), (digests[1], "tset")])

    outcome = partition_file_apply(study=study, data=data, file_name="split.csv")

    assert not outcome.applied
    assert [(p.line, p.reason) for p in outcome.problems] == [(4, BAD_PARTITION)]
    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()
    # With the partition fixed, the unknown digest is what remains.
    data = csv_of([(digests[0], "test"), ("f" * 64, "test")])
    outcome = partition_file_apply(study=study, data=data, file_name="split.csv")
    assert [(p.line, p.reason) for p in outcome.problems] == [(3, UNKNOWN_DIGEST)]
    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()


def test_a_tuple_digest_names_its_answer_unit_in_an_answer_claims_study(db):
    study = make_study("part-claims", "answer-claims-1.0.0", "answer-claims.jsonl")
    unit = Unit.objects.filter(study=study).order_by("id").first()
    tuples = list(
        Tuple.objects.filter(observation=unit.observation).values_list("digest", flat=True)
    )
    assert len(tuples) >= 2

    outcome = partition_file_apply(
        study=study,
        data=csv_of([(tuples[0], "test"), (tuples[1], "test")]),
        file_name="by-tuple.csv",
    )
    assert outcome.applied
    assert outcome.units == 1
    unit.refresh_from_db()
    assert unit.partition == "test"

    conflicting = csv_of([(tuples[0], "test"), (tuples[1], "calibration")])
    outcome = partition_file_apply(study=study, data=conflicting, file_name="by-tuple.csv")
    assert [(p.line, p.reason) for p in outcome.problems] == [(3, CONFLICTING_LINE)]


def test_a_large_file_updates_in_a_fixed_number_of_queries(study, django_assert_max_num_queries):
    digests = list(Unit.objects.filter(study=study).values_list("digest", flat=True))
    data = csv_of((d, "test" if i % 2 else "calibration") for i, d in enumerate(digests))

    # Whatever the file's size: the lock, the units, one UPDATE per partition, the
    # partition version (its row made on the first change) and the gate's refresh mark.
    with django_assert_max_num_queries(12):
        outcome = partition_file_apply(study=study, data=data, file_name="all.csv")

    assert outcome.applied
    assert outcome.counts["unassigned"] == 0
