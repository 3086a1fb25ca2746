"""check_record: a good record, U judgments, and one minimal bad record per reason code."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from audit.contract import check_record, codes
from tests.contract.factories import (
    SOURCE_RISK_ABSTAIN,
    codebooks,
    make_record,
    reseal,
    seal,
)

CODEBOOKS = codebooks()


def test_good_record_is_accepted_with_endpoint_priority_and_action():
    # given a fully observed positive record
    record = make_record(predicates=(1, 1, 1, 0))
    # when it is checked
    result = check_record(record, CODEBOOKS)
    # then it is accepted, R_O = 1 and the priority is the weighted sum
    assert result.ok
    assert result.reason is None
    assert result.message is None
    assert (result.endpoint, result.short_circuit, result.action) == (1, 1, "CONTEXTUALIZE")
    assert result.priority == pytest.approx(0.7 * 0.5 + 0.2 * 0.25 + 0.4 * 0.25)
    assert result.stage == "structural"
    assert result.record_digest == record["record_digest"]
    assert result.tuple_digest == record["tuple_digest"]


def test_negative_record_passes():
    result = check_record(make_record(predicates=(1, 1, 1, 1)), CODEBOOKS)
    assert (result.ok, result.endpoint, result.action) == (True, 0, "PASS")


def test_unresolved_judgment_is_accepted_and_yields_u_and_review():
    # given a record whose D is unresolved (null) and has no span
    record = make_record(predicates=(1, 1, 1, None))
    # when checked
    result = check_record(record, CODEBOOKS)
    # then it is accepted, not turned into a label
    assert result.ok
    assert result.endpoint is None
    assert result.short_circuit is None
    assert result.action == "REVIEW"
    assert result.priority is not None


def test_short_circuit_resolves_a_negative_that_complete_case_leaves_open():
    result = check_record(make_record(predicates=(0, None, None, None)), CODEBOOKS)
    assert result.ok
    assert result.endpoint is None
    assert result.short_circuit == 0
    assert result.action == "REVIEW"


def test_abstain_policy_replaces_review_only_when_configured():
    record = make_record(
        predicates=(None, 1, 1, 0),
        codebook={"name": SOURCE_RISK_ABSTAIN[0], "version": SOURCE_RISK_ABSTAIN[1]},
    )
    result = check_record(record, CODEBOOKS)
    assert result.ok
    assert result.endpoint is None
    assert result.action == "ABSTAIN"
    resolved = make_record(
        predicates=(1, 1, 1, 0),
        codebook={"name": SOURCE_RISK_ABSTAIN[0], "version": SOURCE_RISK_ABSTAIN[1]},
    )
    assert check_record(resolved, CODEBOOKS).action == "CONTEXTUALIZE"


def test_passage_support_never_changes_the_endpoint():
    for support in (0, 1, None):
        result = check_record(make_record(passage_support=support), CODEBOOKS)
        assert result.ok
        assert result.endpoint == 1


def test_unresolved_judgment_may_still_cite_spans():
    record = make_record(predicates=(1, 1, 1, None))
    record["annotation"]["spans"]["D"] = [
        {"snapshot": "answer", "start": 0, "end": 3, "quote": record["answer"]["text"][:3]}
    ]
    assert check_record(reseal(record), CODEBOOKS).ok


Mutation = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Mutation:
    def mutate(record: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = record
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


def _delete(path: str) -> Mutation:
    def mutate(record: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = record
        for key in parents:
            target = target[key]
        del target[last]

    return mutate


def _span(judgment: str, **changes: Any) -> Mutation:
    def mutate(record: dict[str, Any]) -> None:
        record["annotation"]["spans"][judgment][0].update(changes)

    return mutate


def _evidence(key: str, field: str, value: Any) -> Mutation:
    def mutate(record: dict[str, Any]) -> None:
        record["annotation"]["evidence"][key][field] = value

    return mutate


def _weights(d_q: float, d_r: float, d_p: float) -> Mutation:
    def mutate(record: dict[str, Any]) -> None:
        for key, weight in (("d_Q", d_q), ("d_R", d_r), ("d_P", d_p)):
            record["annotation"]["evidence"][key]["weight"] = weight

    return mutate


# (name, mutation, expected code, words the message must contain). Every mutated record is
# re-sealed unless the mutation is itself a digest defect, so the intended check decides.
CASES: list[tuple[str, Mutation, str, str, bool]] = [
    ("not an object", lambda r: [], codes.NOT_AN_OBJECT, "JSON object", False),
    ("missing codebook", _delete("codebook"), codes.MISSING_FIELD, "codebook", True),
    (
        "missing codebook version",
        _delete("codebook.version"),
        codes.MISSING_FIELD,
        "codebook.version",
        True,
    ),
    (
        "missing pipeline field",
        _delete("pipeline.version"),
        codes.MISSING_FIELD,
        "pipeline.version",
        True,
    ),
    (
        "missing query target family",
        _delete("query.target.family"),
        codes.MISSING_FIELD,
        "query.target.family",
        True,
    ),
    ("unknown top-level field", _set("sampeling", None), codes.UNKNOWN_FIELD, "sampeling", True),
    ("unknown answer field", _set("answer.modle", "x"), codes.UNKNOWN_FIELD, "answer.modle", True),
    (
        "wrong question type",
        _set("query.question_type", "trivia"),
        codes.INVALID_FIELD,
        "query.question_type",
        True,
    ),
    (
        "collected_at without offset",
        _set("answer.collected_at", "2026-05-02T10:00:00"),
        codes.INVALID_FIELD,
        "answer.collected_at",
        True,
    ),
    (
        "reference_time not a date",
        _set("query.reference_time", "yesterday"),
        codes.INVALID_FIELD,
        "query.reference_time",
        True,
    ),
    ("rank zero", _set("source.rank", 0), codes.INVALID_FIELD, "source.rank", True),
    (
        "complete answer with failure",
        _set("answer.failure", "HTTP 429"),
        codes.INVALID_FIELD,
        "answer.failure",
        True,
    ),
    (
        "bad citation kind",
        _set("answer.citations.0.kind", "link"),
        codes.INVALID_FIELD,
        "answer.citations[0].kind",
        True,
    ),
    (
        "login not boolean",
        _set("answer.conditions.login", "no"),
        codes.INVALID_FIELD,
        "answer.conditions.login",
        True,
    ),
    (
        "unknown source role",
        _set("annotation.source_role", "friend"),
        codes.INVALID_FIELD,
        "annotation.source_role",
        True,
    ),
    ("bad parent", _set("parents", ["abc"]), codes.INVALID_FIELD, "parents[0]", True),
    (
        "bad sampling",
        _set("sampling", {"stratum": "x", "inclusion_probability": 0}),
        codes.INVALID_FIELD,
        "sampling.inclusion_probability",
        True,
    ),
    ("wrong format", _set("claimgate", "observations"), codes.UNKNOWN_FORMAT, "record", True),
    (
        "unknown codebook",
        _set("codebook", {"name": "source-risk", "version": "9"}),
        codes.UNKNOWN_CODEBOOK,
        "source-risk 9",
        True,
    ),
    (
        "answer digest",
        _set("answer.digest", "0" * 64),
        codes.ANSWER_DIGEST_MISMATCH,
        "answer.digest",
        False,
    ),
    (
        "source digest",
        _set("source.digest", "0" * 64),
        codes.SOURCE_DIGEST_MISMATCH,
        "source.digest",
        False,
    ),
    (
        "tuple digest",
        _set("tuple_digest", "0" * 64),
        codes.TUPLE_DIGEST_MISMATCH,
        "tuple_digest",
        True,
    ),
    (
        "record digest",
        _set("annotation.rationale", "edited"),
        codes.RECORD_DIGEST_MISMATCH,
        "record_digest",
        False,
    ),
    (
        "predicate string U",
        _set("annotation.predicates.I", "U"),
        codes.PREDICATE_STRING,
        "annotation.predicates.I",
        True,
    ),
    (
        "predicate string 1",
        _set("annotation.predicates.A", "1"),
        codes.PREDICATE_STRING,
        "annotation.predicates.A",
        True,
    ),
    (
        "predicate true",
        _set("annotation.predicates.M", True),
        codes.PREDICATE_BOOLEAN,
        "annotation.predicates.M",
        True,
    ),
    (
        "predicate false",
        _set("annotation.predicates.D", False),
        codes.PREDICATE_BOOLEAN,
        "annotation.predicates.D",
        True,
    ),
    (
        "predicate 1.0",
        _set("annotation.predicates.I", 1.0),
        codes.PREDICATE_FLOAT,
        "annotation.predicates.I",
        True,
    ),
    (
        "predicate 0.0",
        _set("annotation.predicates.D", 0.0),
        codes.PREDICATE_FLOAT,
        "annotation.predicates.D",
        True,
    ),
    (
        "predicate 2",
        _set("annotation.predicates.I", 2),
        codes.PREDICATE_OUT_OF_RANGE,
        "annotation.predicates.I",
        True,
    ),
    (
        "predicate -1",
        _set("annotation.predicates.A", -1),
        codes.PREDICATE_OUT_OF_RANGE,
        "annotation.predicates.A",
        True,
    ),
    (
        "predicate missing",
        _delete("annotation.predicates.M"),
        codes.PREDICATE_MISSING,
        "annotation.predicates.M",
        True,
    ),
    (
        "predicate list",
        _set("annotation.predicates.I", [1]),
        codes.PREDICATE_TYPE,
        "annotation.predicates.I",
        True,
    ),
    (
        "unknown predicate",
        _set("annotation.predicates.X", 1),
        codes.UNKNOWN_FIELD,
        "annotation.predicates.X",
        True,
    ),
    (
        "passage support string",
        _set("annotation.passage_support", "U"),
        codes.PREDICATE_STRING,
        "annotation.passage_support",
        True,
    ),
    (
        "passage support missing",
        _delete("annotation.passage_support"),
        codes.PREDICATE_MISSING,
        "annotation.passage_support",
        True,
    ),
    (
        "span without quote",
        lambda r: r["annotation"]["spans"]["I"][0].pop("quote"),
        codes.SPAN_MALFORMED,
        "annotation.spans.I[0]",
        True,
    ),
    (
        "span snapshot unknown",
        _span("I", snapshot="page"),
        codes.SPAN_MALFORMED,
        "annotation.spans.I[0].snapshot",
        True,
    ),
    (
        "span start float",
        _span("A", start=0.0),
        codes.SPAN_MALFORMED,
        "annotation.spans.A[0]",
        True,
    ),
    (
        "spans not a list",
        _set("annotation.spans.A", {"start": 0}),
        codes.SPAN_MALFORMED,
        "annotation.spans.A",
        True,
    ),
    (
        "span for no judgment",
        _set("annotation.spans.Z", []),
        codes.SPAN_MALFORMED,
        "annotation.spans.Z",
        True,
    ),
    (
        "span past the end",
        _span("I", end=10_000),
        codes.SPAN_OUT_OF_RANGE,
        "annotation.spans.I[0]",
        True,
    ),
    (
        "span negative start",
        _span("I", start=-1),
        codes.SPAN_OUT_OF_RANGE,
        "annotation.spans.I[0]",
        True,
    ),
    (
        "span empty",
        _span("I", end=0, start=0),
        codes.SPAN_OUT_OF_RANGE,
        "annotation.spans.I[0]",
        True,
    ),
    (
        "span quote differs",
        _span("M", quote="BEST FOR A SMALL OFFICE"),
        codes.SPAN_QUOTE_MISMATCH,
        "annotation.spans.M[0].quote",
        True,
    ),
    (
        "span missing for resolved",
        _delete("annotation.spans.D"),
        codes.SPAN_MISSING,
        "annotation.spans.D",
        True,
    ),
    (
        "span list empty for resolved",
        _set("annotation.spans.A", []),
        codes.SPAN_MISSING,
        "annotation.spans.A",
        True,
    ),
    (
        "dimension renamed",
        lambda r: r["annotation"]["evidence"].update(d_X=r["annotation"]["evidence"].pop("d_R")),
        codes.DIMENSIONS_MISMATCH,
        "d_R",
        True,
    ),
    (
        "dimension missing",
        _delete("annotation.evidence.d_P"),
        codes.DIMENSIONS_MISMATCH,
        "d_P",
        True,
    ),
    (
        "dimension value above 1",
        _evidence("d_Q", "value", 1.5),
        codes.DIMENSION_VALUE_OUT_OF_RANGE,
        "annotation.evidence.d_Q.value",
        True,
    ),
    (
        "dimension value negative",
        _evidence("d_R", "value", -0.1),
        codes.DIMENSION_VALUE_OUT_OF_RANGE,
        "annotation.evidence.d_R.value",
        True,
    ),
    (
        "dimension value string",
        _evidence("d_R", "value", "0.1"),
        codes.INVALID_FIELD,
        "annotation.evidence.d_R.value",
        True,
    ),
    (
        "weights do not sum to 1",
        _evidence("d_Q", "weight", 0.75),
        codes.WEIGHTS_UNNORMALIZED,
        "sum",
        True,
    ),
    (
        "negative weight",
        _weights(1.0, 0.25, -0.25),
        codes.WEIGHTS_UNNORMALIZED,
        "annotation.evidence.d_P.weight",
        True,
    ),
    (
        "weights normalized but not the codebook's",
        _weights(0.25, 0.5, 0.25),
        codes.WEIGHTS_MISMATCH,
        "annotation.evidence.d_Q.weight",
        True,
    ),
]


@pytest.mark.parametrize(
    ("mutation", "code", "words", "resealed"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_bad_record_is_refused_with_its_reason(mutation, code, words, resealed):
    # given a valid record with one defect
    record = make_record()
    replaced = mutation(record)
    if isinstance(replaced, list):
        record = replaced
    elif resealed:
        reseal(record)
    # when it is checked
    result = check_record(record, CODEBOOKS)
    # then it is refused with that reason and a sentence naming the field
    assert not result.ok
    assert result.reason == code, result.message
    assert words in result.message
    assert result.endpoint is None
    assert result.action is None
    assert result.stage is None


def test_every_record_level_reason_code_is_exercised():
    covered = {case[2] for case in CASES}
    line_only = {
        codes.INVALID_UTF8,
        codes.MALFORMED_JSON,
        codes.LINE_TOO_LONG,
        codes.INVALID_TEXT,
        codes.TOO_DEEP,
        codes.EMPTY_FILE,
        codes.MISSING_HEADER,
        codes.CODEBOOK_MISMATCH,
        codes.DUPLICATE_TUPLE,
        codes.DUPLICATE_OBSERVATION,
        codes.TOO_MANY_LINES,
        codes.STUDY_FROZEN,
        codes.FILE_TOO_LARGE,
        codes.UNIT_DIGEST_MISMATCH,
        codes.SUMMARY_MISMATCH,
    }
    # Pairs and ranked documents: exercised by tests/contract/test_unit_kinds.py.
    unit_kinds = {
        codes.DUPLICATE_OBSERVATION_ID,
        codes.BASELINE_UNKNOWN,
        codes.PAIR_SAME_ANSWER,
        codes.PAIR_QUERY_MISMATCH,
        codes.PAIR_SETTING_MISMATCH,
        codes.PAIR_ANSWER_FAILED,
        codes.PAIR_UNPAIRED,
        codes.DOCUMENT_UNRANKED,
        codes.DOCUMENT_RANK_REPEATED,
    }
    every = {value for name, value in vars(codes).items() if name.isupper()}
    assert every - line_only - unit_kinds <= covered


def test_snapshot_digest_is_checked_before_tuple_digest():
    # given a source whose text changed under both digests (the tuple is stale too)
    record = make_record()
    record["source"]["text"] += " edited"
    reseal(record)
    # then the snapshot digest decides
    assert check_record(record, CODEBOOKS).reason == codes.SOURCE_DIGEST_MISMATCH


def test_fields_are_checked_before_digests_and_digests_before_predicates():
    record = make_record()
    record["annotation"]["predicates"]["I"] = "U"
    record["answer"]["digest"] = "0" * 64
    assert check_record(reseal(record), CODEBOOKS).reason == codes.ANSWER_DIGEST_MISMATCH
    del record["query"]["locale"]
    assert check_record(reseal(record), CODEBOOKS).reason == codes.MISSING_FIELD


def test_a_refused_record_after_stage_one_still_names_its_digest():
    record = make_record()
    record["annotation"]["predicates"]["I"] = "U"
    reseal(record)
    result = check_record(record, CODEBOOKS)
    assert result.reason == codes.PREDICATE_STRING
    assert result.record_digest == record["record_digest"]


def test_assisted_label_is_refused_when_the_codebook_forbids_it():
    from audit.contract import codebook_from_dict
    from tests.contract.factories import source_risk_codebook

    strict = codebook_from_dict(source_risk_codebook("strict-1", allow_assisted=False))
    record = make_record(
        codebook={"name": "source-risk", "version": "strict-1"}, assisted={"model": "judge-v1"}
    )
    result = check_record(record, {strict.key: strict})
    assert result.reason == codes.INVALID_FIELD
    assert "annotation.assisted" in result.message
    assert check_record(make_record(assisted={"model": "judge-v1"}), CODEBOOKS).ok


def test_revision_and_adjudication_lineage():
    parent = make_record()["record_digest"]
    assert check_record(make_record(parents=[parent]), CODEBOOKS).ok
    assert check_record(make_record(kind="adjudicated", parents=[parent]), CODEBOOKS).ok
    refused = check_record(make_record(kind="adjudicated", parents=[]), CODEBOOKS)
    assert refused.reason == codes.INVALID_FIELD
    assert "parents" in refused.message


def test_failed_answer_forms_no_tuple():
    record = make_record()
    record["answer"].update(status="failed", failure="HTTP 429", text="")
    result = check_record(seal(record), CODEBOOKS)
    assert result.reason == codes.INVALID_FIELD
    assert "failed" in result.message


def test_checker_does_not_modify_its_input():
    record = make_record(predicates=(None, 1, 0, 1))
    before = copy.deepcopy(record)
    check_record(record, CODEBOOKS)
    assert record == before


def test_an_unpaired_surrogate_anywhere_is_refused_not_a_crash():
    for path in (("query", "text"), ("annotation", "rationale"), ("pipeline", "name")):
        record = make_record()
        record[path[0]][path[1]] = "a\ud800"
        result = check_record(record, CODEBOOKS)
        assert not result.ok
        assert result.reason == codes.INVALID_FIELD, path
